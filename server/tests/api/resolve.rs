use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

use crate::{
    publish::{agent_yaml, published, publisher, tool},
    support::{Backend, TestApp, backend_tests, problem},
};

backend_tests!(
    json_requests_resolve_transitively,
    agent_yaml_resolves_to_a_yaml_lock,
    yanked_versions_are_skipped_unless_locked,
    young_versions_are_held_back_and_named,
    unsatisfiable_requirements_are_explained,
    unknown_tools_models_and_bad_input_are_refused,
    slow_resolutions_time_out,
);

/// The metric of batched index reads resolutions made.
async fn index_reads(app: &TestApp) -> u64 {
    let text = app.get("/metrics").await.text().await.unwrap();
    text.lines()
        .find_map(|line| line.strip_prefix("agentlang_registry_resolve_index_reads_total "))
        .expect("the metric is exported")
        .parse()
        .unwrap()
}

/// A first-time resolution reads the index one dependency level at a time,
/// not one package at a time: a three-level graph of five tools is three
/// reads, and a later resolution of a part of it reads nothing.
#[actix_web::test]
async fn first_time_resolves_read_one_batch_per_level() {
    let app = TestApp::builder(Backend::Sqlite).build().await.unwrap();
    let alice = publisher(&app, "alice").await;
    for (name, deps) in [
        ("leaf_c", &[][..]),
        ("leaf_d", &[][..]),
        ("mid_b", &[("leaf_c", "^1"), ("leaf_d", "^1")][..]),
        ("mid_e", &[("leaf_d", "^1")][..]),
        ("top_a", &[("mid_b", "^1"), ("mid_e", "^1")][..]),
    ] {
        published(&app, &alice.token, tool(&alice.key, name, "1.0.0", deps)).await;
    }
    let before = index_reads(&app).await;
    let lock = resolved(&app, &json!({"tools": {"top_a": "^1"}})).await;
    assert_eq!(lock["tools"].as_object().unwrap().len(), 5, "{lock}");
    // [top_a], [mid_b, mid_e], [leaf_c, leaf_d].
    assert_eq!(index_reads(&app).await - before, 3);
    // Another request over the same packages: all of it is cached.
    let lock = resolved(&app, &json!({"tools": {"mid_b": "^1", "leaf_d": "^1"}})).await;
    assert_eq!(lock["tools"].as_object().unwrap().len(), 3, "{lock}");
    assert_eq!(index_reads(&app).await - before, 3);
    // An unknown tool is one read, and still answered as unknown.
    let res = resolve_json(&app, &json!({"tools": {"nowhere": "^1"}})).await;
    problem(res, StatusCode::UNPROCESSABLE_ENTITY, "validation-failed").await;
    assert_eq!(index_reads(&app).await - before, 4);
}

/// The answer's form follows `Accept`, and the request's own form when
/// `Accept` leaves it open; an `Accept` that admits neither is 406.
#[actix_web::test]
async fn answers_are_negotiated_by_accept() {
    let app = TestApp::builder(Backend::Sqlite).build().await.unwrap();
    seed(&app).await;
    let yaml = agent_yaml("helper", "1.0.0", &[("web_search", "^1.2")]);
    let json = json!({"tools": {"web_search": "^1.2"}}).to_string();
    for (content_type, body, accept, answer) in [
        ("application/json", &json, None, "application/json"),
        ("application/json", &json, Some("*/*"), "application/json"),
        (
            "application/json",
            &json,
            Some("application/yaml"),
            "application/yaml",
        ),
        ("application/yaml", &yaml, None, "application/yaml"),
        (
            "application/yaml",
            &yaml,
            Some("application/*"),
            "application/yaml",
        ),
        (
            "application/yaml",
            &yaml,
            Some("text/html, application/json;q=0.9, application/yaml;q=0.5"),
            "application/json",
        ),
        // q=0 refuses a type even when a wildcard would admit it.
        (
            "application/json",
            &json,
            Some("application/json;q=0, */*"),
            "application/yaml",
        ),
    ] {
        let mut request = app
            .request(Method::POST, "/api/v1/resolve")
            .header("content-type", content_type)
            .body(body.clone());
        if let Some(accept) = accept {
            request = request.header("accept", accept);
        }
        let res = request.send().await.unwrap();
        assert_eq!(res.status(), StatusCode::OK, "{content_type} {accept:?}");
        assert_eq!(
            res.headers()["content-type"],
            answer,
            "{content_type} {accept:?}"
        );
        // Accept, and the CORS middleware's Origin and preflight headers.
        let vary = res.headers()["vary"].to_str().unwrap().to_ascii_lowercase();
        assert!(vary.split(',').any(|v| v.trim() == "accept"), "{vary}");
        let text = res.text().await.unwrap();
        let lock = agentlang_core::lockfile::Lockfile::from_slice(text.as_bytes()).unwrap();
        assert_eq!(lock.tools.len(), 2, "{text}");
    }
    for accept in ["*/*;q=0", "application/json;q=0, application/yaml;q=0, */*"] {
        let res = app
            .request(Method::POST, "/api/v1/resolve")
            .header("content-type", "application/json")
            .header("accept", accept)
            .body(json.clone())
            .send()
            .await
            .unwrap();
        problem(res, StatusCode::NOT_ACCEPTABLE, "not-acceptable").await;
    }
    let res = app
        .request(Method::POST, "/api/v1/resolve")
        .header("content-type", "application/json")
        .header("accept", "text/html")
        .body(json)
        .send()
        .await
        .unwrap();
    let body = problem(res, StatusCode::NOT_ACCEPTABLE, "not-acceptable").await;
    assert!(
        body["detail"]
            .as_str()
            .unwrap()
            .contains("application/yaml, application/json"),
        "{body}"
    );
}

