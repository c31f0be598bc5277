//! Abstract tools through the real binaries: two tools provide `storage`,
//! an agent names `- name: storage`, `agentlang lock` records the pick,
//! `validate` accepts the lock offline, and the agent publishes and
//! installs with the provider as its tool.

use std::fs;

use agentlang_e2e::{publisher, simple_tool, start_registry, write_tool};

const PROMPT: &str =
    "version: 2\nrole: system\nsections:\n  - name: task\n    content: Keep notes.\n";

#[test]
fn an_agent_requires_an_interface_and_gets_its_provider() {
    let registry = start_registry();
    let alice = publisher(&registry, "alice");
    for (name, version) in [("sqlite-store", "1.0.0"), ("pg-store", "1.0.0")] {
        let yaml = format!("{}provides: [storage]\n", simple_tool(name, version, &[]));
        write_tool(&alice.path(name), &yaml);
        alice.ok(&["publish", name]);
    }
    let dir = alice.path("keeper");
    fs::create_dir_all(&dir).unwrap();
    fs::write(
        dir.join("agent.yaml"),
        "name: keeper\nversion: 1.0.0\ndescription: Keeps notes.\n\
         tools:\n  - name: storage # Abstract storage interface\n    config:\n      tables: [notes]\n",
    )
    .unwrap();
    fs::write(dir.join("prompt.yaml"), PROMPT).unwrap();

    alice.ok(&["lock", "keeper"]);
    let lock = fs::read_to_string(dir.join("agent.lock")).unwrap();
    // The first provider by normalized name, pinned like any tool.
    assert!(
        lock.contains("interfaces:\n  storage: pg-store\n"),
        "{lock}"
    );
    assert!(lock.contains("  pg-store:\n    version: 1.0.0\n"), "{lock}");
    assert!(!lock.contains("sqlite-store"), "{lock}");

    alice.ok(&["validate", "keeper"]);
    // The runtime gets the provider, with the interface entry's config and
    // requirement.
    let run = alice.ok(&["run", "keeper", "--prompt", "hi"]);
    let doc: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(doc["tools"][0]["name"], "pg-store", "{doc}");
    assert_eq!(
        doc["tools"][0]["config"],
        serde_json::json!({"tables": ["notes"]})
    );
    assert_eq!(doc["tools"][0]["requirement"], "*");
    alice.ok(&["publish", "keeper"]);
    alice.ok(&["--json", "install", "keeper", "--dir", "consumer"]);
    assert!(alice.path("consumer").exists());
    let verified = alice.ok(&["--json", "verify", "consumer"]).json();
    assert_eq!(verified["valid"], true, "{verified}");
}
