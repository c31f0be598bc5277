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

/// `AGENTLANG_REGISTRY_LOG_FORMAT=json`: every line is a JSON object; a
/// refused request is one INFO line carrying its status and what the
/// client was told, never a WARN with a Debug dump; probes stay below
/// `info`.
#[actix_web::test]
async fn json_logs_say_each_request_once_and_leave_probes_out() {
    let app = TestApp::builder(Backend::Sqlite)
        .process()
        .env("AGENTLANG_REGISTRY_LOG_FORMAT", "json")
        .build()
        .await
        .unwrap();
    for _ in 0..3 {
        app.get("/healthz").await;
    }
    let res = app.get("/api/v1/agents/nobody-has-this").await;
    assert_eq!(res.status(), reqwest::StatusCode::NOT_FOUND);
    // The line is written when the request's span closes.
    let mut lines = Vec::new();
    for _ in 0..50 {
        lines = app
            .log()
            .lines()
            .map(|l| {
                serde_json::from_str::<serde_json::Value>(l)
                    .unwrap_or_else(|e| panic!("not a JSON line ({e}): {l}"))
            })
            .collect();
        if lines.iter().any(|l| l["span"]["http.status_code"] == 404) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let about: Vec<&serde_json::Value> = lines
        .iter()
        .filter(|l| l.to_string().contains("nobody-has-this"))
        .collect();
    assert_eq!(about.len(), 1, "{about:#?}");
    assert_eq!(about[0]["level"], "INFO");
    assert_eq!(
        about[0]["span"]["exception.message"],
        "agent nobody-has-this not found"
    );
    assert!(!about[0].to_string().contains("NotFound("), "{}", about[0]);
    assert!(
        !lines.iter().any(|l| l.to_string().contains("/healthz")),
        "probes are logged at debug"
    );

    let out = Command::new(env!("CARGO_BIN_EXE_agentlang-registry"))
        .env_clear()
        .env("AGENTLANG_REGISTRY_LOG_FORMAT", "xml")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("AGENTLANG_REGISTRY_LOG_FORMAT"));
}

/// An unreachable PostgreSQL stops the start with one line naming where
/// (never the password) and why, each once.
#[test]
fn an_unreachable_database_is_named_with_its_cause() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_agentlang-registry"))
        .env_clear()
        .current_dir(dir.path())
        .env("AGENTLANG_REGISTRY_BIND", "127.0.0.1:0")
        .env(
            "AGENTLANG_REGISTRY_DATABASE_URL",
            format!("postgres://postgres:hunter2@127.0.0.1:{port}/registry"),
        )
        .env("AGENTLANG_REGISTRY_DATABASE_TIMEOUT_SECS", "2")
        .output()
        .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    let line = stderr
        .lines()
        .find(|l| l.contains("cannot start"))
        .unwrap_or_else(|| panic!("{stderr}"));
    assert!(
        line.contains(&format!(
            "cannot connect to PostgreSQL at 127.0.0.1:{port}/registry"
        )),
        "{line}"
    );
    assert_eq!(line.matches("Connection refused").count(), 1, "{line}");
    assert!(!stderr.contains("hunter2"), "{stderr}");
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

