//! The assertions on a status: [`problem`] for error answers (an RFC 9457
//! problem document), [`expect_status`] for the rest.

use std::collections::BTreeSet;

use reqwest::{Response, StatusCode};
use serde_json::Value;

/// Reads a problem document, checking its status, media type, type URI
/// (`<registry URL>/problems/<slug>`) and common members.
pub async fn problem(res: Response, status: StatusCode, slug: &str) -> Value {
    assert_eq!(res.status(), status);
    let content_type = res
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    assert_eq!(content_type, "application/problem+json");
    let body: Value = res.json().await.unwrap();
    let problem_type = body["type"].as_str().unwrap_or_default();
    assert!(
        problem_type.starts_with("http") && problem_type.ends_with(&format!("/problems/{slug}")),
        "{body}"
    );
    assert_eq!(body["status"], status.as_u16());
    assert!(body["request_id"].is_string(), "{body}");
    assert!(body["instance"].is_string(), "{body}");
    body
}

/// (file, path, rule) of every error a package problem lists, as
/// `agentlang validate` prints them; an absent member reads as "".
pub fn rule_errors(body: &Value) -> BTreeSet<(String, String, String)> {
    body["errors"]
        .as_array()
        .expect("the problem lists its errors")
        .iter()
        .map(|e| {
            let text = |key: &str| e[key].as_str().unwrap_or_default().to_owned();
            (text("file"), text("path"), text("rule"))
        })
        .collect()
}

/// Checks `res` answered `status`, showing the body when it did not, and
/// hands the response back for reading.
pub async fn expect_status(res: Response, status: StatusCode) -> Response {
    let got = res.status();
    if got != status {
        panic!(
            "expected {status}, got {got}: {}",
            res.text().await.unwrap_or_default()
        );
    }
    res
}
