use std::path::PathBuf;

use agentlang_registry::openapi::document_json;
use reqwest::{StatusCode, redirect::Policy};
use serde_json::Value;

use crate::support::{Backend, TestApp, backend_tests};

backend_tests!(health_and_readiness, metrics_count_requests_by_route);

async fn health_and_readiness(backend: Backend) {
    let Some(app) = TestApp::builder(backend).build().await else {
        return;
    };
    let res = app.get("/healthz").await;
    assert_eq!(res.status(), StatusCode::OK);
    assert_eq!(res.json::<Value>().await.unwrap()["status"], "ok");
    let res = app.get("/readyz").await;
    assert_eq!(res.status(), StatusCode::OK);
    assert_eq!(res.json::<Value>().await.unwrap()["status"], "ready");

    // With the database gone, the replica is no longer ready.
    app.registry().close().await;
    let res = app.get("/readyz").await;
    let body = crate::support::problem(res, StatusCode::SERVICE_UNAVAILABLE, "unavailable").await;
    assert_eq!(body["detail"], "the database is unreachable");

    // Requests needing it are 503 with a retry time, saying nothing
    // internal.
    let res = app.get("/api/v1/models").await;
    assert_eq!(res.headers()["retry-after"], "5");
    let body = crate::support::problem(res, StatusCode::SERVICE_UNAVAILABLE, "unavailable").await;
    let text = body.to_string().to_lowercase();
    for internal in ["pool", "sqlx", "closed", "postgres", "sqlite"] {
        assert!(!text.contains(internal), "{internal} leaked: {body}");
    }
}

async fn metrics_count_requests_by_route(backend: Backend) {
    let Some(app) = TestApp::builder(backend).build().await else {
        return;
    };
    app.get("/api/v1/models/claude-sonnet-4").await;
    app.get("/api/v1/models/no-such-model").await;
    let res = app.get("/metrics").await;
    assert_eq!(res.status(), StatusCode::OK);
    assert!(
        res.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/plain")
    );
    let text = res.text().await.unwrap();
    for needle in [
        r#"agentlang_registry_http_requests_total{method="GET",route="/api/v1/models/{name}",status="200"} 1"#,
        r#"agentlang_registry_http_requests_total{method="GET",route="/api/v1/models/{name}",status="404"} 1"#,
        "agentlang_registry_http_request_duration_seconds_bucket",
        "agentlang_registry_publishes_total 0",
        "agentlang_registry_resolves_total 0",
        concat!(
            r#"agentlang_registry_build_info{version=""#,
            env!("CARGO_PKG_VERSION"),
            r#""} 1"#
        ),
        "process_resident_memory_bytes ",
        "process_open_fds ",
        r#"agentlang_registry_db_pool_connections{state="idle"} "#,
        r#"agentlang_registry_db_pool_connections{state="in_use"} "#,
    ] {
        assert!(text.contains(needle), "missing {needle} in\n{text}");
    }
    // The pools are read at the scrape: they have opened connections by
    // now, within their bound.
    let value = |name: &str| -> f64 {
        text.lines()
            .find_map(|l| l.strip_prefix(name)?.trim().parse().ok())
            .unwrap_or_else(|| panic!("no {name} in\n{text}"))
    };
    let max = value("agentlang_registry_db_pool_max_connections");
    let open = value(r#"agentlang_registry_db_pool_connections{state="idle"}"#)
        + value(r#"agentlang_registry_db_pool_connections{state="in_use"}"#);
    assert!(open >= 1.0 && open <= max, "{open} of {max}");
}

#[actix_web::test]
async fn request_ids_are_echoed_or_generated() {
    let app = TestApp::builder(Backend::Sqlite).build().await.unwrap();
    let res = app
        .request(reqwest::Method::GET, "/healthz")
        .header("x-request-id", "trace-abc-123")
        .send()
        .await
        .unwrap();
    assert_eq!(res.headers()["x-request-id"], "trace-abc-123");

    let res = app.get("/api/v1/nowhere").await;
    let generated = res.headers()["x-request-id"].to_str().unwrap().to_owned();
    assert_eq!(generated.len(), 36, "a UUID: {generated}");
    let body: Value = res.json().await.unwrap();
    assert_eq!(body["request_id"], generated.as_str());

    // A hostile id (too long) is replaced, not echoed.
    let res = app
        .request(reqwest::Method::GET, "/healthz")
        .header("x-request-id", "x".repeat(500))
        .send()
        .await
        .unwrap();
    assert_eq!(res.headers()["x-request-id"].len(), 36);
}

fn committed_openapi() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../openapi/openapi.json")
}

/// Fails when `openapi/openapi.json` is stale; `AGENTLANG_UPDATE_OPENAPI=1`
/// rewrites it.
#[test]
fn committed_openapi_document_is_current() {
    let current = document_json();
    let path = committed_openapi();
    if std::env::var("AGENTLANG_UPDATE_OPENAPI").as_deref() == Ok("1") {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, &current).unwrap();
    }
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        committed == current,
        "{} is stale: rerun with AGENTLANG_UPDATE_OPENAPI=1 and commit it",
        path.display()
    );
}

