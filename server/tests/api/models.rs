use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

use crate::support::{Backend, TestApp, backend_tests, problem};

backend_tests!(the_catalog_is_seeded_and_readable, only_admins_write_models);

async fn the_catalog_is_seeded_and_readable(backend: Backend) {
    let Some(app) = TestApp::builder(backend).build().await else {
        return;
    };
    let body: Value = app.get("/api/v1/models").await.json().await.unwrap();
    let models = body["models"].as_array().unwrap();
    assert!(models.len() >= 3);
    let names: Vec<&str> = models.iter().map(|m| m["name"].as_str().unwrap()).collect();
    let mut sorted = names.clone();
    sorted.sort_unstable();
    assert_eq!(names, sorted, "listed by name");

    let res = app.get("/api/v1/models/claude-sonnet-4").await;
    assert_eq!(res.status(), StatusCode::OK);
    let model: Value = res.json().await.unwrap();
    assert_eq!(model["context_window"], 200_000);
    assert_eq!(model["supports_tools"], true);

    problem(
        app.get("/api/v1/models/no-such-model").await,
        StatusCode::NOT_FOUND,
        "not-found",
    )
    .await;
}

async fn only_admins_write_models(backend: Backend) {
    let Some(app) = TestApp::builder(backend).admins(&["admin"]).build().await else {
        return;
    };
    let admin = app.account_with_token("admin", &["admin"]).await;
    // An admin's token without the `admin` scope edits nothing.
    let admin_publish = app.token("admin", &["publish"]).await;
    let user = app
        .account_with_token("user", &["publish", "yank", "keys", "owners"])
        .await;
    let spec =
        json!({"context_window": 32000, "supports_tools": false, "input_price_per_mtok": 0.5});
    let put = |token: &str, name: &str, body: &Value| {
        app.request(Method::PUT, &format!("/api/v1/models/{name}"))
            .bearer_auth(token)
            .json(body)
            .send()
    };

    problem(
        put(&user, "local-llm", &spec).await.unwrap(),
        StatusCode::FORBIDDEN,
        "missing-scope",
    )
    .await;
    problem(
        put(&admin_publish, "local-llm", &spec).await.unwrap(),
        StatusCode::FORBIDDEN,
        "missing-scope",
    )
    .await;
    // Nobody else can get a token with the `admin` scope.
    let body = problem(
        app.post_json(
            "/api/v1/tokens",
            &json!({"username": "user", "password": "password-123", "name": "x",
                    "scopes": ["admin"]}),
        )
        .await,
        StatusCode::UNPROCESSABLE_ENTITY,
        "validation-failed",
    )
    .await;
    assert!(body["detail"].as_str().unwrap().contains("admin"), "{body}");
    problem(
        app.request(Method::PUT, "/api/v1/models/local-llm")
            .json(&spec)
            .send()
            .await
            .unwrap(),
        StatusCode::UNAUTHORIZED,
        "unauthenticated",
    )
    .await;

    let res = put(&admin, "local-llm", &spec).await.unwrap();
    assert_eq!(res.status(), StatusCode::CREATED);
    let model: Value = res.json().await.unwrap();
    assert_eq!(model["context_window"], 32000);
    assert_eq!(model["input_price_per_mtok"], 0.5);
    assert_eq!(model["output_price_per_mtok"], Value::Null);

    let res = put(
        &admin,
        "local-llm",
        &json!({"context_window": 64000, "supports_tools": true}),
    )
    .await
    .unwrap();
    assert_eq!(res.status(), StatusCode::OK);
    let model: Value = app
        .get("/api/v1/models/local-llm")
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(model["context_window"], 64000);
    assert_eq!(model["supports_tools"], true);

    let body = problem(
        put(
            &admin,
            "local-llm",
            &json!({"context_window": -1, "output_price_per_mtok": -2.0}),
        )
        .await
        .unwrap(),
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
    assert_eq!(
        fields,
        ["context_window", "supports_tools", "output_price_per_mtok"]
    );

    problem(
        put(&admin, "bad%20name", &spec).await.unwrap(),
        StatusCode::UNPROCESSABLE_ENTITY,
        "validation-failed",
    )
    .await;
}