/// web_fetch 1.0.3 and 1.1.0; web_search 1.2.0 needing web_fetch ^1.0.0.
async fn seed(app: &TestApp) -> crate::publish::Publisher {
    let alice = publisher(app, "alice").await;
    for bytes in [
        tool(&alice.key, "web_fetch", "1.0.3", &[]),
        tool(&alice.key, "web_fetch", "1.1.0", &[]),
        tool(
            &alice.key,
            "web_search",
            "1.2.0",
            &[("web_fetch", "^1.0.0")],
        ),
    ] {
        published(app, &alice.token, bytes).await;
    }
    alice
}

async fn resolve_json(app: &TestApp, request: &Value) -> reqwest::Response {
    app.request(Method::POST, "/api/v1/resolve")
        .header("accept", "application/json")
        .json(request)
        .send()
        .await
        .unwrap()
}

async fn resolved(app: &TestApp, request: &Value) -> Value {
    let res = resolve_json(app, request).await;
    assert_eq!(
        res.status(),
        StatusCode::OK,
        "{}",
        res.text().await.unwrap()
    );
    res.json().await.unwrap()
}

async fn json_requests_resolve_transitively(backend: Backend) {
    let Some(app) = TestApp::builder(backend).build().await else {
        return;
    };
    seed(&app).await;
    let lock = resolved(
        &app,
        &json!({"tools": {"web_search": "^1.2.0"}, "models": ["claude-sonnet-4"]}),
    )
    .await;
    assert_eq!(lock["version"], "1");
    assert_eq!(lock["registry"], app.url);
    assert_eq!(lock["tools"]["web_search"]["version"], "1.2.0");
    assert_eq!(lock["tools"]["web_search"]["requirement"], "^1.2.0");
    assert_eq!(
        lock["tools"]["web_search"]["dependencies"],
        json!(["web_fetch"])
    );
    assert_eq!(lock["tools"]["web_fetch"]["version"], "1.1.0");
    let index: Value = app
        .get("/api/v1/index/tools/web_fetch")
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(
        lock["tools"]["web_fetch"]["hash"],
        index["versions"][1]["hash"]
    );
    assert_eq!(lock["models"]["claude-sonnet-4"]["context_window"], 200_000);
    assert_eq!(lock["models"]["claude-sonnet-4"]["supports_tools"], true);
    // A null requirement means the newest release.
    let lock = resolved(&app, &json!({"tools": {"web_fetch": null}})).await;
    assert_eq!(lock["tools"]["web_fetch"]["version"], "1.1.0");
    assert!(app.state().metrics().resolves.get() >= 2);
}

