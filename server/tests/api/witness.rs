//! Standard witnessing and receipts, checked against a witness nobody here
//! wrote: `c2sp_witness.py` implements c2sp.org/tlog-witness from the
//! specification (its own RFC 9162 consistency and inclusion proofs, its
//! own note parsing, Ed25519 from `cryptography`). The registry asks it to
//! cosign every checkpoint; the test sees the cosignatures served, the 409
//! of a witness that forgot (retried from its size) and of one that claims
//! a larger tree (refused), and a witness whose signatures do not verify
//! (dropped). Receipts (`GET /log/proof/<index>`) are verified by core's
//! `TlogProof` and by the Python verifier.

use std::{
    path::{Path, PathBuf},
    process::Stdio,
    time::Duration,
};

use agentlang_core::{
    signing::SecretKey,
    tlog::{LogKey, ProofError, TlogProof, WitnessKey, open_witnessed_checkpoint},
};
use reqwest::StatusCode;
use tokio::io::{AsyncBufReadExt, BufReader};

use crate::{
    conformance::run,
    publish::{published, publisher, tool},
    support::{Backend, TestApp, backend_tests},
};

backend_tests!(
    a_standard_witness_cosigns_every_checkpoint,
    receipts_prove_any_entry_offline,
);

const ORIGIN: &str = "registry.test/log";

/// The Python with `cryptography` that `.ci/run` installs
/// (`AGENTLANG_TEST_WITNESS_PYTHON`); `None` (the test is skipped) without
/// it, which fails under `CI=true`.
fn witness_python() -> Option<PathBuf> {
    let found = std::env::var_os("AGENTLANG_TEST_WITNESS_PYTHON").map(PathBuf::from);
    if found.is_none() {
        assert_ne!(
            std::env::var("CI").as_deref(),
            Ok("true"),
            "CI=true but AGENTLANG_TEST_WITNESS_PYTHON is not set (.ci/run installs it)"
        );
        eprintln!("skipped: set AGENTLANG_TEST_WITNESS_PYTHON to a Python with cryptography");
    }
    found
}

fn script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/api/c2sp_witness.py")
}

/// A log key known before the registry starts, so the witness can be told
/// it: (the PEM, the verifier key).
fn log_key() -> (String, String) {
    let pem = SecretKey::generate().unwrap().to_pkcs8_pem().to_string();
    let key = LogKey::new(ORIGIN, SecretKey::from_pkcs8_pem(&pem).unwrap()).unwrap();
    (pem, key.verifier_key())
}

/// A running Python witness.
struct PyWitness {
    _child: tokio::process::Child,
    vkey: String,
    url: String,
    state: PathBuf,
}

async fn start_witness(
    python: &Path,
    name: &str,
    log_vkey: &str,
    dir: &Path,
    corrupt: bool,
) -> PyWitness {
    let state = dir.join(format!("{}.json", name.replace('/', "_")));
    let mut cmd = tokio::process::Command::new(python);
    cmd.arg(script())
        .args(["serve", "--name", name, "--log-vkey", log_vkey, "--state"])
        .arg(&state)
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .stdout(Stdio::piped())
        .kill_on_drop(true);
    if corrupt {
        cmd.arg("--corrupt");
    }
    let mut child = cmd.spawn().expect("the Python witness starts");
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let (mut vkey, mut port) = (None, None);
    while vkey.is_none() || port.is_none() {
        let line = tokio::time::timeout(Duration::from_secs(20), lines.next_line())
            .await
            .expect("the witness says its key and port")
            .unwrap()
            .expect("the witness exited before saying its port");
        if let Some(v) = line.strip_prefix("VKEY ") {
            vkey = Some(v.to_owned());
        } else if let Some(p) = line.strip_prefix("PORT ") {
            port = Some(p.to_owned());
        }
    }
    let port = port.unwrap();
    eprintln!("witness {name} on port {port}");
    PyWitness {
        _child: child,
        vkey: vkey.unwrap(),
        url: format!("http://127.0.0.1:{port}"),
        state,
    }
}

/// The served checkpoint's cosignatures by `witnesses` and its size.
async fn cosigned(app: &TestApp, log_vkey: &str, witnesses: &[WitnessKey]) -> (u64, Vec<String>) {
    let note = app.get("/log/checkpoint").await.text().await.unwrap();
    let (opened, cosignatures) =
        open_witnessed_checkpoint(note.as_bytes(), log_vkey, witnesses).expect("it verifies");
    (
        opened.size,
        cosignatures.into_iter().map(|c| c.witness).collect(),
    )
}

