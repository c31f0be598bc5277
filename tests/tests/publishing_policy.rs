//! `agentlang publishing`: a package's publishing policy from the command
//! line (docs/publishing-policy.md), against the real registry binary.

use agentlang_e2e::{publisher, simple_tool, start_registry, write_tool};

#[test]
fn owners_set_the_policy_and_anyone_reads_it() {
    let registry = start_registry();
    let alice = publisher(&registry, "alice");
    write_tool(
        &alice.path("web_fetch"),
        &simple_tool("web_fetch", "1.0.0", &[]),
    );
    alice.ok(&["publish", "web_fetch"]);

    let shown = alice.ok(&["publishing", "web_fetch"]).stdout;
    assert!(shown.contains("trusted publishing only: off"), "{shown}");
    assert!(shown.contains("staging required:        off"), "{shown}");

    let set = alice
        .ok(&[
            "--json",
            "publishing",
            "web_fetch",
            "--require-stage",
            "on",
            "--trusted-only",
            "yes",
        ])
        .json();
    assert_eq!(set["staging_required"], true, "{set}");
    assert_eq!(set["trusted_publishing_only"], true, "{set}");
    assert_eq!(set["two_factor_required"], false, "{set}");
    // A switch not given is kept.
    let set = alice
        .ok(&["--json", "publishing", "web_fetch", "--trusted-only", "off"])
        .json();
    assert_eq!(set["staging_required"], true, "{set}");
    assert_eq!(set["trusted_publishing_only"], false, "{set}");

    // Someone else reads it, but cannot change it.
    let bob = publisher(&registry, "bob");
    let read = bob.ok(&["--json", "publishing", "web_fetch"]).json();
    assert_eq!(read["staging_required"], true, "{read}");
    let refused = bob.fails(&["publishing", "web_fetch", "--require-stage", "off"]);
    assert!(refused.contains("not an owner"), "{refused}");
    let refused = alice.fails(&["publishing", "web_fetch", "--require-stage", "maybe"]);
    assert!(refused.contains("expected on or off"), "{refused}");
}
