//! The transparency log of the real registry across a restart. Start-up
//! reads only the stored hashes of the tree's right edge, so everything the
//! log serves afterwards (tiles, proofs, the checkpoint) is computed from
//! hashes read from storage per request: the CLI, trusting only the log's
//! key, must still verify all of it.

use agentlang_e2e::{User, publisher, restart, simple_tool, start_registry_with_env, write_tool};

#[test]
fn after_a_restart_the_log_is_served_from_storage_and_verifies() {
    // The origin is the key's name: it must outlive the address.
    let mut registry =
        start_registry_with_env(&[("AGENTLANG_REGISTRY_TLOG_ORIGIN", "e2e.registry.test/log")]);
    let alice = publisher(&registry, "alice");
    for version in ["1.0.0", "1.1.0", "1.2.0", "1.3.0", "1.4.0"] {
        let dir = format!("calc-{version}");
        write_tool(&alice.path(&dir), &simple_tool("calc", version, &[]));
        alice.ok(&["publish", &dir]);
    }
    // genesis, alice's key, five publishes: once the sequencer has signed
    // them all (a round every 200 ms).
    let mut before = alice.ok(&["--json", "log", "verify"]).json();
    for _ in 0..50 {
        if before["size"] == 7 {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
        before = alice.ok(&["--json", "log", "verify"]).json();
    }
    assert_eq!(
        (&before["verified"], &before["size"]),
        (&true.into(), &7.into())
    );

    restart(&mut registry);
    let bob = User::new(&registry.url);
    let after = bob.ok(&["--json", "log", "verify"]).json();
    assert_eq!(after["verified"], true, "{after}");
    assert_eq!(
        (&after["size"], &after["root"]),
        (&before["size"], &before["root"])
    );
    // A pull proves the version's publish entry from hash tiles, each
    // checked against the signed root as the CLI reads it.
    bob.ok(&["pull", "calc@=1.2.0", "--kind", "tool", "-o", "calc.tool"]);
    let shown = bob.ok(&["--json", "log", "show", "--name", "calc"]);
    assert_eq!(
        shown.stdout.matches("\"publish\"").count(),
        5,
        "{}",
        shown.stdout
    );
}
