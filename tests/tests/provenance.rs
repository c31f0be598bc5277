//! Provenance from the command line (docs/provenance.md), against the real
//! registry binary: `publish --provenance`, `agentlang provenance` checking
//! what the registry serves, and `lock --update` refusing a tool pin with
//! weaker evidence than the old one without `--accept-risk`.

use std::fs;

use agentlang_core::{
    digest::Sha256Digest,
    provenance::{SLSA_V1, STATEMENT_V1, seal},
    signing::SecretKey,
};
use agentlang_e2e::{User, publisher, simple_tool, start_registry, write_agent, write_tool};
use serde_json::json;

/// A SLSA v1 statement of `container`'s build, signed with `user`'s key.
fn envelope_for(user: &User, container: &[u8]) -> Vec<u8> {
    let pem = fs::read_to_string(user.config.path().join("signing.pem")).unwrap();
    let key = SecretKey::from_pkcs8_pem(&pem).unwrap();
    let statement = json!({
        "_type": STATEMENT_V1,
        "subject": [{"name": "fetcher.tool",
                     "digest": {"sha256": Sha256Digest::of(container).to_hex()}}],
        "predicateType": SLSA_V1,
        "predicate": {
            "buildDefinition": {
                "externalParameters": {"workflow": {
                    "repository": "https://github.com/acme/fetcher",
                    "path": ".github/workflows/release.yml",
                    "ref": "refs/tags/v1.0.0",
                }},
                "resolvedDependencies": [{"digest": {"gitCommit": "4f2b9c1e"}}],
            },
            "runDetails": {"builder": {"id": "https://github.com/actions/runner"}},
        },
    });
    seal(
        &statement,
        |m| key.sign(m),
        key.public_key().key_id().as_str(),
    )
}

#[test]
fn provenance_is_sent_checked_and_weaker_evidence_refused() {
    let registry = start_registry();
    let alice = publisher(&registry, "alice");
    let fetcher = alice.path("fetcher");
    write_tool(&fetcher, &simple_tool("fetcher", "1.0.0", &[]));
    let built = alice.ok(&["--json", "build", "fetcher"]).json();
    // The path as printed, relative to the working folder.
    let file = alice
        .path(built["path"].as_str().unwrap())
        .to_str()
        .unwrap()
        .to_owned();
    let envelope = alice.path("envelope.json");

    // A statement of another container is refused with the reason.
    fs::write(&envelope, envelope_for(&alice, b"another container")).unwrap();
    let err = alice.fails(&["publish", &file, "--provenance", envelope.to_str().unwrap()]);
    assert!(err.contains("no subject names"), "{err}");

    fs::write(&envelope, envelope_for(&alice, &fs::read(&file).unwrap())).unwrap();
    let published = alice
        .ok(&[
            "--json",
            "publish",
            &file,
            "--provenance",
            envelope.to_str().unwrap(),
        ])
        .json();
    assert_eq!(
        published["record"]["evidence"],
        json!({"publisher": "token", "provenance": true}),
        "{published}"
    );

    // Checked here, and summarised.
    let shown = alice.ok(&["--json", "provenance", "fetcher@1.0.0"]).json();
    assert_eq!(shown["verified"], true, "{shown}");
    assert_eq!(shown["signed_by"]["source"], "publisher");
    assert_eq!(
        shown["summary"]["repository"],
        "https://github.com/acme/fetcher"
    );
    assert_eq!(shown["summary"]["commit"], "4f2b9c1e");
    let human = alice.ok(&["provenance", "fetcher@1.0.0"]).stdout;
    assert!(
        human.contains("provenance verified") && human.contains("commit: 4f2b9c1e"),
        "{human}"
    );

    // An agent pinned to the version with provenance.
    let dir = alice.path("reader");
    write_agent(
        &dir,
        "name: reader\nversion: 1.0.0\ndescription: Reads pages.\ntools:\n  - name: fetcher\n    version: ^1.0.0\n",
    );
    alice.ok(&["lock", "reader"]);
    let locked = fs::read(dir.join("agent.lock")).unwrap();

    // 1.0.1 comes without provenance: the update is refused, the lock kept.
    write_tool(&fetcher, &simple_tool("fetcher", "1.0.1", &[]));
    alice.ok(&["publish", "fetcher"]);
    let err = alice.fails(&["provenance", "fetcher@1.0.1"]);
    assert!(err.contains("404"), "{err}");
    let refused = alice.run(&["lock", "reader", "--update"]);
    assert_ne!(refused.code, Some(0));
    let line = "  ~ publisher evidence fetcher@1.0.1 (Low): token, provenance -> token, no provenance  [raises risk]";
    assert!(
        refused.stderr.lines().any(|l| l == line),
        "{line:?} missing from:\n{}",
        refused.stderr
    );
    assert_eq!(fs::read(dir.join("agent.lock")).unwrap(), locked);
    let accepted = alice
        .ok(&["--json", "lock", "reader", "--update", "--accept-risk"])
        .json();
    assert_eq!(accepted["lock"]["tools"]["fetcher"]["version"], "1.0.1");
    assert!(
        accepted["trust_diff"]["changes"]
            .as_array()
            .unwrap()
            .iter()
            .any(|c| c["class"] == "evidence" && c["raises_risk"] == true),
        "{accepted}"
    );
}