async fn agent_yaml_resolves_to_a_yaml_lock(backend: Backend) {
    let Some(app) = TestApp::builder(backend).build().await else {
        return;
    };
    seed(&app).await;
    let yaml = agent_yaml(
        "helper",
        "1.0.0",
        &[("web_search", "^1.2"), ("web_fetch", "~1.0")],
    );
    let res = app
        .request(Method::POST, "/api/v1/resolve")
        .header("content-type", "application/yaml")
        .body(yaml)
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::OK);
    assert_eq!(res.headers()["content-type"], "application/yaml");
    let text = res.text().await.unwrap();
    let lock = agentlang_core::lockfile::Lockfile::from_slice(text.as_bytes()).unwrap();
    let fetch = agentlang_core::PackageName::new("web_fetch").unwrap();
    assert_eq!(lock.tools[&fetch].version.to_string(), "1.0.3");
    assert_eq!(lock.models.len(), 1);

    let res = app
        .request(Method::POST, "/api/v1/resolve")
        .header("content-type", "application/yaml")
        .body("name: x\nversion: nope\n")
        .send()
        .await
        .unwrap();
    problem(res, StatusCode::UNPROCESSABLE_ENTITY, "validation-failed").await;
}

async fn yanked_versions_are_skipped_unless_locked(backend: Backend) {
    let Some(app) = TestApp::builder(backend).build().await else {
        return;
    };
    let alice = seed(&app).await;
    let before = resolved(&app, &json!({"tools": {"web_search": "^1.2.0"}})).await;
    assert_eq!(before["tools"]["web_fetch"]["version"], "1.1.0");
    let res = app
        .request(Method::POST, "/api/v1/tools/web_fetch/1.1.0/yank")
        .bearer_auth(&alice.token)
        .json(&json!({"reason": "broken"}))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::OK);
    // The cache sees the yank at once.
    let fresh = resolved(&app, &json!({"tools": {"web_search": "^1.2.0"}})).await;
    assert_eq!(fresh["tools"]["web_fetch"]["version"], "1.0.3");
    // A lock that already holds the yanked version keeps it.
    let kept = resolved(
        &app,
        &json!({"tools": {"web_search": "^1.2.0"}, "lock": before}),
    )
    .await;
    assert_eq!(kept["tools"]["web_fetch"]["version"], "1.1.0");
    assert_eq!(
        kept["tools"]["web_fetch"]["hash"],
        before["tools"]["web_fetch"]["hash"]
    );
}

/// Backdates every version of the seed except web_fetch 1.1.0 by ten
/// days: what a registry looks like a week after a release.
async fn backdate_all_but_newest_fetch(app: &TestApp) {
    use store::Db;
    let ten_days_ago = store::now() - 10 * 86_400;
    let update = "UPDATE versions SET published_at = $1 WHERE version <> '1.1.0'";
    match &app.store().db {
        Db::Sqlite { pool, .. } => sqlx::query(update)
            .bind(ten_days_ago)
            .execute(pool)
            .await
            .map(drop),
        Db::Postgres(pools) => sqlx::query(update)
            .bind(ten_days_ago)
            .execute(pools.current())
            .await
            .map(drop),
    }
    .unwrap();
}

async fn young_versions_are_held_back_and_named(backend: Backend) {
    let Some(app) = TestApp::builder(backend).build().await else {
        return;
    };
    seed(&app).await;
    backdate_all_but_newest_fetch(&app).await;

    // The index and the records say when each version was published and
    // where its publish is in the log.
    let index: Value = app
        .get("/api/v1/index/tools/web_fetch")
        .await
        .json()
        .await
        .unwrap();
    let record: Value = app
        .get("/api/v1/tools/web_fetch/1.1.0")
        .await
        .json()
        .await
        .unwrap();
    let newest = &index["versions"][1];
    assert_eq!(newest["version"], "1.1.0");
    assert_eq!(newest["published_at"], record["published_at"]);
    assert_eq!(newest["log_index"], record["log_index"]);
    assert_eq!(record["log_index"], record["log"]["index"]);
    assert!(newest["log_index"].as_u64().is_some(), "{newest}");
    assert_ne!(index["versions"][0]["published_at"], newest["published_at"]);

    let week_ago = time::OffsetDateTime::now_utc() - time::Duration::days(7);
    let cutoff = week_ago
        .format(&time::format_description::well_known::Rfc3339)
        .unwrap();
    let request = json!({"tools": {"web_search": "^1.2.0"}, "exclude_newer": cutoff});
    let res = resolve_json(&app, &request).await;
    assert_eq!(res.status(), StatusCode::OK);
    let held = res.headers()["agentlang-held-back"]
        .to_str()
        .unwrap()
        .to_owned();
    assert_eq!(
        held,
        format!(
            "web_fetch@1.1.0;published={}",
            record["published_at"].as_str().unwrap()
        )
    );
    assert_eq!(res.headers()["agentlang-held-back-count"], "1");
    let lock: Value = res.json().await.unwrap();
    assert_eq!(lock["tools"]["web_fetch"]["version"], "1.0.3");
    // Each pin carries the log entry of its publish.
    let old: Value = app
        .get("/api/v1/tools/web_fetch/1.0.3")
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(lock["tools"]["web_fetch"]["log_index"], old["log_index"]);

    // A lock that already pins the young version keeps it, and nothing is
    // held back then.
    let fresh = resolved(&app, &json!({"tools": {"web_search": "^1.2.0"}})).await;
    assert_eq!(fresh["tools"]["web_fetch"]["version"], "1.1.0");
    let kept = resolve_json(
        &app,
        &json!({"tools": {"web_search": "^1.2.0"}, "exclude_newer": cutoff, "lock": fresh}),
    )
    .await;
    assert!(kept.headers().get("agentlang-held-back").is_none());
    let kept: Value = kept.json().await.unwrap();
    assert_eq!(kept["tools"]["web_fetch"]["version"], "1.1.0");

    // A cutoff before everything leaves nothing to choose.
    let res = resolve_json(
        &app,
        &json!({"tools": {"web_fetch": null}, "exclude_newer": "2000-01-01T00:00:00Z"}),
    )
    .await;
    assert_eq!(res.status(), StatusCode::UNPROCESSABLE_ENTITY);
    let res = resolve_json(
        &app,
        &json!({"tools": {"web_fetch": null}, "exclude_newer": "last week"}),
    )
    .await;
    let body = problem(res, StatusCode::UNPROCESSABLE_ENTITY, "validation-failed").await;
    assert_eq!(body["errors"][0]["field"], "exclude_newer", "{body}");
}

