//! Provenance (docs/provenance.md), on every backend: a publish carrying a
//! DSSE envelope is refused unless the envelope verifies with the
//! publisher's registered key and names the container; an accepted one is
//! stored, logged by digest, served as sent, shown as evidence and in the
//! catalog. securesystemslib (AGENTLANG_TEST_DSSE_PYTHON, which .ci/run
//! sets) verifies what is served, with no code of ours.

use std::path::PathBuf;

use agentlang_core::{
    digest::Sha256Digest,
    provenance::{SLSA_V1, STATEMENT_V1, seal},
    signing::SecretKey,
};
use reqwest::{
    Method, Response, StatusCode,
    multipart::{Form, Part},
};
use serde_json::{Value, json};

use crate::{
    publish::{published, publisher, tool},
    support::{Backend, TestApp, backend_tests, problem},
};

backend_tests!(provenance_is_verified_stored_logged_and_served,);

/// securesystemslib's Python, or `None` (a failure under CI=true).
pub fn dsse_python() -> Option<PathBuf> {
    let found = std::env::var_os("AGENTLANG_TEST_DSSE_PYTHON").map(PathBuf::from);
    if found.is_none() {
        assert_ne!(
            std::env::var("CI").as_deref(),
            Ok("true"),
            "CI=true but AGENTLANG_TEST_DSSE_PYTHON is not set (.ci/run installs it)"
        );
        eprintln!(
            "skipped the securesystemslib check: set AGENTLANG_TEST_DSSE_PYTHON to a Python with securesystemslib[crypto]==1.6.0"
        );
    }
    found
}