/// Waits (at most `secs`) for a checkpoint of at least `size` entries that
/// `witness` cosigned.
async fn wait_cosigned(app: &TestApp, log_vkey: &str, witness: &WitnessKey, size: u64, secs: u64) {
    for _ in 0..secs * 10 {
        let (served, by) = cosigned(app, log_vkey, std::slice::from_ref(witness)).await;
        if served >= size && by.iter().any(|w| w == witness.name()) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!(
        "no checkpoint of {size} entries cosigned by {} within {secs} s",
        witness.name()
    );
}

/// The Python verifier's view of a receipt.
async fn python_verifies(
    python: &Path,
    log_vkey: &str,
    witnesses: &[&str],
    require: usize,
    receipt: &[u8],
) -> (bool, String) {
    let file = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(file.path(), receipt).unwrap();
    let mut cmd = tokio::process::Command::new(python);
    cmd.arg(script())
        .args(["verify-proof", "--log-vkey", log_vkey, "--require"])
        .arg(require.to_string());
    for w in witnesses {
        cmd.args(["--witness", w]);
    }
    cmd.arg(file.path()).env("PYTHONDONTWRITEBYTECODE", "1");
    run(&mut cmd, Duration::from_secs(30)).await
}

async fn a_standard_witness_cosigns_every_checkpoint(backend: Backend) {
    let Some(python) = witness_python() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let (pem, log_vkey) = log_key();
    let good = start_witness(&python, "witness.test/good", &log_vkey, dir.path(), false).await;
    let bad = start_witness(&python, "witness.test/bad", &log_vkey, dir.path(), true).await;
    let good_key = WitnessKey::parse(&good.vkey).unwrap();
    let bad_key = WitnessKey::parse(&bad.vkey).unwrap();
    let entries = vec![
        format!("{}={}", good.vkey, good.url),
        format!("{}={}/", bad.vkey, bad.url),
    ];
    let Some(app) = TestApp::builder(backend)
        .config(move |c| {
            c.log.key_pem = Some(pem);
            c.log.origin = Some(ORIGIN.to_owned());
            c.log.witnesses = entries;
        })
        .build()
        .await
    else {
        return;
    };
    let both = [good_key.clone(), bad_key.clone()];

    // The first checkpoint is cosigned by the witness asked, without anyone
    // posting anything to the registry.
    wait_cosigned(&app, &log_vkey, &good_key, 1, 20).await;
    // A publish: the witness checks the consistency proof from the size it
    // cosigned before.
    let alice = publisher(&app, "alice").await;
    let record = published(&app, &alice.token, tool(&alice.key, "calc", "1.0.0", &[])).await;
    let index = record["log"]["index"].as_u64().expect("a log index");
    wait_cosigned(&app, &log_vkey, &good_key, index + 1, 20).await;
    // The corrupting witness's cosignatures are dropped, never served.
    let (_, by) = cosigned(&app, &log_vkey, &both).await;
    assert_eq!(
        by,
        vec![good_key.name().to_owned()],
        "only the good cosignature"
    );
    let note = app.get("/log/checkpoint").await.text().await.unwrap();
    assert!(!note.contains("witness.test/bad"), "{note}");

    // A receipt carries the cosignature: core and the Python verifier both
    // hold it to the log key and the witness's key.
    let res = app.get(&format!("/log/proof/{index}")).await;
    assert_eq!(res.status(), StatusCode::OK);
    let receipt = res.bytes().await.unwrap().to_vec();
    let proof = TlogProof::parse(&receipt).unwrap();
    let (verified, entry) = proof
        .verify_extra(&log_vkey, std::slice::from_ref(&good_key), 1)
        .expect("a receipt with the witness's cosignature");
    assert_eq!(verified.cosignatures.len(), 1);
    let entry: serde_json::Value = serde_json::from_slice(entry).unwrap();
    assert_eq!(entry["name"], "calc");
    let (ok, out) = python_verifies(&python, &log_vkey, &[&good.vkey], 1, &receipt).await;
    assert!(ok, "the Python verifier refused the receipt: {out}");
    assert!(out.contains("\"cosignatures\": 1"), "{out}");

    // A witness that lost its state answers 409 with size 0; the registry
    // starts again from there.
    std::fs::remove_file(&good.state).unwrap();
    let record = published(&app, &alice.token, tool(&alice.key, "calc", "1.0.1", &[])).await;
    let index = record["log"]["index"].as_u64().unwrap();
    wait_cosigned(&app, &log_vkey, &good_key, index + 1, 20).await;
    let state: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&good.state).unwrap()).unwrap();
    assert!(
        state["size"].as_u64().unwrap() > index,
        "the witness holds the new size"
    );

    // A witness claiming a tree larger than the log's is not believed: the
    // new checkpoint stays without its cosignature.
    std::fs::write(
        &good.state,
        br#"{"size": 1000000, "root": "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA="}"#,
    )
    .unwrap();
    let record = published(&app, &alice.token, tool(&alice.key, "calc", "1.0.2", &[])).await;
    let index = record["log"]["index"].as_u64().unwrap();
    tokio::time::sleep(Duration::from_secs(4)).await;
    let (size, by) = cosigned(&app, &log_vkey, &both).await;
    assert!(size > index, "the checkpoint moved on");
    assert!(
        by.is_empty(),
        "no cosignature for a tree the witness disputes: {by:?}"
    );
    // A receipt now has no cosignature: one required is refused, saying
    // how many were valid.
    let receipt = app
        .get(&format!("/log/proof/{index}"))
        .await
        .bytes()
        .await
        .unwrap();
    let err = TlogProof::parse(&receipt)
        .unwrap()
        .verify_extra(&log_vkey, std::slice::from_ref(&good_key), 1)
        .unwrap_err();
    assert_eq!(
        err,
        ProofError::Witnesses {
            valid: 0,
            required: 1
        }
    );
}

