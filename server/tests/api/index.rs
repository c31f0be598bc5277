use std::time::Duration;

use agentlang_core::Kind;
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

use crate::{
    publish::{published, publisher, tool},
    support::{Backend, TestApp, backend_tests, problem},
};

backend_tests!(
    the_index_lists_versions_and_revalidates,
    a_stored_index_entry_is_served_until_its_package_changes,
);

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

/// The document stored for tool `name`, waiting for the registry's task to
/// render it (`app::index_documents`).
async fn stored_document(app: &TestApp, name: &str) -> store::index_documents::IndexDocument {
    let db = &app.store().db;
    for _ in 0..200 {
        if let Some(document) = db.index_document(Kind::Tool, name).await.unwrap() {
            return document;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("no index document was stored for {name} within 10 s");
}

/// A first read of a package's index is its stored document (here
/// replaced by a marker, to tell it from a rendering); a change of the
/// package deletes the document in its transaction, so the next read shows
/// the change, and the task stores the new entry, byte for byte as served.
async fn a_stored_index_entry_is_served_until_its_package_changes(backend: Backend) {
    let Some(app) = TestApp::builder(backend).build().await else {
        return;
    };
    let alice = publisher(&app, "alice").await;
    published(
        &app,
        &alice.token,
        tool(&alice.key, "web_fetch", "1.0.3", &[]),
    )
    .await;
    let first = stored_document(&app, "web_fetch").await;
    let entry: Value = serde_json::from_str(&first.body).unwrap();
    assert_eq!(entry["versions"][0]["version"], "1.0.3");
    assert_eq!(entry["versions"][0]["yanked"], false);

    let marker = r#"{"name":"web_fetch","kind":"tool","versions":[],"marker":true}"#;
    let replace = "UPDATE index_documents SET body = $1, etag = '\"marker\"'
                   WHERE normalized_name = 'web_fetch'";
    match &app.store().db {
        store::Db::Sqlite { pool, .. } => sqlx::query(replace)
            .bind(marker)
            .execute(pool)
            .await
            .map(drop),
        store::Db::Postgres(pools) => sqlx::query(replace)
            .bind(marker)
            .execute(pools.current())
            .await
            .map(drop),
    }
    .unwrap();
    let res = app.get("/api/v1/index/tools/Web-Fetch").await;
    assert_eq!(res.status(), StatusCode::OK);
    assert_eq!(res.headers()["etag"], "\"marker\"");
    assert_eq!(res.text().await.unwrap(), marker);

    app.request(Method::POST, "/api/v1/tools/web_fetch/1.0.3/yank")
        .bearer_auth(&alice.token)
        .json(&json!({}))
        .send()
        .await
        .unwrap();
    let res = app.get("/api/v1/index/tools/web_fetch").await;
    assert_eq!(res.status(), StatusCode::OK);
    let etag = res.headers()["etag"].to_str().unwrap().to_owned();
    let served = res.text().await.unwrap();
    let entry: Value = serde_json::from_str(&served).unwrap();
    assert_eq!(entry["versions"][0]["yanked"], true, "{served}");

    let second = stored_document(&app, "web_fetch").await;
    assert_eq!((second.body, second.etag), (served, etag));
}