#[actix_web::test]
async fn the_admin_command_grants_and_revokes_on_a_running_registry() {
    let app = TestApp::builder(Backend::Sqlite)
        .binary_defaults()
        .build()
        .await
        .unwrap();
    let folder = app.data_dir().parent().unwrap().to_owned();
    let admin = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_agentlang-registry"))
            .env_clear()
            .current_dir(&folder)
            .arg("admin")
            .args(args)
            .output()
            .unwrap()
    };
    let token = |scopes: &[&str]| {
        let body = serde_json::json!({
            "username": "alice", "password": "password-123",
            "name": "ops", "scopes": scopes,
        });
        app.request(reqwest::Method::POST, "/api/v1/tokens")
            .json(&body)
            .send()
    };
    let res = app
        .post_json(
            "/api/v1/accounts",
            &serde_json::json!({"username": "alice", "password": "password-123"}),
        )
        .await;
    assert_eq!(res.status(), reqwest::StatusCode::CREATED);
    // Registering made no admin.
    let res = token(&["admin"]).await.unwrap();
    assert_eq!(res.status(), reqwest::StatusCode::UNPROCESSABLE_ENTITY);

    let out = admin(&["grant", "Alice"]);
    assert!(out.status.success(), "{out:?}");
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "alice is now an admin\n"
    );
    let res = token(&["admin"]).await.unwrap();
    assert_eq!(res.status(), reqwest::StatusCode::CREATED);
    let body: serde_json::Value = res.json().await.unwrap();
    let admin_token = body["token"].as_str().unwrap().to_owned();
    let put_model = || {
        app.request(reqwest::Method::PUT, "/api/v1/models/ops-model")
            .bearer_auth(&admin_token)
            .json(&serde_json::json!({"context_window": 8192, "supports_tools": true}))
            .send()
    };
    let res = put_model().await.unwrap();
    assert!(res.status().is_success(), "{}", res.text().await.unwrap());

    // Revoked, the same token no longer passes as an admin's.
    assert!(admin(&["revoke", "alice"]).status.success());
    let res = put_model().await.unwrap();
    assert_eq!(res.status(), reqwest::StatusCode::FORBIDDEN);

    let out = admin(&["grant", "nobody"]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr).lines().count(),
        1,
        "one line: {out:?}"
    );
}

#[test]
fn operator_commands_migrate_sweep_check_and_explain_themselves() {
    let dir = tempfile::tempdir().unwrap();
    let run = |args: &[&str], env: &[(&str, &str)]| {
        let mut command = Command::new(env!("CARGO_BIN_EXE_agentlang-registry"));
        command
            .env_clear()
            .env("AGENTLANG_REGISTRY_DATA_DIR", dir.path())
            .args(args);
        for (k, v) in env {
            command.env(k, v);
        }
        command.output().unwrap()
    };
    let text = |out: &std::process::Output| String::from_utf8_lossy(&out.stdout).into_owned();

    // --help lists every variable with its default, and starts nothing.
    let out = run(&["--help"], &[]);
    assert!(out.status.success());
    let help = text(&out);
    // ...and the TOML key that sets it.
    for (name, _) in agentlang_registry::config::VARIABLES {
        let line = match agentlang_registry::config::toml_key(name) {
            Some(key) => format!("AGENTLANG_REGISTRY_{name} (TOML: {key})\n"),
            None => format!("AGENTLANG_REGISTRY_{name}\n"),
        };
        assert!(help.contains(&line), "{name}: {help}");
    }
    assert!(help.contains("[default: 127.0.0.1:8080]"), "{help}");
    assert!(help.contains("migrate") && help.contains("sweep"), "{help}");
    let out = run(&["--version"], &[]);
    assert_eq!(
        text(&out),
        format!("agentlang-registry {}\n", env!("CARGO_PKG_VERSION"))
    );
    assert!(
        !dir.path().join("registry.db").exists(),
        "help and version open nothing"
    );

    // config check: the effective values, secrets redacted.
    let secret = "0123456789abcdef0123456789abcdef-secret";
    let out = run(
        &["config", "check"],
        &[
            ("AGENTLANG_REGISTRY_JWT_SECRET", secret),
            ("AGENTLANG_REGISTRY_REGISTRATION", "closed"),
        ],
    );
    assert!(out.status.success());
    let lines = text(&out);
    assert!(
        lines.contains("AGENTLANG_REGISTRY_REGISTRATION=closed\n"),
        "{lines}"
    );
    assert!(
        lines.contains("AGENTLANG_REGISTRY_JWT_SECRET=[redacted]\n"),
        "{lines}"
    );
    assert!(!lines.contains(secret), "{lines}");
    let out = run(
        &["config", "check"],
        &[("AGENTLANG_REGISTRY_WORKERS", "zero")],
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("AGENTLANG_REGISTRY_WORKERS"),
        "{out:?}"
    );

    // migrate creates and migrates the database; sweep runs on it.
    let out = run(&["migrate"], &[]);
    assert!(out.status.success(), "{out:?}");
    assert!(dir.path().join("registry.db").is_file());
    assert!(text(&out).contains("is migrated"), "{out:?}");
    let out = run(&["sweep"], &[]);
    assert!(out.status.success(), "{out:?}");
    assert!(
        text(&out).starts_with("deleted 0 unreferenced blob(s)"),
        "{out:?}"
    );
}