/// OpenAPI 3.1 requires a description on every response; generators and
/// validators refuse a document without one.
#[test]
fn every_response_is_described() {
    let doc: Value = serde_json::from_str(&document_json()).unwrap();
    let mut undescribed = Vec::new();
    for (path, item) in doc["paths"].as_object().unwrap() {
        // Path items also carry a `description` (the methods they answer).
        let operations =
            item.as_object().unwrap().iter().filter(|(key, _)| {
                ["get", "put", "post", "delete", "patch"].contains(&key.as_str())
            });
        for (method, operation) in operations {
            for (status, response) in operation["responses"].as_object().unwrap() {
                if response.get("$ref").is_none() && response.get("description").is_none() {
                    undescribed.push(format!("{method} {path} {status}"));
                }
            }
        }
    }
    for (name, response) in doc["components"]["responses"].as_object().unwrap() {
        if response.get("description").is_none() {
            undescribed.push(format!("components.responses.{name}"));
        }
    }
    assert!(undescribed.is_empty(), "{undescribed:#?}");
}

#[test]
fn every_429_and_503_carries_retry_after_and_every_body_its_400s() {
    let doc: Value = serde_json::from_str(&document_json()).unwrap();
    let shared = &doc["components"]["responses"];
    let resolve = |response: &Value| -> Value {
        match response["$ref"].as_str() {
            Some(r) => shared[r.trim_start_matches("#/components/responses/")].clone(),
            None => response.clone(),
        }
    };
    let mut missing = Vec::new();
    for (path, item) in doc["paths"].as_object().unwrap() {
        for method in ["get", "put", "post", "delete", "patch"] {
            let Some(operation) = item.get(method) else {
                continue;
            };
            let responses = &operation["responses"];
            for status in ["429", "503"] {
                if let Some(response) = responses.get(status)
                    && resolve(response)["headers"].get("Retry-After").is_none()
                {
                    missing.push(format!("{method} {path} {status}: Retry-After"));
                }
            }
            let json_body = operation["requestBody"]["content"]
                .get("application/json")
                .is_some();
            let protocol = operation["tags"][0] == "agent protocols";
            if json_body && !protocol {
                for status in ["400", "413", "415"] {
                    if responses.get(status).is_none() {
                        missing.push(format!("{method} {path} {status}"));
                    }
                }
            }
        }
    }
    assert!(missing.is_empty(), "{missing:#?}");
}

#[actix_web::test]
async fn the_served_document_lists_every_endpoint_and_docs_work_offline() {
    let app = TestApp::builder(Backend::Sqlite).build().await.unwrap();
    let served: Value = app.get("/api/openapi.json").await.json().await.unwrap();
    let committed: Value = serde_json::from_str(&document_json()).unwrap();
    assert_eq!(served, committed);
    let paths = served["paths"].as_object().unwrap();
    for path in [
        "/api/v1/accounts",
        "/api/v1/tokens",
        "/api/v1/tokens/{id}",
        "/api/v1/{kind}/{name}/owners",
        "/api/v1/models",
        "/api/v1/models/{name}",
        "/healthz",
        "/readyz",
        "/metrics",
    ] {
        assert!(
            paths.contains_key(path),
            "{path} missing from the OpenAPI document"
        );
    }
    assert_eq!(
        served["components"]["securitySchemes"]["bearer"]["scheme"],
        "bearer"
    );

    let client = reqwest::Client::builder()
        .redirect(Policy::none())
        .build()
        .unwrap();
    let res = client
        .get(format!("{}/api/docs", app.url))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::PERMANENT_REDIRECT);
    assert_eq!(res.headers()["location"], "/api/docs/");

    let res = app.get("/api/docs/").await;
    assert_eq!(res.status(), StatusCode::OK);
    let html = res.text().await.unwrap();
    assert!(html.contains("swagger-ui"), "{html}");
    assert!(
        !html.contains("https://"),
        "the page loads nothing from the network"
    );
    // Its script and the config that points it at our document are served here.
    let res = app.get("/api/docs/swagger-ui-bundle.js").await;
    assert_eq!(res.status(), StatusCode::OK);
    let config = app
        .get("/api/docs/swagger-initializer.js")
        .await
        .text()
        .await
        .unwrap();
    assert!(config.contains("/api/openapi.json"), "{config}");
}

#[actix_web::test]
async fn a_data_folder_needing_url_escapes_works() {
    let app = TestApp::builder(Backend::Sqlite)
        .config(|c| c.data_dir = c.data_dir.join("my registry ?#%"))
        .build()
        .await
        .unwrap();
    assert_eq!(
        app.create_account("alice", "password-123").await.status(),
        StatusCode::CREATED
    );
    assert!(app.state().config.data_dir.join("registry.db").is_file());
}
