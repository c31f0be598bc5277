//! MoltSpeak as a client nobody here wrote speaks it: `moltspeak_client.py`
//! (PyNaCl's libsodium `Box`, `cryptography`'s Ed25519, the `rfc8785`
//! package, `websockets`) walks the handshake, encrypted exchanges, the
//! refusals, a WebSocket stream and a consent exchange against the real
//! server. Sessions live in the registry's memory, not in a backend, so one
//! backend is enough.

use std::{path::Path, time::Duration};

use crate::{
    clowl::seed_catalog,
    conformance::run,
    support::{Backend, TestApp},
};

/// The Python with PyNaCl, cryptography, rfc8785 and websockets that
/// `.ci/run` installs (`AGENTLANG_TEST_MOLTSPEAK_PYTHON`); `None` (the test
/// is skipped) without it, which fails under `CI=true`.
fn client_python() -> Option<std::path::PathBuf> {
    let found = std::env::var_os("AGENTLANG_TEST_MOLTSPEAK_PYTHON").map(std::path::PathBuf::from);
    if found.is_none() {
        assert_ne!(
            std::env::var("CI").as_deref(),
            Ok("true"),
            "CI=true but AGENTLANG_TEST_MOLTSPEAK_PYTHON is not set (.ci/run installs it)"
        );
        eprintln!(
            "skipped: set AGENTLANG_TEST_MOLTSPEAK_PYTHON to a Python with pynacl, cryptography, rfc8785 and websockets"
        );
    }
    found
}

#[actix_web::test]
async fn an_independent_client_walks_every_exchange() {
    let Some(python) = client_python() else {
        return;
    };
    let Some(app) = TestApp::builder(Backend::Sqlite).build().await else {
        return;
    };
    seed_catalog(&app).await;
    let (ok, output) = run(
        tokio::process::Command::new(&python)
            .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/api/moltspeak_client.py"))
            .arg(app.public_url())
            .env("PYTHONDONTWRITEBYTECODE", "1"),
        Duration::from_secs(120),
    )
    .await;
    assert!(ok, "the Python client failed:\n{output}");
    assert!(output.contains("steps passed"), "{output}");
    for step in [
        "hello_ack carries the keys and a fresh 256-bit challenge",
        "a replayed verify is refused",
        "a conf query travels and is answered encrypted",
        "a reused nonce is refused",
        "a stream of three chunks is received whole over the WebSocket",
        "pii with the registry's proof is accepted",
    ] {
        assert!(
            output.contains(&format!("ok: {step}")),
            "missing {step:?}:\n{output}"
        );
    }
}
