use app::settings::RegistrationMode;
use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::support::{Backend, TestApp, backend_tests, problem};

backend_tests!(
    no_account_becomes_admin_by_registering,
    duplicate_and_look_alike_usernames_conflict,
    invalid_input_lists_every_field,
    closed_registration_refuses,
    configured_admins_bind_to_the_accounts_they_named,
    unknown_users_and_wrong_passwords_answer_alike,
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

/// `AGENTLANG_REGISTRY_ADMINS` names bind to the accounts holding them
/// when a registry first starts with them: whoever registers a name the
/// operator listed before it existed is not made an admin, then or at any
/// later start.
async fn configured_admins_bind_to_the_accounts_they_named(backend: Backend) {
    // The variable itself, not the builder's `admins` (which grants its
    // names as an operator would once they register).
    let Some(mut app) = TestApp::builder(backend)
        .process()
        // A fixed public URL: the log's origin survives a restart on
        // another port.
        .public_url("http://registry.test")
        .env("AGENTLANG_REGISTRY_ADMINS", "Alice")
        .build()
        .await
    else {
        return;
    };
    let admin_token = |app: &TestApp, username: &str| {
        let body = json!({"username": username, "password": "password-123",
                          "name": "ops", "scopes": ["admin"]});
        let request = app
            .request(reqwest::Method::POST, "/api/v1/tokens")
            .json(&body);
        async move { request.send().await.unwrap().status() }
    };
    // Someone else registers the name first (in another spelling).
    let squatter: Value = app
        .create_account("ALICE", "password-123")
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(squatter["is_admin"], false);
    app.create_account("carol", "password-123").await;
    assert_eq!(
        admin_token(&app, "ALICE").await,
        StatusCode::UNPROCESSABLE_ENTITY
    );
    // Restarted, with carol named now that her account exists: she is
    // bound and made an admin; the squatter is not, however often the
    // registry starts.
    let admins = ("AGENTLANG_REGISTRY_ADMINS", "Alice,carol".to_owned());
    app.restart(std::slice::from_ref(&admins)).await;
    assert_eq!(admin_token(&app, "carol").await, StatusCode::CREATED);
    assert_eq!(
        admin_token(&app, "alice").await,
        StatusCode::UNPROCESSABLE_ENTITY
    );
    app.restart(&[admins]).await;
    assert_eq!(
        admin_token(&app, "alice").await,
        StatusCode::UNPROCESSABLE_ENTITY
    );
    assert_eq!(admin_token(&app, "carol").await, StatusCode::CREATED);
    assert!(
        app.log().contains("no account held the name"),
        "the log says why"
    );
}

/// An unknown username and a wrong password get one answer: the same
/// status and problem (but for the request's own path and id), on every
/// path that checks a password.
async fn unknown_users_and_wrong_passwords_answer_alike(backend: Backend) {
    let Some(app) = TestApp::builder(backend).build().await else {
        return;
    };
    app.create_account("alice", "password-123").await;
    let answer = |path: &'static str, body: Value| {
        let app = &app;
        async move {
            let res = app.post_json(path, &body).await;
            let status = res.status();
            let mut problem: Value = res.json().await.unwrap();
            let problem = problem.as_object_mut().unwrap();
            problem.remove("request_id");
            (status, Value::Object(problem.clone()))
        }
    };
    let token = |username: &str| json!({"username": username, "password": "wrong-password", "name": "t", "scopes": []});
    let change = |username: &str| json!({"username": username, "password": "wrong-password", "new_password": "new-password-456"});
    for (path, wrong, unknown) in [
        ("/api/v1/tokens", token("alice"), token("nobody")),
        ("/api/v1/tokens", token("alice"), token("not a name!")),
        (
            "/api/v1/account/password",
            change("alice"),
            change("nobody"),
        ),
    ] {
        let wrong = answer(path, wrong).await;
        assert_eq!(wrong.0, StatusCode::UNAUTHORIZED, "{}", wrong.1);
        assert_eq!(
            wrong.1["type"].as_str().unwrap().rsplit('/').next(),
            Some("invalid-credentials")
        );
        assert_eq!(answer(path, unknown).await, wrong, "{path}");
    }
    // The catalog's publisher page of an account that has published
    // nothing is the page of a name nobody holds.
    let page = |path: &'static str| {
        let app = &app;
        async move {
            let res = app.get(path).await;
            (res.status(), res.text().await.unwrap())
        }
    };
    let (status, held) = page("/publishers/alice").await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert_eq!(page("/publishers/nobody").await, (status, held));
}
