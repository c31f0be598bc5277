//! The problem+json shape, pinned by snapshots. Backend-independent: these
//! run on SQLite only.

use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

use crate::support::{Backend, TestApp, problem};

/// The body with its per-request id and the registry's address blanked,
/// for a stable snapshot.
async fn snapshot_body(res: reqwest::Response, status: StatusCode, slug: &str) -> Value {
    let mut body = problem(res, status, slug).await;
    body["request_id"] = json!("[request id]");
    body["type"] = json!(format!("[registry]/problems/{slug}"));
    body
}

async fn app() -> TestApp {
    TestApp::builder(Backend::Sqlite).build().await.unwrap()
}

#[actix_web::test]
async fn unknown_route() {
    let app = app().await;
    let body = snapshot_body(
        app.get("/api/v1/nowhere").await,
        StatusCode::NOT_FOUND,
        "not-found",
    )
    .await;
    insta::assert_json_snapshot!("problem_not_found", body);
}

#[actix_web::test]
async fn validation_lists_every_field() {
    let app = app().await;
    let res = app
        .post_json(
            "/api/v1/accounts",
            &json!({"username": "9lives", "password": "short"}),
        )
        .await;
    let body = snapshot_body(res, StatusCode::UNPROCESSABLE_ENTITY, "validation-failed").await;
    insta::assert_json_snapshot!("problem_validation", body);
}

#[actix_web::test]
async fn malformed_json_and_unknown_fields() {
    let app = app().await;
    let res = app
        .request(Method::POST, "/api/v1/accounts")
        .header("content-type", "application/json")
        .body("{\"username\": ")
        .send()
        .await
        .unwrap();
    let body = snapshot_body(res, StatusCode::BAD_REQUEST, "malformed-request").await;
    insta::assert_json_snapshot!("problem_malformed_json", body);

    let res = app
        .post_json(
            "/api/v1/accounts",
            &json!({"username": "a", "password": "b", "admin": true}),
        )
        .await;
    let body = problem(res, StatusCode::BAD_REQUEST, "malformed-request").await;
    assert!(
        body["detail"]
            .as_str()
            .unwrap()
            .contains("unknown field `admin`"),
        "{body}"
    );
}

#[actix_web::test]
async fn wrong_content_type() {
    let app = app().await;
    let res = app
        .request(Method::POST, "/api/v1/accounts")
        .header("content-type", "text/plain")
        .body("username=alice")
        .send()
        .await
        .unwrap();
    let body = snapshot_body(
        res,
        StatusCode::UNSUPPORTED_MEDIA_TYPE,
        "unsupported-media-type",
    )
    .await;
    insta::assert_json_snapshot!("problem_content_type", body);
}

#[actix_web::test]
async fn payload_too_large() {
    let app = app().await;
    let huge = json!({"username": "alice", "password": "p".repeat(100 * 1024)});
    let body = problem(
        app.post_json("/api/v1/accounts", &huge).await,
        StatusCode::PAYLOAD_TOO_LARGE,
        "payload-too-large",
    )
    .await;
    assert_eq!(
        body["detail"],
        "the request body is larger than 65536 bytes"
    );
}

#[actix_web::test]
async fn unauthenticated_carries_the_bearer_challenge() {
    let app = app().await;
    let res = app.get("/api/v1/tokens").await;
    assert!(
        res.headers()["www-authenticate"]
            .to_str()
            .unwrap()
            .starts_with("Bearer realm=")
    );
    let body = snapshot_body(res, StatusCode::UNAUTHORIZED, "unauthenticated").await;
    insta::assert_json_snapshot!("problem_unauthenticated", body);
}

