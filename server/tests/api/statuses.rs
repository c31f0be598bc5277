//! Statuses of packages and versions (docs/statuses.md), on every backend:
//! who may set which, what each shows and what each refuses.

use reqwest::{Method, Response, StatusCode};
use serde_json::{Value, json};

use crate::{
    publish::{publish, published, publisher, tool},
    support::{Backend, TestApp, backend_tests, problem},
};

backend_tests!(
    owners_deprecate_and_records_index_log_and_pages_show_it,
    bad_requests_name_their_fields,
    only_admins_quarantine_which_refuses_downloads_resolution_and_uploads,
    archived_packages_take_no_new_versions,
    the_mcp_view_shows_deprecated_and_quarantined,
);

async fn put_status(app: &TestApp, token: &str, path: &str, body: &Value) -> Response {
    app.request(Method::PUT, path)
        .bearer_auth(token)
        .json(body)
        .send()
        .await
        .unwrap()
}

async fn ok(res: Response) -> Value {
    let status = res.status();
    let body: Value = res.json().await.unwrap();
    assert_eq!(status, StatusCode::OK, "{body}");
    body
}

/// The log entry at `index`, as JSON.
async fn log_entry(app: &TestApp, index: i64) -> Value {
    let entries = app.store().db.log_entries(index, index + 1).await.unwrap();
    assert_eq!(entries.len(), 1, "entry {index}");
    serde_json::from_slice(&entries[0].1).unwrap()
}

async fn json_of(app: &TestApp, path: &str) -> Value {
    let res = app.get(path).await;
    assert_eq!(res.status(), StatusCode::OK, "{path}");
    res.json().await.unwrap()
}

async fn html_of(app: &TestApp, path: &str) -> String {
    let res = app.get(path).await;
    assert_eq!(res.status(), StatusCode::OK, "{path}");
    res.text().await.unwrap()
}

