//! Staged releases (docs/staged-releases.md), on every backend: a staged
//! version is invisible to everyone but its owners until approved, then
//! published exactly as a publish; its number is taken throughout.

use reqwest::{Method, Response, StatusCode};
use serde_json::{Value, json};

use crate::{
    publish::{publish, published, publisher, tool},
    support::{Backend, TestApp, backend_tests, problem},
};

backend_tests!(staged_versions_are_hidden_until_approved,);

async fn stage(app: &TestApp, token: &str, bytes: Vec<u8>) -> Response {
    app.request(Method::POST, "/api/v1/publish?stage=true")
        .bearer_auth(token)
        .header("content-type", "application/octet-stream")
        .body(bytes)
        .send()
        .await
        .unwrap()
}

async fn authed(app: &TestApp, method: Method, token: &str, path: &str) -> Response {
    app.request(method, path)
        .bearer_auth(token)
        .json(&json!({}))
        .send()
        .await
        .unwrap()
}

async fn staged_versions_are_hidden_until_approved(backend: Backend) {
    let Some(app) = TestApp::builder(backend).build().await else {
        return;
    };
    let alice = publisher(&app, "alice").await;
    let bob = publisher(&app, "bob").await;
    published(
        &app,
        &alice.token,
        tool(&alice.key, "web_fetch", "1.0.0", &[]),
    )
    .await;

    // Staging answers 202 with the pending record.
    let res = stage(
        &app,
        &alice.token,
        tool(&alice.key, "web_fetch", "1.1.0", &[]),
    )
    .await;
    assert_eq!(
        res.status(),
        StatusCode::ACCEPTED,
        "{}",
        res.text().await.unwrap()
    );
    let staged: Value = res.json().await.unwrap();
    assert_eq!(staged["state"], "pending", "{staged}");
    let id = staged["id"].as_str().unwrap().to_owned();

    // Nobody sees it before approval: not the record, not the download,
    // not the package's versions.
    assert_eq!(
        app.get("/api/v1/tools/web_fetch/1.1.0").await.status(),
        StatusCode::NOT_FOUND
    );
    assert_eq!(
        app.get("/api/v1/tools/web_fetch/1.1.0/download")
            .await
            .status(),
        StatusCode::NOT_FOUND
    );
    let package = app
        .get("/api/v1/tools/web_fetch")
        .await
        .text()
        .await
        .unwrap();
    assert!(!package.contains("1.1.0"), "{package}");
    // Another account neither reads nor decides it.
    let path = format!("/api/v1/staged/{id}");
    assert_eq!(
        authed(&app, Method::GET, &bob.token, &path).await.status(),
        StatusCode::NOT_FOUND
    );
    let list: Value = authed(&app, Method::GET, &bob.token, "/api/v1/staged")
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(list["staged"], json!([]), "{list}");
    // The owner lists, reads and downloads it.
    let list: Value = authed(&app, Method::GET, &alice.token, "/api/v1/staged")
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(list["staged"][0]["id"], id.as_str(), "{list}");
    let res = authed(&app, Method::GET, &alice.token, &format!("{path}/download")).await;
    assert_eq!(res.status(), StatusCode::OK);

    // The number is taken while staged.
    problem(
        publish(
            &app,
            &alice.token,
            tool(&alice.key, "web_fetch", "1.1.0", &[]),
        )
        .await,
        StatusCode::CONFLICT,
        "version-staged",
    )
    .await;
    // Staging a published number is refused.
    problem(
        stage(
            &app,
            &alice.token,
            tool(&alice.key, "web_fetch", "1.0.0", &[]),
        )
        .await,
        StatusCode::CONFLICT,
        "version-exists",
    )
    .await;

    // Approval publishes it, once.
    let res = authed(&app, Method::POST, &alice.token, &format!("{path}/approve")).await;
    assert!(res.status().is_success(), "{}", res.text().await.unwrap());
    assert_eq!(
        app.get("/api/v1/tools/web_fetch/1.1.0").await.status(),
        StatusCode::OK
    );
    assert_eq!(
        app.get("/api/v1/tools/web_fetch/1.1.0/download")
            .await
            .status(),
        StatusCode::OK
    );
    problem(
        authed(&app, Method::POST, &alice.token, &format!("{path}/approve")).await,
        StatusCode::CONFLICT,
        "staged-decided",
    )
    .await;

    // A rejected version stays unpublished and its number stays taken.
    let res = stage(
        &app,
        &alice.token,
        tool(&alice.key, "web_fetch", "1.2.0", &[]),
    )
    .await;
    assert_eq!(res.status(), StatusCode::ACCEPTED);
    let rejected: Value = res.json().await.unwrap();
    let path = format!("/api/v1/staged/{}/reject", rejected["id"].as_str().unwrap());
    let res = app
        .request(Method::POST, &path)
        .bearer_auth(&alice.token)
        .json(&json!({"reason": "wrong build"}))
        .send()
        .await
        .unwrap();
    assert!(res.status().is_success(), "{}", res.text().await.unwrap());
    assert_eq!(
        app.get("/api/v1/tools/web_fetch/1.2.0").await.status(),
        StatusCode::NOT_FOUND
    );
    problem(
        publish(
            &app,
            &alice.token,
            tool(&alice.key, "web_fetch", "1.2.0", &[]),
        )
        .await,
        StatusCode::CONFLICT,
        "version-staged",
    )
    .await;

    // staging_required refuses an unstaged publish.
    let res = app
        .request(Method::PATCH, "/api/v1/tools/web_fetch/publishing")
        .bearer_auth(&alice.token)
        .json(&json!({"staging_required": true}))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::OK);
    problem(
        publish(
            &app,
            &alice.token,
            tool(&alice.key, "web_fetch", "1.3.0", &[]),
        )
        .await,
        StatusCode::FORBIDDEN,
        "staging-required",
    )
    .await;
}
