//! `agentlang publish --stage` and `agentlang stage`: staged releases from
//! the command line (docs/staged-releases.md), against the real registry
//! binary.

use agentlang_e2e::{publisher, simple_tool, start_registry, write_tool};

#[test]
fn owners_stage_list_approve_and_reject() {
    let registry = start_registry();
    let alice = publisher(&registry, "alice");
    let dir = alice.path("web_fetch");
    write_tool(&dir, &simple_tool("web_fetch", "1.0.0", &[]));
    alice.ok(&["publish", "web_fetch"]);

    // Staged, listed with its id, then approved: published.
    write_tool(&dir, &simple_tool("web_fetch", "1.1.0", &[]));
    let staged = alice
        .ok(&["--json", "publish", "--stage", "web_fetch"])
        .json();
    assert_eq!(staged["state"], "pending", "{staged}");
    let id = staged["id"].as_str().unwrap().to_owned();
    let list = alice.ok(&["--json", "stage", "list"]).json();
    assert_eq!(list["staged"][0]["id"], id.as_str(), "{list}");
    // Another account sees nothing.
    let bob = publisher(&registry, "bob");
    let theirs = bob.ok(&["--json", "stage", "list"]).json();
    assert_eq!(theirs["staged"], serde_json::json!([]), "{theirs}");
    let approved = alice.ok(&["--json", "stage", "approve", &id]).json();
    assert_eq!(approved["version"], "1.1.0", "{approved}");
    let list = alice.ok(&["--json", "stage", "list"]).json();
    assert_eq!(list["staged"], serde_json::json!([]), "{list}");

    // Rejected: never published, and the number stays taken.
    write_tool(&dir, &simple_tool("web_fetch", "1.2.0", &[]));
    let staged = alice
        .ok(&["--json", "publish", "--stage", "web_fetch"])
        .json();
    let id = staged["id"].as_str().unwrap().to_owned();
    let rejected = alice
        .ok(&["--json", "stage", "reject", &id, "--reason", "wrong build"])
        .json();
    assert_eq!(rejected["state"], "rejected", "{rejected}");
    let refused = alice.fails(&["publish", "web_fetch"]);
    assert!(refused.contains("staged"), "{refused}");
}