/// securesystemslib's verdict on `envelope`, signed by `key` and naming
/// `sha256`: the statement it verified.
pub fn dsse_verified(python: &PathBuf, envelope: &[u8], key: &[u8; 32], sha256: &str) -> Value {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("envelope.json");
    std::fs::write(&path, envelope).unwrap();
    let keyid = agentlang_core::signing::KeyId::of_raw_public_key(key);
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/api/dsse_check.py");
    let out = std::process::Command::new(python)
        .arg(script)
        .arg(&path)
        .arg(keyid.as_str())
        .arg(key.iter().map(|b| format!("{b:02x}")).collect::<String>())
        .arg(sha256)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "securesystemslib refused the envelope: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// A SLSA v1 statement of a GitHub Actions build of `sha256`, signed by
/// `key` (named by its key id).
fn envelope(key: &SecretKey, sha256: &str) -> Vec<u8> {
    let statement = json!({
        "_type": STATEMENT_V1,
        "subject": [{"name": "calc.tool", "digest": {"sha256": sha256}}],
        "predicateType": SLSA_V1,
        "predicate": {
            "buildDefinition": {
                "buildType": "https://actions.github.io/buildtypes/workflow/v1",
                "externalParameters": {"workflow": {
                    "repository": "https://github.com/acme/calc",
                    "path": ".github/workflows/release.yml",
                    "ref": "refs/tags/v1.0.0",
                }},
                "resolvedDependencies": [
                    {"uri": "git+https://github.com/acme/calc@refs/tags/v1.0.0",
                     "digest": {"gitCommit": "4f2b9c1e"}},
                ],
            },
            "runDetails": {"builder": {"id": "https://github.com/actions/runner"}},
        },
    });
    let keyid = key.public_key().key_id();
    seal(&statement, |m| key.sign(m), keyid.as_str())
}

async fn publish_with(app: &TestApp, token: &str, parts: Vec<(&str, Vec<u8>)>) -> Response {
    send_form(app, "/api/v1/publish", token, parts).await
}

async fn send_form(
    app: &TestApp,
    path: &str,
    token: &str,
    parts: Vec<(&str, Vec<u8>)>,
) -> Response {
    let mut form = Form::new();
    for (name, bytes) in parts {
        form = form.part(name.to_owned(), Part::bytes(bytes));
    }
    app.request(Method::POST, path)
        .bearer_auth(token)
        .multipart(form)
        .send()
        .await
        .unwrap()
}

async fn json(app: &TestApp, path: &str) -> Value {
    let res = app.get(path).await;
    assert_eq!(res.status(), StatusCode::OK, "{path}");
    res.json().await.unwrap()
}

async fn provenance_is_verified_stored_logged_and_served(backend: Backend) {
    let Some(app) = TestApp::builder(backend).build().await else {
        return;
    };
    let alice = publisher(&app, "alice").await;
    let bob = publisher(&app, "bob").await;
    let container = tool(&alice.key, "calc", "1.0.0", &[]);
    let sha256 = Sha256Digest::of(&container).to_hex();

    // Refused, each with the reason, and nothing published: a subject
    // that is another container, a key that is not the publisher's, and
    // what is no envelope.
    let wrong_subject = envelope(&alice.key, &"0".repeat(64));
    let bobs = envelope(&bob.key, &sha256);
    for (bad, says) in [
        (wrong_subject, "no subject names"),
        (bobs, "no signature verifies"),
        (b"not json".to_vec(), "not a DSSE envelope"),
    ] {
        let res = publish_with(
            &app,
            &alice.token,
            vec![("container", container.clone()), ("provenance", bad)],
        )
        .await;
        let body = problem(res, StatusCode::UNPROCESSABLE_ENTITY, "provenance-invalid").await;
        assert!(body["detail"].as_str().unwrap().contains(says), "{body}");
    }
    // A form is a container and at most one provenance.
    problem(
        publish_with(
            &app,
            &alice.token,
            vec![("container", container.clone()), ("readme", b"hi".to_vec())],
        )
        .await,
        StatusCode::BAD_REQUEST,
        "malformed-request",
    )
    .await;
    problem(
        publish_with(
            &app,
            &alice.token,
            vec![("provenance", envelope(&alice.key, &sha256))],
        )
        .await,
        StatusCode::BAD_REQUEST,
        "malformed-request",
    )
    .await;
    assert_eq!(
        app.get("/api/v1/tools/calc/1.0.0").await.status(),
        StatusCode::NOT_FOUND
    );

    // Accepted: published with its evidence.
    let sent = envelope(&alice.key, &sha256);
    let res = publish_with(
        &app,
        &alice.token,
        vec![
            ("container", container.clone()),
            ("provenance", sent.clone()),
        ],
    )
    .await;
    assert_eq!(
        res.status(),
        StatusCode::CREATED,
        "{}",
        res.text().await.unwrap()
    );
    let record: Value = res.json().await.unwrap();
    let with = json!({"publisher": "token", "provenance": true});
    assert_eq!(record["evidence"], with, "{record}");
    assert_eq!(
        json(&app, "/api/v1/tools/calc/1.0.0").await["evidence"],
        with
    );

    // Served exactly as sent, as JSON.
    let res = app.get("/api/v1/tools/calc/1.0.0/provenance").await;
    assert_eq!(res.status(), StatusCode::OK);
    assert!(
        res.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("application/json")
    );
    let served = res.bytes().await.unwrap().to_vec();
    assert_eq!(served, sent);

    // The publish's log entry names the envelope's digest.
    let index = record["log"]["index"].as_u64().unwrap() as usize;
    let entries = app.log_entries().await;
    assert_eq!(entries[index]["op"], "publish");
    assert_eq!(
        entries[index]["provenance"],
        Sha256Digest::of(&sent).to_hex()
    );

    // A version without provenance says so everywhere.
    published(&app, &alice.token, tool(&alice.key, "calc", "1.1.0", &[])).await;
    assert_eq!(
        json(&app, "/api/v1/tools/calc/1.1.0").await["evidence"],
        json!({"publisher": "token", "provenance": false})
    );
    assert_eq!(
        app.get("/api/v1/tools/calc/1.1.0/provenance")
            .await
            .status(),
        StatusCode::NOT_FOUND
    );
    let index = json(&app, "/api/v1/index/tools/calc").await;
    let evidence: Vec<&Value> = index["versions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| &v["evidence"])
        .collect();
    assert_eq!(
        evidence,
        [&with, &json!({"publisher": "token", "provenance": false})]
    );

    // A staged version's provenance is logged with the stage, checked
    // again at approval and published with it.
    let staged = tool(&alice.key, "calc", "1.2.0", &[]);
    let staged_sha = Sha256Digest::of(&staged).to_hex();
    let staged_envelope = envelope(&alice.key, &staged_sha);
    let res = send_form(
        &app,
        "/api/v1/publish?stage=true",
        &alice.token,
        vec![
            ("container", staged),
            ("provenance", staged_envelope.clone()),
        ],
    )
    .await;
    assert_eq!(res.status(), StatusCode::ACCEPTED);
    let id = res.json::<Value>().await.unwrap()["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let digest = Sha256Digest::of(&staged_envelope).to_hex();
    let entries = app.log_entries().await;
    let stage = entries.last().unwrap();
    assert_eq!(
        (&stage["op"], &stage["provenance"]),
        (&json!("stage"), &json!(digest))
    );
    let res = app
        .request(Method::POST, &format!("/api/v1/staged/{id}/approve"))
        .bearer_auth(&alice.token)
        .json(&json!({}))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::CREATED);
    assert_eq!(res.json::<Value>().await.unwrap()["evidence"], with);
    let approval = app.log_entries().await.pop().unwrap();
    assert_eq!(approval["provenance"], json!(digest));
    let approved = app
        .get("/api/v1/tools/calc/1.2.0/provenance")
        .await
        .bytes()
        .await
        .unwrap();
    assert_eq!(approved.to_vec(), staged_envelope);

    // The catalog says who built it.
    let page = app.get("/tools/calc/1.0.0").await.text().await.unwrap();
    assert!(
        page.contains("Built by <code>https://github.com/acme/calc</code> <code>.github/workflows/release.yml</code> at <code class=\"hash\">4f2b9c1e</code>"),
        "{page}"
    );
    let other = app.get("/tools/calc/1.1.0").await.text().await.unwrap();
    assert!(!other.contains("Built by"));

    // securesystemslib verifies what is served.
    if let Some(python) = dsse_python() {
        let statement = dsse_verified(&python, &served, &alice.key.public_key().to_raw(), &sha256);
        assert_eq!(statement["predicateType"], SLSA_V1);
    }
}
