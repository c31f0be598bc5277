//! Receipts end to end with the real binaries: `install` writes a
//! c2sp.org/tlog-proof@v1 beside every container it installs and records
//! each one's log index; `verify DIR` checks them offline with the pinned
//! log key, and names the artifact and index of a receipt that is missing,
//! altered, or another artifact's.

use std::fs;

use agentlang_core::tlog::TlogProof;
use agentlang_e2e::{User, publisher, start_registry};
use base64::Engine;
use serde_json::Value;

const PROMPT: &str = "version: 2\nrole: system\nsections:\n  - name: task\n    content: Help.\n";

/// The failed checks of a `verify --json` run.
fn failed(run: &Value) -> Vec<(String, String)> {
    run["checks"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["ok"] == false)
        .map(|c| {
            (
                c["check"].as_str().unwrap().to_owned(),
                c["detail"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

#[test]
fn install_keeps_a_receipt_per_artifact_and_verify_checks_them_offline() {
    let registry = start_registry();
    let alice = publisher(&registry, "alice");
    alice.ok(&["new", "skill", "pdf-tools"]);
    alice.ok(&["publish", "pdf-tools"]);
    let dir = alice.path("reader");
    fs::create_dir_all(&dir).unwrap();
    fs::write(
        dir.join("agent.yaml"),
        "name: reader\nversion: 1.0.0\ndescription: Reads PDFs.\n\
         skills:\n  - name: pdf-tools\n    version: ^0.1\n",
    )
    .unwrap();
    fs::write(dir.join("prompt.yaml"), PROMPT).unwrap();
    alice.ok(&["lock", "reader"]);
    alice.ok(&["publish", "reader", "--open"]);

    let bob = User::new(&registry.url);
    let done = bob
        .ok(&["--json", "install", "reader", "--dir", "reader"])
        .json();
    let installed = bob.path("reader");
    let manifest: Value =
        serde_json::from_slice(&fs::read(installed.join("agentlang-install.json")).unwrap())
            .unwrap();
    let log_key = bob_log_key(&bob);
    for artifact in [&manifest["agent"], &manifest["skills"][0]] {
        let file = artifact["file"].as_str().unwrap();
        let index = artifact["log_index"]
            .as_u64()
            .unwrap_or_else(|| panic!("{done}"));
        // The receipt verifies with the log key alone and records this
        // artifact's publish.
        let receipt = fs::read(installed.join(format!("{file}.tlog-proof"))).unwrap();
        let proof = TlogProof::parse(&receipt).unwrap();
        assert_eq!(proof.index, index);
        let (_, entry) = proof.verify_extra(&log_key, &[], 0).unwrap();
        let entry: Value = serde_json::from_slice(entry).unwrap();
        assert_eq!(entry["op"], "publish");
        assert_eq!(entry["name"], artifact["name"]);
        assert_eq!(entry["sha256"], artifact["sha256"]);
    }
    let verified = bob.ok(&["--json", "verify", "reader"]).json();
    assert_eq!(verified["valid"], true, "{verified}");
    let receipts: Vec<&Value> = verified["checks"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["check"].as_str().unwrap().starts_with("receipt of "))
        .collect();
    assert_eq!(receipts.len(), 2, "{verified}");

    // Offline: the registry is gone and verify still holds.
    drop(registry);
    bob.ok(&["verify", "reader"]);

    let agent_file = manifest["agent"]["file"].as_str().unwrap();
    let agent_index = manifest["agent"]["log_index"].as_u64().unwrap();
    let receipt_path = installed.join(format!("{agent_file}.tlog-proof"));
    let original = fs::read(&receipt_path).unwrap();

    // An altered entry: the leaf is no longer the one the log holds.
    let text = String::from_utf8(original.clone()).unwrap();
    let extra = text.lines().nth(1).unwrap().strip_prefix("extra ").unwrap();
    let entry = base64::engine::general_purpose::STANDARD
        .decode(extra)
        .unwrap();
    let forged = String::from_utf8(entry)
        .unwrap()
        .replace("\"op\":\"publish\"", "\"op\":\"publish\",\"x\":1");
    let forged = text.replace(
        extra,
        &base64::engine::general_purpose::STANDARD.encode(forged),
    );
    fs::write(&receipt_path, forged).unwrap();
    let run = bob.run(&["--json", "verify", "reader"]);
    assert_ne!(run.code, Some(0));
    let fails = failed(&run.json());
    assert_eq!(fails.len(), 1, "{fails:?}");
    assert_eq!(fails[0].0, "receipt of agent reader@1.0.0");
    assert!(
        fails[0].1.contains(&format!("log entry {agent_index}")) && fails[0].1.contains("not in"),
        "{fails:?}"
    );

    // Another artifact's receipt in its place: valid, but not this one's.
    let skill_file = manifest["skills"][0]["file"].as_str().unwrap();
    fs::copy(
        installed.join(format!("{skill_file}.tlog-proof")),
        &receipt_path,
    )
    .unwrap();
    let fails = failed(&bob.run(&["--json", "verify", "reader"]).json());
    assert_eq!(fails.len(), 1, "{fails:?}");
    assert!(
        fails[0].1.contains(&format!("log entry {agent_index}")),
        "{fails:?}"
    );

    // Missing.
    fs::remove_file(&receipt_path).unwrap();
    let err = bob.fails(&["verify", "reader"]);
    assert!(
        err.contains("receipt of agent reader@1.0.0"),
        "the failure names the artifact: {err}"
    );
    let fails = failed(&bob.run(&["--json", "verify", "reader"]).json());
    assert!(fails[0].1.contains("missing"), "{fails:?}");

    // Put back, it holds; a witness required that never cosigned does not.
    fs::write(&receipt_path, &original).unwrap();
    bob.ok(&["verify", "reader"]);
    let witness = agentlang_core::tlog::Witness::new(
        "witness.test/w1",
        agentlang_core::signing::SecretKey::generate().unwrap(),
    )
    .unwrap()
    .key()
    .vkey();
    let run = bob.run(&[
        "--json",
        "verify",
        "reader",
        "--witness",
        &witness,
        "--require-witnesses",
        "1",
    ]);
    assert_ne!(run.code, Some(0));
    let fails = failed(&run.json());
    assert!(
        fails
            .iter()
            .all(|(_, d)| d.contains("0 valid witness cosignatures of the 1 required")),
        "{fails:?}"
    );
}

/// The log key `install` pinned for bob.
fn bob_log_key(bob: &User) -> String {
    let logs = bob.config_path("logs");
    let host = fs::read_dir(&logs).unwrap().next().unwrap().unwrap().path();
    fs::read_to_string(host.join("key"))
        .unwrap()
        .trim()
        .to_owned()
}
