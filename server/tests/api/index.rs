use std::time::Duration;

use agentlang_core::Kind;
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use store::stored_answers::Answer;

use crate::{
    publish::{Publisher, published, publisher, tool},
    support::{Backend, TestApp, backend_tests, problem},
};

backend_tests!(
    the_index_lists_versions_and_revalidates,
    stored_answers_are_served_until_their_package_changes,
    a_download_flush_has_the_record_stored_again,
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

/// The `answer` stored for tool `name`, waiting for the registry's task to
/// render it (`app::stored_answers`).
async fn stored_answer(
    app: &TestApp,
    name: &str,
    answer: Answer,
) -> store::stored_answers::StoredAnswer {
    let db = &app.store().db;
    for _ in 0..200 {
        if let Some(stored) = db.stored_answer(Kind::Tool, name, answer).await.unwrap() {
            return stored;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("no {answer:?} answer was stored for {name} within 10 s");
}

/// Runs `sql` with `bind` on the app's database.
async fn execute(app: &TestApp, sql: &'static str, bind: &str) {
    match &app.store().db {
        store::Db::Sqlite { pool, .. } => sqlx::query(sql).bind(bind).execute(pool).await.map(drop),
        store::Db::Postgres(pools) => sqlx::query(sql)
            .bind(bind)
            .execute(pools.current())
            .await
            .map(drop),
    }
    .unwrap();
}

/// An app where alice published tool web_fetch 1.0.3.
async fn with_web_fetch(backend: Backend) -> Option<(TestApp, Publisher)> {
    let app = TestApp::builder(backend).build().await?;
    let alice = publisher(&app, "alice").await;
    published(
        &app,
        &alice.token,
        tool(&alice.key, "web_fetch", "1.0.3", &[]),
    )
    .await;
    Some((app, alice))
}

/// A first read of a package's index entry and record is its stored
/// answer (here replaced by a marker, to tell it from a rendering); a
/// change of the package deletes both in its transaction, so the next
/// reads show the change, and the task stores the new answers, byte for
/// byte as served.
async fn stored_answers_are_served_until_their_package_changes(backend: Backend) {
    let Some((app, alice)) = with_web_fetch(backend).await else {
        return;
    };
    let answers = [
        (Answer::Index, "/api/v1/index/tools/web_fetch"),
        (Answer::Package, "/api/v1/tools/web_fetch"),
    ];
    for (answer, _) in answers {
        let first = stored_answer(&app, "web_fetch", answer).await;
        let shown: Value = serde_json::from_str(&first.body).unwrap();
        assert_eq!(shown["versions"][0]["version"], "1.0.3", "{answer:?}");
        assert_eq!(shown["versions"][0]["yanked"], false, "{answer:?}");
    }

    let marker = r#"{"name":"web_fetch","kind":"tool","versions":[],"marker":true}"#;
    execute(
        &app,
        "UPDATE stored_answers SET body = $1, etag = '\"marker\"'
         WHERE normalized_name = 'web_fetch'",
        marker,
    )
    .await;
    for (answer, path) in answers {
        let res = app.get(&path.replace("web_fetch", "Web-Fetch")).await;
        assert_eq!(res.status(), StatusCode::OK, "{answer:?}");
        assert_eq!(res.headers()["etag"], "\"marker\"", "{answer:?}");
        assert_eq!(res.text().await.unwrap(), marker, "{answer:?}");
    }

    app.request(Method::POST, "/api/v1/tools/web_fetch/1.0.3/yank")
        .bearer_auth(&alice.token)
        .json(&json!({}))
        .send()
        .await
        .unwrap();
    for (answer, path) in answers {
        let res = app.get(path).await;
        assert_eq!(res.status(), StatusCode::OK, "{answer:?}");
        let etag = res.headers()["etag"].to_str().unwrap().to_owned();
        let served = res.text().await.unwrap();
        let shown: Value = serde_json::from_str(&served).unwrap();
        assert_eq!(shown["versions"][0]["yanked"], true, "{served}");

        let second = stored_answer(&app, "web_fetch", answer).await;
        assert_eq!((second.body, second.etag), (served, etag), "{answer:?}");
    }
}

/// A download flush deletes the package's stored record, which shows the
/// counts, in its transaction, and the task stores it again with the new
/// ones; the index entry, which shows none, stays as it was stored.
async fn a_download_flush_has_the_record_stored_again(backend: Backend) {
    let Some((app, _)) = with_web_fetch(backend).await else {
        return;
    };
    let index = stored_answer(&app, "web_fetch", Answer::Index).await;
    let before = stored_answer(&app, "web_fetch", Answer::Package).await;
    let shown: Value = serde_json::from_str(&before.body).unwrap();
    assert_eq!(shown["downloads"], 0);

    let res = app.get("/api/v1/tools/web_fetch/1.0.3/download").await;
    assert_eq!(res.status(), StatusCode::OK);
    res.bytes().await.unwrap();
    app::packages::flush_downloads(app.state()).await.unwrap();

    // The next record stored is the task's rendering after the flush.
    let after = stored_answer(&app, "web_fetch", Answer::Package).await;
    let shown: Value = serde_json::from_str(&after.body).unwrap();
    assert_eq!(shown["downloads"], 1, "{}", after.body);
    assert_eq!(shown["versions"][0]["downloads"], 1, "{}", after.body);
    assert_ne!(after.etag, before.etag);
    let res = app.get("/api/v1/tools/web_fetch").await;
    assert_eq!(res.headers()["etag"].to_str().unwrap(), after.etag);
    assert_eq!(res.text().await.unwrap(), after.body);
    assert_eq!(stored_answer(&app, "web_fetch", Answer::Index).await, index);
}
