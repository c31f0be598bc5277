//! The real binary, started with no configuration file in an empty folder.

use std::{
    io::{BufRead, BufReader},
    os::unix::fs::PermissionsExt,
    process::{Command, Stdio},
    time::Duration,
};

#[actix_web::test]
async fn the_binary_starts_on_defaults_and_stops_on_sigterm() {
    let dir = tempfile::tempdir().unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_agentlang-registry"))
        .current_dir(dir.path())
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        // The one setting tests need: a free port instead of 8080, which
        // another process on the machine may hold.
        .env("AGENTLANG_REGISTRY_BIND", "127.0.0.1:0")
        .env("AGENTLANG_REGISTRY_WORKERS", "1")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = child.stderr.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    let address = loop {
        let line = rx
            .recv_timeout(Duration::from_secs(60))
            .expect("the registry logs its address");
        if let Some(rest) = line.split("listening on http://").nth(1) {
            break rest.split_whitespace().next().unwrap().to_owned();
        }
    };

    let res = reqwest::get(format!("http://{address}/healthz"))
        .await
        .unwrap();
    assert_eq!(res.status(), reqwest::StatusCode::OK);
    let res = reqwest::get(format!("http://{address}/readyz"))
        .await
        .unwrap();
    assert_eq!(res.status(), reqwest::StatusCode::OK);

    // Defaults: SQLite and blobs under ./data, private to the registry's
    // user (the token signing secret lives in the database, no file).
    let data = dir.path().join("data");
    assert!(data.join("registry.db").is_file());
    assert!(!data.join("jwt-secret").exists());
    let mode = |p: &std::path::Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&data.join("registry.db")), 0o600);
    assert_eq!(mode(&data), 0o700);

    // A request in flight when SIGTERM arrives still gets its answer.
    // Registration hashes a password with argon2id, which keeps it busy for
    // a while (long in a debug build).
    let in_flight = tokio::spawn(
        reqwest::Client::new()
            .post(format!("http://{address}/api/v1/accounts"))
            .json(&serde_json::json!({"username": "late", "password": "password-123"}))
            .send(),
    );
    tokio::time::sleep(Duration::from_millis(30)).await;
    let status = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let res = in_flight
        .await
        .unwrap()
        .expect("the in-flight request is answered");
    assert_eq!(res.status(), reqwest::StatusCode::CREATED);
    let exit = tokio::time::timeout(Duration::from_secs(40), async {
        loop {
            if let Some(status) = child.try_wait().unwrap() {
                break status;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await
    .expect("the registry stops after SIGTERM");
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