#[actix_web::test]
async fn documented_paths_answer_other_methods_with_405_and_allow() {
    let app = app().await;
    for (method, path, allow) in [
        (Method::POST, "/api/v1/search", "GET, HEAD"),
        (
            Method::OPTIONS,
            "/api/v1/agents/a/1.0.0/download",
            "GET, HEAD",
        ),
        (Method::DELETE, "/api/v1/tokens", "GET, HEAD, POST"),
        (Method::PATCH, "/healthz", "GET, HEAD"),
    ] {
        let res = app.request(method.clone(), path).send().await.unwrap();
        assert_eq!(
            res.headers().get("allow").map(|v| v.to_str().unwrap()),
            Some(allow),
            "{method} {path}"
        );
        problem(res, StatusCode::METHOD_NOT_ALLOWED, "method-not-allowed").await;
    }
    let body = snapshot_body(
        app.request(Method::PUT, "/api/v1/search")
            .send()
            .await
            .unwrap(),
        StatusCode::METHOD_NOT_ALLOWED,
        "method-not-allowed",
    )
    .await;
    insta::assert_json_snapshot!("problem_method_not_allowed", body);
    // Undocumented paths stay 404, whatever the method.
    problem(
        app.request(Method::POST, "/api/v1/nowhere")
            .send()
            .await
            .unwrap(),
        StatusCode::NOT_FOUND,
        "not-found",
    )
    .await;
}

#[actix_web::test]
async fn catalog_pages_answer_other_methods_with_405_and_allow() {
    let app = app().await;
    for (method, path, allow) in [
        (Method::POST, "/docs", "GET, HEAD"),
        (Method::DELETE, "/login", "GET, HEAD, POST"),
        (Method::GET, "/account/tokens", "POST"),
        (Method::PUT, "/agents/anything/1.0.0", "GET, HEAD"),
        (Method::GET, "/tools/x/1.0.0/yank", "POST"),
    ] {
        let res = app.request(method.clone(), path).send().await.unwrap();
        assert_eq!(
            res.status(),
            StatusCode::METHOD_NOT_ALLOWED,
            "{method} {path}"
        );
        assert_eq!(
            res.headers().get("allow").map(|v| v.to_str().unwrap()),
            Some(allow),
            "{method} {path}"
        );
        let html = res.text().await.unwrap();
        assert!(html.contains("<html"), "{method} {path}: {html}");
    }
    // A path no page has is 404 whatever the method, not 405.
    let res = app
        .request(Method::POST, "/no/such/page")
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::NOT_FOUND);
    assert!(res.headers().get("allow").is_none());
}

#[actix_web::test]
async fn every_problem_type_is_a_page_its_documents_point_at() {
    let app = app().await;
    // A document's `type` is an address on this registry that answers.
    let body = problem(
        app.get("/api/v1/nowhere").await,
        StatusCode::NOT_FOUND,
        "not-found",
    )
    .await;
    let page = reqwest::get(body["type"].as_str().unwrap()).await.unwrap();
    assert_eq!(page.status(), StatusCode::OK);
    let html = page.text().await.unwrap();
    assert!(html.contains("<h1>Not found</h1>"), "{html}");
    assert!(html.contains("HTTP 404"), "{html}");

    let index = app.get("/problems/").await.text().await.unwrap();
    for p in agentlang_registry::error::ProblemType::all() {
        assert!(
            index.contains(&format!(
                r#"<a href="/problems/{0}"><code>{0}</code></a>"#,
                p.slug()
            )),
            "{} missing from the index",
            p.slug()
        );
        let res = app.get(&format!("/problems/{}", p.slug())).await;
        assert_eq!(res.status(), StatusCode::OK, "{}", p.slug());
        let html = res.text().await.unwrap();
        assert!(
            html.contains(&format!("HTTP {}", p.status().as_u16())),
            "{}",
            p.slug()
        );
    }
    let html = app.get("/problems/lock-yanked").await.text().await.unwrap();
    assert!(
        html.contains("<code>agentlang lock --update</code>"),
        "{html}"
    );
    assert_eq!(
        app.get("/problems/no-such-problem").await.status(),
        StatusCode::NOT_FOUND
    );
}
