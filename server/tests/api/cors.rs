//! Cross-origin reads: every anonymous `GET` the OpenAPI document lists
//! answers `Access-Control-Allow-Origin: *` and its preflight; nothing that
//! needs a credential does. Walked over the document itself, so a route
//! added later is covered without naming it here.

use reqwest::{Method, StatusCode};
use serde_json::Value;

use crate::support::{Backend, TestApp};

const ORIGIN: &str = "https://elsewhere.example";

/// A concrete path for a template: a parameter becomes a value its route
/// accepts (a `{kind}` is `tools`, a `{version}` starts with a digit),
/// so the router picks the template's own route.
fn concrete(template: &str) -> String {
    template
        .split('/')
        .map(|s| match s {
            "{kind}" => "tools",
            "{version}" => "1.0.0",
            "{path}" => "checkpoint-tile/0/000",
            s if s.starts_with('{') => "someone",
            s => s,
        })
        .collect::<Vec<_>>()
        .join("/")
}

/// The document's `GET` templates, each with whether it needs a
/// credential.
fn reads(doc: &Value) -> Vec<(String, bool)> {
    doc["paths"]
        .as_object()
        .unwrap()
        .iter()
        .filter_map(|(template, item)| {
            let get = item.get("get")?;
            let credential = get["security"].as_array().is_some_and(|s| !s.is_empty());
            Some((template.clone(), credential))
        })
        .collect()
}

fn allow_origin(res: &reqwest::Response) -> Option<String> {
    res.headers()
        .get("access-control-allow-origin")
        .map(|v| v.to_str().unwrap().to_owned())
}

#[actix_web::test]
async fn anonymous_reads_are_cross_origin_and_nothing_else_is() {
    let app = TestApp::builder(Backend::Sqlite).build().await.unwrap();
    let doc: Value = app.get("/api/openapi.json").await.json().await.unwrap();
    let reads = reads(&doc);
    assert!(reads.len() > 20, "{reads:?}");
    for (template, credential) in &reads {
        let path = concrete(template);
        let res = app
            .request(Method::GET, &path)
            .header("origin", ORIGIN)
            .send()
            .await
            .unwrap();
        let expected = (!credential && template != "/metrics").then(|| "*".to_owned());
        assert_eq!(
            allow_origin(&res),
            expected,
            "GET {path} ({template}) answered {}",
            res.status()
        );
        assert!(
            res.headers()
                .get("access-control-allow-credentials")
                .is_none(),
            "{path}"
        );

        let preflight = app
            .request(Method::OPTIONS, &path)
            .header("origin", ORIGIN)
            .header("access-control-request-method", "GET")
            .header("access-control-request-headers", "if-none-match")
            .send()
            .await
            .unwrap();
        if expected.is_some() {
            assert_eq!(preflight.status(), StatusCode::OK, "preflight {path}");
            assert_eq!(allow_origin(&preflight).as_deref(), Some("*"), "{path}");
            let methods = preflight.headers()["access-control-allow-methods"]
                .to_str()
                .unwrap()
                .to_owned();
            assert!(methods.contains("GET"), "{methods}");
            assert!(!methods.contains("POST"), "{methods}");
            assert!(preflight.headers().contains_key("access-control-max-age"));
        } else {
            assert_eq!(allow_origin(&preflight), None, "preflight {path}");
        }
    }
}

#[actix_web::test]
async fn a_preflight_cannot_ask_to_send_a_credential_or_to_write() {
    let app = TestApp::builder(Backend::Sqlite).build().await.unwrap();
    for (method, headers) in [("GET", "authorization"), ("POST", "content-type")] {
        let res = app
            .request(Method::OPTIONS, "/api/v1/search")
            .header("origin", ORIGIN)
            .header("access-control-request-method", method)
            .header("access-control-request-headers", headers)
            .send()
            .await
            .unwrap();
        assert_eq!(allow_origin(&res), None, "{method} with {headers}");
        assert!(res.status().is_client_error(), "{}", res.status());
    }
}

#[actix_web::test]
async fn a_client_cannot_mark_its_own_request_public() {
    let app = TestApp::builder(Backend::Sqlite).build().await.unwrap();
    let token = app.account_with_token("alice", &["publish"]).await;
    let res = app
        .request(Method::GET, "/api/v1/account")
        .bearer_auth(&token)
        .header("origin", ORIGIN)
        .header("x-agentlang-public-read", "1")
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::OK);
    assert_eq!(allow_origin(&res), None);

    // A read answered from another origin exposes what a cache needs.
    let res = app
        .request(Method::GET, "/log/checkpoint")
        .header("origin", ORIGIN)
        .send()
        .await
        .unwrap();
    assert_eq!(allow_origin(&res).as_deref(), Some("*"));
    let exposed = res.headers()["access-control-expose-headers"]
        .to_str()
        .unwrap()
        .to_ascii_lowercase();
    assert!(exposed.contains("etag"), "{exposed}");
}