async fn unsatisfiable_requirements_are_explained(backend: Backend) {
    let Some(app) = TestApp::builder(backend).build().await else {
        return;
    };
    seed(&app).await;
    let res = resolve_json(
        &app,
        &json!({"tools": {"web_search": "^1.2.0", "web_fetch": "^2.0.0"}}),
    )
    .await;
    let body = problem(res, StatusCode::UNPROCESSABLE_ENTITY, "unsatisfiable").await;
    let detail = body["detail"].as_str().unwrap();
    assert!(detail.contains("web_fetch"), "{body}");
    let conflicts = body["conflicts"].as_array().unwrap();
    assert!(!conflicts.is_empty(), "{body}");
    assert!(conflicts.iter().all(|c| c["kind"].is_string()), "{body}");
}

async fn unknown_tools_models_and_bad_input_are_refused(backend: Backend) {
    let Some(app) = TestApp::builder(backend).build().await else {
        return;
    };
    seed(&app).await;
    let body = problem(
        resolve_json(
            &app,
            &json!({"tools": {"web_fetch": null}, "models": ["gpt-99"]}),
        )
        .await,
        StatusCode::UNPROCESSABLE_ENTITY,
        "validation-failed",
    )
    .await;
    assert_eq!(body["errors"][0]["field"], "models.gpt-99");
    let body = problem(
        resolve_json(&app, &json!({"tools": {"nothing": "^1"}})).await,
        StatusCode::UNPROCESSABLE_ENTITY,
        "validation-failed",
    )
    .await;
    assert_eq!(body["errors"][0]["field"], "tools.nothing");
    let body = problem(
        resolve_json(
            &app,
            &json!({"tools": {"bad name": "^1", "web_fetch": "not a req"}}),
        )
        .await,
        StatusCode::UNPROCESSABLE_ENTITY,
        "validation-failed",
    )
    .await;
    assert_eq!(body["errors"].as_array().unwrap().len(), 2, "{body}");
    let res = app
        .request(Method::POST, "/api/v1/resolve")
        .header("content-type", "text/plain")
        .body("web_fetch")
        .send()
        .await
        .unwrap();
    problem(
        res,
        StatusCode::UNSUPPORTED_MEDIA_TYPE,
        "unsupported-media-type",
    )
    .await;
}

async fn slow_resolutions_time_out(backend: Backend) {
    let Some(app) = TestApp::builder(backend)
        .config(|c| c.resolve_timeout = std::time::Duration::ZERO)
        .build()
        .await
    else {
        return;
    };
    seed(&app).await;
    let body = problem(
        resolve_json(&app, &json!({"tools": {"web_search": "^1.2.0"}})).await,
        StatusCode::SERVICE_UNAVAILABLE,
        "resolve-timeout",
    )
    .await;
    assert!(body["detail"].as_str().unwrap().contains("0 ms"), "{body}");
}
