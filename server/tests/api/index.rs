use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

use crate::{
    publish::{published, publisher, tool},
    support::{Backend, TestApp, backend_tests, problem},
};

backend_tests!(the_index_lists_versions_and_revalidates);

async fn the_index_lists_versions_and_revalidates(backend: Backend) {
    let Some(app) = TestApp::builder(backend).build().await else {
        return;
    };
    let alice = publisher(&app, "alice").await;
    let fetch = published(
        &app,
        &alice.token,
        tool(&alice.key, "web_fetch", "1.0.3", &[]),
    )
    .await;
    published(
        &app,
        &alice.token,
        tool(
            &alice.key,
            "web_search",
            "1.2.0",
            &[("web_fetch", "^1.0.0")],
        ),
    )
    .await;
    published(
        &app,
        &alice.token,
        tool(&alice.key, "web_search", "1.10.0", &[]),
    )
    .await;

    let res = app.get("/api/v1/index/tools/Web-Search").await;
    assert_eq!(res.status(), StatusCode::OK);
    let etag = res.headers()["etag"].to_str().unwrap().to_owned();
    assert!(etag.starts_with('"') && !etag.starts_with("W/"), "{etag}");
    let body: Value = res.json().await.unwrap();
    assert_eq!(body["name"], "web_search");
    assert_eq!(body["kind"], "tool");
    assert_eq!(body["versions"][0]["version"], "1.2.0");
    assert_eq!(
        body["versions"][0]["dependencies"],
        json!({"web_fetch": "^1.0.0"})
    );
    assert_eq!(body["versions"][0]["yanked"], false);
    assert_eq!(body["versions"][1]["version"], "1.10.0");
    let fetch_index: Value = app
        .get("/api/v1/index/tools/web_fetch")
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(fetch_index["versions"][0]["hash"], fetch["hash"]);

    let revalidate = |tag: String| {
        app.request(Method::GET, "/api/v1/index/tools/web_search")
            .header("if-none-match", tag)
            .send()
    };
    let res = revalidate(etag.clone()).await.unwrap();
    assert_eq!(res.status(), StatusCode::NOT_MODIFIED);
    assert_eq!(res.headers()["etag"].to_str().unwrap(), etag);

    // A yank changes the body and so the tag.
    app.request(Method::POST, "/api/v1/tools/web_search/1.2.0/yank")
        .bearer_auth(&alice.token)
        .json(&json!({}))
        .send()
        .await
        .unwrap();
    let res = revalidate(etag.clone()).await.unwrap();
    assert_eq!(res.status(), StatusCode::OK);
    assert_ne!(res.headers()["etag"].to_str().unwrap(), etag);
    let body: Value = res.json().await.unwrap();
    assert_eq!(body["versions"][0]["yanked"], true);

    problem(
        app.get("/api/v1/index/tools/nothing").await,
        StatusCode::NOT_FOUND,
        "not-found",
    )
    .await;
}
