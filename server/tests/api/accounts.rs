use app::settings::RegistrationMode;
use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::support::{Backend, TestApp, backend_tests, problem};

backend_tests!(
    no_account_becomes_admin_by_registering,
    duplicate_and_look_alike_usernames_conflict,
    invalid_input_lists_every_field,
    closed_registration_refuses,
    configured_admins_are_admins_from_registration_or_start_up,
);

async fn no_account_becomes_admin_by_registering(backend: Backend) {
    let Some(app) = TestApp::builder(backend).build().await else {
        return;
    };
    let res = app.create_account("alice", "password-123").await;
    assert_eq!(res.status(), StatusCode::CREATED);
    let body: Value = res.json().await.unwrap();
    assert_eq!(body["username"], "alice");
    // Not even the first account on a fresh registry.
    assert_eq!(body["is_admin"], false);
    assert!(body["created_at"].as_str().unwrap().ends_with('Z'));
    assert!(body.get("password_hash").is_none());

    let body: Value = app
        .create_account("bob", "password-123")
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(body["is_admin"], false);

    let stored = app.account_record("alice").await.unwrap();
    assert!(
        stored.password_hash.starts_with("$argon2id$"),
        "hashed with argon2id"
    );
}

async fn duplicate_and_look_alike_usernames_conflict(backend: Backend) {
    let Some(app) = TestApp::builder(backend).build().await else {
        return;
    };
    assert_eq!(
        app.create_account("web-dev", "password-123").await.status(),
        StatusCode::CREATED
    );
    for twin in ["web-dev", "Web_Dev", "WEB-DEV"] {
        let body = problem(
            app.create_account(twin, "password-123").await,
            StatusCode::CONFLICT,
            "conflict",
        )
        .await;
        assert!(
            body["detail"].as_str().unwrap().contains("is taken"),
            "{body}"
        );
    }
}

async fn invalid_input_lists_every_field(backend: Backend) {
    let Some(app) = TestApp::builder(backend).build().await else {
        return;
    };
    let body = problem(
        app.create_account("1-bad name", "short").await,
        StatusCode::UNPROCESSABLE_ENTITY,
        "validation-failed",
    )
    .await;
    let fields: Vec<&str> = body["errors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["field"].as_str().unwrap())
        .collect();
    assert_eq!(fields, ["username", "password"]);

    let body = problem(
        app.post_json("/api/v1/accounts", &json!({})).await,
        StatusCode::UNPROCESSABLE_ENTITY,
        "validation-failed",
    )
    .await;
    assert_eq!(
        body["errors"],
        json!([
            {"field": "username", "message": "is required"},
            {"field": "password", "message": "is required"},
        ])
    );
}

async fn closed_registration_refuses(backend: Backend) {
    let Some(app) = TestApp::builder(backend)
        .registration(RegistrationMode::Closed)
        .build()
        .await
    else {
        return;
    };
    problem(
        app.create_account("alice", "password-123").await,
        StatusCode::FORBIDDEN,
        "registration-closed",
    )
    .await;
    assert!(app.account_record("alice").await.is_none());
}

async fn configured_admins_are_admins_from_registration_or_start_up(backend: Backend) {
    let Some(app) = TestApp::builder(backend)
        .admins(&["Root", "later"])
        .build()
        .await
    else {
        return;
    };
    let first: Value = app
        .create_account("alice", "password-123")
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(first["is_admin"], false);
    let root: Value = app
        .create_account("root", "password-123")
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(root["is_admin"], true);
    // An account named later is made admin when a registry starts with it
    // configured: the start-up pass, on the same database.
    app.create_account("later", "password-123").await;
    app.store()
        .db
        .set_admin(&agentlang_core::Username::parse("later").unwrap(), false)
        .await
        .unwrap();
    assert!(!app.account_record("later").await.unwrap().is_admin);
    app::accounts::apply_configured_admins(app.state())
        .await
        .unwrap();
    assert!(app.account_record("later").await.unwrap().is_admin);
    assert!(!app.account_record("alice").await.unwrap().is_admin);
}