async fn owners_deprecate_and_records_index_log_and_pages_show_it(backend: Backend) {
    let Some(app) = TestApp::builder(backend).build().await else {
        return;
    };
    let alice = publisher(&app, "alice").await;
    let bob = publisher(&app, "bob").await;
    for version in ["1.0.0", "1.1.0"] {
        published(
            &app,
            &alice.token,
            tool(&alice.key, "web_fetch", version, &[]),
        )
        .await;
    }
    published(&app, &bob.token, tool(&bob.key, "http_fetch", "1.0.0", &[])).await;
    let deprecate = json!({
        "status": "deprecated",
        "reason": "unmaintained",
        "successor": "HTTP-Fetch",
    });

    // Not an owner; an owner's token without the yank scope.
    problem(
        put_status(
            &app,
            &bob.token,
            "/api/v1/tools/web_fetch/status",
            &deprecate,
        )
        .await,
        StatusCode::FORBIDDEN,
        "not-owner",
    )
    .await;
    let no_scope = app.token("alice", &["publish"]).await;
    problem(
        put_status(
            &app,
            &no_scope,
            "/api/v1/tools/web_fetch/status",
            &deprecate,
        )
        .await,
        StatusCode::FORBIDDEN,
        "missing-scope",
    )
    .await;

    let answer = ok(put_status(
        &app,
        &alice.token,
        "/api/v1/tools/web_fetch/status",
        &deprecate,
    )
    .await)
    .await;
    assert_eq!(answer["status"], "deprecated", "{answer}");
    assert_eq!(answer["reason"], "unmaintained");
    assert_eq!(answer["successor"], "http_fetch", "named as published");
    assert!(answer.get("version").is_none(), "{answer}");
    let index = answer["log"]["index"].as_i64().unwrap();
    let entry = log_entry(&app, index).await;
    assert_eq!(entry["op"], "status", "{entry}");
    assert_eq!(entry["kind"], "tool", "{entry}");
    assert_eq!(entry["name"], "web_fetch", "{entry}");
    assert_eq!(entry["status"], "deprecated", "{entry}");
    assert_eq!(entry["reason"], "unmaintained", "{entry}");
    assert_eq!(entry["successor"], "http_fetch", "{entry}");
    assert_eq!(entry["account"], "alice", "{entry}");
    assert!(entry.get("version").is_none(), "{entry}");

    // The same status again is no new entry.
    let again = ok(put_status(
        &app,
        &alice.token,
        "/api/v1/tools/web_fetch/status",
        &deprecate,
    )
    .await)
    .await;
    assert_eq!(again["log"]["index"], index);
    assert_eq!(
        app.store().db.log_entry_count().await.unwrap(),
        index + 1,
        "nothing appended"
    );

    // One version deprecated on its own.
    let version_answer = ok(put_status(
        &app,
        &alice.token,
        "/api/v1/tools/web_fetch/1.0.0/status",
        &json!({"status": "deprecated", "reason": "leaks tokens"}),
    )
    .await)
    .await;
    assert_eq!(version_answer["version"], "1.0.0");
    let version_index = version_answer["log"]["index"].as_i64().unwrap();
    assert!(version_index > index);
    assert_eq!(log_entry(&app, version_index).await["version"], "1.0.0");

    // Records.
    let package = json_of(&app, "/api/v1/tools/web_fetch").await;
    assert_eq!(package["status"]["status"], "deprecated", "{package}");
    assert_eq!(package["status"]["successor"], "http_fetch");
    assert_eq!(package["status"]["log"]["index"], index);
    let versions = package["versions"].as_array().unwrap();
    assert_eq!(versions[0]["version"], "1.1.0");
    assert!(versions[0].get("status").is_none(), "{package}");
    assert_eq!(versions[1]["status"]["reason"], "leaks tokens", "{package}");
    let record = json_of(&app, "/api/v1/tools/web_fetch/1.0.0").await;
    assert_eq!(record["status"]["status"], "deprecated", "{record}");
    assert_eq!(record["status"]["reason"], "leaks tokens");
    // The index.
    let index_doc = json_of(&app, "/api/v1/index/tools/web_fetch").await;
    assert_eq!(index_doc["status"]["status"], "deprecated", "{index_doc}");
    assert_eq!(index_doc["status"]["successor"], "http_fetch");
    let entries = index_doc["versions"].as_array().unwrap();
    assert_eq!(entries[0]["version"], "1.0.0");
    assert_eq!(
        entries[0]["status"]["reason"], "leaks tokens",
        "{index_doc}"
    );
    assert!(entries[1].get("status").is_none(), "{index_doc}");
    // Pages: the package's status on the newest version, the version's
    // own on its page.
    let html = html_of(&app, "/tools/web_fetch").await;
    assert!(html.contains("Deprecated: unmaintained."), "{html}");
    assert!(
        html.contains(r#"<a href="/tools/http_fetch">http_fetch</a> instead"#),
        "{html}"
    );
    let html = html_of(&app, "/tools/web_fetch/1.0.0").await;
    assert!(html.contains("Deprecated: leaks tokens."), "{html}");

    // Lifted: active shows as no status at all.
    let lifted = ok(put_status(
        &app,
        &alice.token,
        "/api/v1/tools/web_fetch/status",
        &json!({"status": "active"}),
    )
    .await)
    .await;
    assert_eq!(lifted["status"], "active");
    assert!(lifted["log"]["index"].as_i64().unwrap() > version_index);
    let package = json_of(&app, "/api/v1/tools/web_fetch").await;
    assert!(package.get("status").is_none(), "{package}");
    let html = html_of(&app, "/tools/web_fetch").await;
    assert!(!html.contains("Deprecated"), "{html}");
}

async fn bad_requests_name_their_fields(backend: Backend) {
    let Some(app) = TestApp::builder(backend).build().await else {
        return;
    };
    let alice = publisher(&app, "alice").await;
    published(
        &app,
        &alice.token,
        tool(&alice.key, "web_fetch", "1.0.0", &[]),
    )
    .await;
    let fields = |body: &Value| -> Vec<String> {
        body["errors"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["field"].as_str().unwrap().to_owned())
            .collect()
    };
    let path = "/api/v1/tools/web_fetch/status";
    // Every problem at once.
    let body = problem(
        put_status(
            &app,
            &alice.token,
            path,
            &json!({"status": "retired", "reason": "x".repeat(501)}),
        )
        .await,
        StatusCode::UNPROCESSABLE_ENTITY,
        "validation-failed",
    )
    .await;
    assert_eq!(fields(&body), ["status", "reason"], "{body}");
    for (request, field) in [
        (
            json!({"status": "deprecated", "successor": "no_such_tool"}),
            "successor",
        ),
        (
            json!({"status": "deprecated", "successor": "Web-Fetch"}),
            "successor",
        ),
        (
            json!({"status": "archived", "successor": "web_fetch"}),
            "successor",
        ),
        (
            json!({"status": "deprecated", "successor": "not a name!"}),
            "successor",
        ),
    ] {
        let body = problem(
            put_status(&app, &alice.token, path, &request).await,
            StatusCode::UNPROCESSABLE_ENTITY,
            "validation-failed",
        )
        .await;
        assert_eq!(fields(&body), [field], "{request} {body}");
    }
    // Archiving is a package's.
    let body = problem(
        put_status(
            &app,
            &alice.token,
            "/api/v1/tools/web_fetch/1.0.0/status",
            &json!({"status": "archived"}),
        )
        .await,
        StatusCode::UNPROCESSABLE_ENTITY,
        "validation-failed",
    )
    .await;
    assert_eq!(fields(&body), ["status"], "{body}");
    // Bounded, and JSON.
    problem(
        put_status(
            &app,
            &alice.token,
            path,
            &json!({"status": "deprecated", "reason": "x".repeat(5000)}),
        )
        .await,
        StatusCode::PAYLOAD_TOO_LARGE,
        "payload-too-large",
    )
    .await;
    problem(
        put_status(&app, &alice.token, path, &json!({"state": "deprecated"})).await,
        StatusCode::BAD_REQUEST,
        "malformed-request",
    )
    .await;
    problem(
        put_status(
            &app,
            &alice.token,
            "/api/v1/tools/web_fetch/9.9.9/status",
            &json!({"status": "deprecated"}),
        )
        .await,
        StatusCode::NOT_FOUND,
        "not-found",
    )
    .await;
    // Nothing was logged by any of them.
    let package = json_of(&app, "/api/v1/tools/web_fetch").await;
    assert!(package.get("status").is_none(), "{package}");
}

async fn resolve(app: &TestApp, tools: &Value) -> Response {
    app.request(Method::POST, "/api/v1/resolve")
        .header("content-type", "application/json")
        .header("accept", "application/json")
        .body(json!({ "tools": tools }).to_string())
        .send()
        .await
        .unwrap()
}

async fn only_admins_quarantine_which_refuses_downloads_resolution_and_uploads(backend: Backend) {
    let Some(app) = TestApp::builder(backend).admins(&["root"]).build().await else {
        return;
    };
    let alice = publisher(&app, "alice").await;
    published(
        &app,
        &alice.token,
        tool(&alice.key, "web_fetch", "1.0.0", &[]),
    )
    .await;
    let root = app.account_with_token("root", &["admin"]).await;
    let quarantine = json!({"status": "quarantined", "reason": "ships a credential stealer"});
    let version_path = "/api/v1/tools/web_fetch/1.0.0/status";

    problem(
        put_status(&app, &alice.token, version_path, &quarantine).await,
        StatusCode::FORBIDDEN,
        "admin-required",
    )
    .await;
    let answer = ok(put_status(&app, &root, version_path, &quarantine).await).await;
    assert_eq!(answer["status"], "quarantined");
    let entry = log_entry(&app, answer["log"]["index"].as_i64().unwrap()).await;
    assert_eq!(entry["status"], "quarantined", "{entry}");
    assert_eq!(entry["account"], "root", "{entry}");

    // No download, no resolution; both say so by name.
    let body = problem(
        app.get("/api/v1/tools/web_fetch/1.0.0/download").await,
        StatusCode::GONE,
        "quarantined",
    )
    .await;
    assert!(
        body["detail"].as_str().unwrap().contains("web_fetch@1.0.0"),
        "{body}"
    );
    let body = problem(
        resolve(&app, &json!({"web_fetch": "^1"})).await,
        StatusCode::GONE,
        "quarantined",
    )
    .await;
    let detail = body["detail"].as_str().unwrap();
    assert!(
        detail.contains("tool web_fetch@1.0.0 is quarantined: ships a credential stealer"),
        "{body}"
    );
    // With an older live version, resolution moves to it, as past a yank.
    published(
        &app,
        &alice.token,
        tool(&alice.key, "web_fetch", "0.9.0", &[]),
    )
    .await;
    let res = resolve(&app, &json!({"web_fetch": "*"})).await;
    assert_eq!(res.status(), StatusCode::OK);
    let lock: Value = res.json().await.unwrap();
    assert_eq!(lock["tools"]["web_fetch"]["version"], "0.9.0", "{lock}");
    // Only an admin lifts it.
    problem(
        put_status(
            &app,
            &alice.token,
            version_path,
            &json!({"status": "active"}),
        )
        .await,
        StatusCode::FORBIDDEN,
        "admin-required",
    )
    .await;

    // A quarantined package: every version, and no new ones.
    ok(put_status(&app, &root, version_path, &json!({"status": "active"})).await).await;
    assert_eq!(
        app.get("/api/v1/tools/web_fetch/1.0.0/download")
            .await
            .status(),
        StatusCode::OK
    );
    ok(put_status(&app, &root, "/api/v1/tools/web_fetch/status", &quarantine).await).await;
    problem(
        app.get("/api/v1/tools/web_fetch/1.0.0/download").await,
        StatusCode::GONE,
        "quarantined",
    )
    .await;
    let body = problem(
        resolve(&app, &json!({"web_fetch": "*"})).await,
        StatusCode::GONE,
        "quarantined",
    )
    .await;
    assert!(
        body["detail"]
            .as_str()
            .unwrap()
            .contains("tool web_fetch is quarantined"),
        "{body}"
    );
    problem(
        publish(
            &app,
            &alice.token,
            tool(&alice.key, "web_fetch", "1.0.1", &[]),
        )
        .await,
        StatusCode::GONE,
        "quarantined",
    )
    .await;
    let html = html_of(&app, "/tools/web_fetch").await;
    assert!(
        html.contains("Quarantined: ships a credential stealer."),
        "{html}"
    );

    ok(put_status(
        &app,
        &root,
        "/api/v1/tools/web_fetch/status",
        &json!({"status": "active"}),
    )
    .await)
    .await;
    assert_eq!(
        app.get("/api/v1/tools/web_fetch/1.0.0/download")
            .await
            .status(),
        StatusCode::OK
    );
    let res = resolve(&app, &json!({"web_fetch": "^1"})).await;
    assert_eq!(
        res.status(),
        StatusCode::OK,
        "{}",
        res.text().await.unwrap()
    );
}

async fn archived_packages_take_no_new_versions(backend: Backend) {
    let Some(app) = TestApp::builder(backend).build().await else {
        return;
    };
    let alice = publisher(&app, "alice").await;
    published(
        &app,
        &alice.token,
        tool(&alice.key, "web_fetch", "1.0.0", &[]),
    )
    .await;
    let path = "/api/v1/tools/web_fetch/status";
    ok(put_status(
        &app,
        &alice.token,
        path,
        &json!({"status": "archived", "reason": "done"}),
    )
    .await)
    .await;
    let body = problem(
        publish(
            &app,
            &alice.token,
            tool(&alice.key, "web_fetch", "1.0.1", &[]),
        )
        .await,
        StatusCode::CONFLICT,
        "package-archived",
    )
    .await;
    assert!(
        body["detail"].as_str().unwrap().contains("archived"),
        "{body}"
    );
    // What was published still installs.
    assert_eq!(
        app.get("/api/v1/tools/web_fetch/1.0.0/download")
            .await
            .status(),
        StatusCode::OK
    );
    let res = resolve(&app, &json!({"web_fetch": "^1"})).await;
    assert_eq!(res.status(), StatusCode::OK);
    let html = html_of(&app, "/tools/web_fetch").await;
    assert!(html.contains("Archived: no new versions."), "{html}");

    ok(put_status(&app, &alice.token, path, &json!({"status": "active"})).await).await;
    published(
        &app,
        &alice.token,
        tool(&alice.key, "web_fetch", "1.0.1", &[]),
    )
    .await;
}

async fn the_mcp_view_shows_deprecated_and_quarantined(backend: Backend) {
    let Some(app) = TestApp::builder(backend)
        .env("AGENTLANG_REGISTRY_MCP_NAMESPACE", "com.example.registry")
        .admins(&["root"])
        .build()
        .await
    else {
        return;
    };
    let alice = publisher(&app, "alice").await;
    published(
        &app,
        &alice.token,
        crate::mcp::mcp_tool(&alice.key, "weather", "1.0.0"),
    )
    .await;
    let root = app.account_with_token("root", &["admin"]).await;
    let path = "/v0.1/servers/com.example.registry%2Fweather/versions/1.0.0";
    let official =
        |entry: &Value| entry["_meta"]["io.modelcontextprotocol.registry/official"].clone();
    assert_eq!(official(&json_of(&app, path).await)["status"], "active");

    ok(put_status(
        &app,
        &alice.token,
        "/api/v1/tools/weather/status",
        &json!({"status": "deprecated", "reason": "use the new API"}),
    )
    .await)
    .await;
    let meta = official(&json_of(&app, path).await);
    assert_eq!(meta["status"], "deprecated", "{meta}");
    assert_eq!(
        meta["statusMessage"], "deprecated: use the new API",
        "{meta}"
    );
    assert!(meta["statusChangedAt"].is_string(), "{meta}");

    ok(put_status(
        &app,
        &root,
        "/api/v1/tools/weather/1.0.0/status",
        &json!({"status": "quarantined"}),
    )
    .await)
    .await;
    assert_eq!(official(&json_of(&app, path).await)["status"], "deleted");
}
