//! The real binary, started with no configuration file in an empty folder,
//! and refusing a bad setting.

use std::{os::unix::fs::PermissionsExt, process::Command, time::Duration};

use crate::support::{Backend, TestApp};

#[actix_web::test]
async fn the_binary_starts_on_defaults_and_stops_on_sigterm() {
    // Nothing but a free port instead of 8080, which another process on the
    // machine may hold (and one worker).
    let mut app = TestApp::builder(Backend::Sqlite)
        .binary_defaults()
        .build()
        .await
        .unwrap();

    let res = app.get("/healthz").await;
    assert_eq!(res.status(), reqwest::StatusCode::OK);
    let res = app.get("/readyz").await;
    assert_eq!(res.status(), reqwest::StatusCode::OK);

    // Defaults: SQLite and blobs under ./data, private to the registry's
    // user (the token signing secret lives in the database, no file).
    let data = app.data_dir();
    assert!(data.join("registry.db").is_file());
    assert!(!data.join("jwt-secret").exists());
    let mode = |p: &std::path::Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&data.join("registry.db")), 0o600);
    assert_eq!(mode(&data), 0o700);

    // A request in flight when SIGTERM arrives still gets its answer.
    // Registration hashes a password with argon2id, which keeps it busy for
    // a while (long in a debug build).
    let in_flight = tokio::spawn(
        app.request(reqwest::Method::POST, "/api/v1/accounts")
            .json(&serde_json::json!({"username": "late", "password": "password-123"}))
            .send(),
    );
    tokio::time::sleep(Duration::from_millis(30)).await;
    let exit = app
        .terminate(Duration::from_secs(40))
        .await
        .expect("the registry stops after SIGTERM");
    let res = in_flight
        .await
        .unwrap()
        .expect("the in-flight request is answered");
    assert_eq!(res.status(), reqwest::StatusCode::CREATED);
    assert!(exit.success(), "graceful stop exits 0: {exit:?}");
}

#[test]
fn a_bad_setting_exits_2_naming_the_variable() {
    let out = Command::new(env!("CARGO_BIN_EXE_agentlang-registry"))
        .env_clear()
        .env("AGENTLANG_REGISTRY_STORAGE_URL", "ftp://nope")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("AGENTLANG_REGISTRY_STORAGE_URL"),
        "{stderr}"
    );
}