async fn receipts_prove_any_entry_offline(backend: Backend) {
    let Some(app) = TestApp::builder(backend).build().await else {
        return;
    };
    let alice = publisher(&app, "alice").await;
    let record = published(&app, &alice.token, tool(&alice.key, "calc", "1.0.0", &[])).await;
    let index = record["log"]["index"].as_u64().unwrap();
    let log_vkey = app.get("/log/key").await.text().await.unwrap();
    let log_vkey = log_vkey.trim();
    // Wait for a checkpoint covering the publish.
    let mut res = app.get(&format!("/log/proof/{index}")).await;
    for _ in 0..100 {
        if res.status() == StatusCode::OK {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
        res = app.get(&format!("/log/proof/{index}")).await;
    }
    assert_eq!(res.status(), StatusCode::OK);
    assert_eq!(res.headers()["content-type"], "text/plain; charset=utf-8");
    assert!(
        res.headers()["cache-control"]
            .to_str()
            .unwrap()
            .contains("max-age")
    );
    let receipt = res.bytes().await.unwrap().to_vec();
    let text = String::from_utf8(receipt.clone()).unwrap();
    assert!(text.starts_with("c2sp.org/tlog-proof@v1\nextra "), "{text}");
    assert!(text.contains(&format!("\nindex {index}\n")), "{text}");
    let proof = TlogProof::parse(&receipt).unwrap();
    assert_eq!(proof.to_text(), receipt, "parse and build agree");
    let (verified, entry) = proof.verify_extra(log_vkey, &[], 0).unwrap();
    assert_eq!(verified.index, index);
    let entry: serde_json::Value = serde_json::from_slice(entry).unwrap();
    assert_eq!(
        (
            entry["op"].as_str(),
            entry["name"].as_str(),
            entry["version"].as_str()
        ),
        (Some("publish"), Some("calc"), Some("1.0.0"))
    );
    assert_eq!(entry["sha256"], record["sha256"]);

    // Entry 0 (genesis) too.
    let genesis = app.get("/log/proof/0").await.bytes().await.unwrap();
    TlogProof::parse(&genesis)
        .unwrap()
        .verify_extra(log_vkey, &[], 0)
        .unwrap();

    // An altered entry is not the one included.
    let mut altered = proof.clone();
    let mut bytes = altered.extra.take().unwrap();
    let at = bytes.len() - 3;
    bytes[at] ^= 1;
    altered.extra = Some(bytes);
    assert_eq!(
        altered.verify_extra(log_vkey, &[], 0).unwrap_err(),
        ProofError::NotIncluded { index }
    );
    // Another log's key refuses the checkpoint.
    let (_, other) = log_key();
    assert!(matches!(
        proof.verify_extra(&other, &[], 0),
        Err(ProofError::Checkpoint(_))
    ));
    // One witness required, none given.
    assert_eq!(
        proof.verify_extra(log_vkey, &[], 1).unwrap_err(),
        ProofError::Witnesses {
            valid: 0,
            required: 1
        }
    );

    // Past the tree, or not an index: 404 problem+json.
    let size = verified.checkpoint.size;
    for path in [
        format!("/log/proof/{}", size + 1000),
        "/log/proof/x".to_owned(),
        "/log/proof/01".to_owned(),
    ] {
        let res = app.get(&path).await;
        assert_eq!(res.status(), StatusCode::NOT_FOUND, "{path}");
        assert_eq!(
            res.headers()["content-type"],
            "application/problem+json",
            "{path}"
        );
    }

    // The Python verifier, written from the spec, agrees.
    if let Some(python) = witness_python() {
        let (ok, out) = python_verifies(&python, log_vkey, &[], 0, &receipt).await;
        assert!(ok, "the Python verifier refused the receipt: {out}");
        assert!(out.contains(&format!("\"index\": {index}")), "{out}");
        let (ok, out) = python_verifies(&python, log_vkey, &[], 0, &altered.to_text()).await;
        assert!(!ok, "the Python verifier took an altered entry: {out}");
    }
}
