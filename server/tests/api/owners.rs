use agentlang_core::Kind;
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

use crate::harness::{Backend, TestApp, backend_tests, problem, seed_version, spawn};

backend_tests!(
    owners_are_listed_added_and_removed,
    only_owners_with_the_scope_change_owners,
    the_last_owner_stays,
    unknown_packages_kinds_and_accounts,
);

async fn change(
    app: &TestApp,
    method: Method,
    path: &str,
    token: &str,
    users: &[&str],
) -> reqwest::Response {
    app.request(method, path)
        .bearer_auth(token)
        .json(&json!({"usernames": users}))
        .send()
        .await
        .unwrap()
}

fn usernames(body: &Value) -> Vec<&str> {
    body["owners"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["username"].as_str().unwrap())
        .collect()
}

async fn owners_are_listed_added_and_removed(backend: Backend) {
    let Some(app) = spawn(backend).await else {
        return;
    };
    let alice = app.account_with_token("alice", &["owners"]).await;
    app.create_account("bob", "password-123").await;
    seed_version(&app, Kind::Tool, "web-search", "1.0.0", "alice")
        .await
        .unwrap();

    // Any spelling of the name reaches the package.
    let body: Value = app
        .get("/api/v1/tools/Web_Search/owners")
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(usernames(&body), ["alice"]);

    let res = change(
        &app,
        Method::PUT,
        "/api/v1/tools/web-search/owners",
        &alice,
        &["bob", "BOB"],
    )
    .await;
    assert_eq!(res.status(), StatusCode::OK);
    let body: Value = res.json().await.unwrap();
    assert_eq!(usernames(&body), ["alice", "bob"]);
    let package = app
        .state
        .db
        .find_package(
            Kind::Tool,
            &agentlang_core::PackageName::new("web-search").unwrap(),
        )
        .await
        .unwrap()
        .unwrap();
    assert!(
        app.state
            .db
            .is_owner(package.id, app.account_id("bob").await)
            .await
            .unwrap()
    );

    // Adding again is not an error.
    let res = change(
        &app,
        Method::PUT,
        "/api/v1/tools/web-search/owners",
        &alice,
        &["bob"],
    )
    .await;
    assert_eq!(res.status(), StatusCode::OK);

    let res = change(
        &app,
        Method::DELETE,
        "/api/v1/tools/web-search/owners",
        &alice,
        &["bob"],
    )
    .await;
    assert_eq!(res.status(), StatusCode::OK);
    let body: Value = res.json().await.unwrap();
    assert_eq!(usernames(&body), ["alice"]);
    // The agent kind is a different namespace.
    problem(
        app.get("/api/v1/agents/web-search/owners").await,
        StatusCode::NOT_FOUND,
        "not-found",
    )
    .await;
}

async fn only_owners_with_the_scope_change_owners(backend: Backend) {
    let Some(app) = spawn(backend).await else {
        return;
    };
    let alice_publish_only = app.account_with_token("alice", &["publish"]).await;
    let mallory = app.account_with_token("mallory", &["owners"]).await;
    seed_version(&app, Kind::Agent, "helper", "1.0.0", "alice")
        .await
        .unwrap();
    let path = "/api/v1/agents/helper/owners";

    let body = problem(
        change(&app, Method::PUT, path, &alice_publish_only, &["mallory"]).await,
        StatusCode::FORBIDDEN,
        "forbidden",
    )
    .await;
    assert!(
        body["detail"].as_str().unwrap().contains("owners"),
        "{body}"
    );

    let body = problem(
        change(&app, Method::PUT, path, &mallory, &["mallory"]).await,
        StatusCode::FORBIDDEN,
        "forbidden",
    )
    .await;
    assert!(
        body["detail"].as_str().unwrap().contains("not an owner"),
        "{body}"
    );

    // A token restricted to other packages cannot touch this one.
    let res = app
        .post_json(
            "/api/v1/tokens",
            &json!({"username": "alice", "password": "password-123", "name": "narrow",
                    "scopes": ["owners"], "packages": ["other-*"]}),
        )
        .await;
    let narrow: Value = res.json().await.unwrap();
    let body = problem(
        change(
            &app,
            Method::PUT,
            path,
            narrow["token"].as_str().unwrap(),
            &["mallory"],
        )
        .await,
        StatusCode::FORBIDDEN,
        "forbidden",
    )
    .await;
    assert!(
        body["detail"]
            .as_str()
            .unwrap()
            .contains("not valid for the package")
    );

    problem(
        app.request(Method::PUT, path)
            .json(&json!({"usernames": ["x"]}))
            .send()
            .await
            .unwrap(),
        StatusCode::UNAUTHORIZED,
        "unauthenticated",
    )
    .await;
    let body: Value = app.get(path).await.json().await.unwrap();
    assert_eq!(usernames(&body), ["alice"]);
}

async fn the_last_owner_stays(backend: Backend) {
    let Some(app) = spawn(backend).await else {
        return;
    };
    let alice = app.account_with_token("alice", &["owners"]).await;
    app.create_account("bob", "password-123").await;
    seed_version(&app, Kind::Tool, "calc", "0.1.0", "alice")
        .await
        .unwrap();
    let path = "/api/v1/tools/calc/owners";

    problem(
        change(&app, Method::DELETE, path, &alice, &["alice"]).await,
        StatusCode::CONFLICT,
        "conflict",
    )
    .await;

    change(&app, Method::PUT, path, &alice, &["bob"]).await;
    // Removing both at once would leave none: refused as a whole.
    problem(
        change(&app, Method::DELETE, path, &alice, &["alice", "bob"]).await,
        StatusCode::CONFLICT,
        "conflict",
    )
    .await;
    let body: Value = app.get(path).await.json().await.unwrap();
    assert_eq!(usernames(&body), ["alice", "bob"]);

    // An owner may step down while another remains.
    let res = change(&app, Method::DELETE, path, &alice, &["alice"]).await;
    assert_eq!(res.status(), StatusCode::OK);
    let body: Value = res.json().await.unwrap();
    assert_eq!(usernames(&body), ["bob"]);
}

async fn unknown_packages_kinds_and_accounts(backend: Backend) {
    let Some(app) = spawn(backend).await else {
        return;
    };
    let alice = app.account_with_token("alice", &["owners"]).await;
    seed_version(&app, Kind::Tool, "calc", "0.1.0", "alice")
        .await
        .unwrap();

    problem(
        app.get("/api/v1/tools/nope/owners").await,
        StatusCode::NOT_FOUND,
        "not-found",
    )
    .await;
    problem(
        app.get("/api/v1/widgets/calc/owners").await,
        StatusCode::NOT_FOUND,
        "not-found",
    )
    .await;
    problem(
        app.get("/api/v1/tools/bad.name/owners").await,
        StatusCode::NOT_FOUND,
        "not-found",
    )
    .await;

    let body = problem(
        change(
            &app,
            Method::PUT,
            "/api/v1/tools/calc/owners",
            &alice,
            &["ghost", "alice", "phantom"],
        )
        .await,
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
    assert_eq!(fields, ["usernames[0]", "usernames[2]"]);

    app.create_account("carol", "password-123").await;
    problem(
        change(
            &app,
            Method::DELETE,
            "/api/v1/tools/calc/owners",
            &alice,
            &["carol"],
        )
        .await,
        StatusCode::UNPROCESSABLE_ENTITY,
        "validation-failed",
    )
    .await;
}
