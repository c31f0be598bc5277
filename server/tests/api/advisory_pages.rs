//! The catalog's advisory pages (docs/advisories.md) over plain HTTP, on
//! every backend: the listing, one advisory with its details rendered as
//! sanitized markdown, and the notice on the pages of affected versions.

use agentlang_core::Kind;
use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::support::{Backend, TestApp, backend_tests, expect_status, seed::seed_version};

backend_tests!(
    advisories_are_listed_and_shown_with_details_sanitized,
    affected_version_pages_carry_the_notice,
);

/// An advisory of `tool/web-fetch` from `introduced` until `fixed`.
fn advisory(introduced: &str, fixed: &str, details: &str) -> Value {
    json!({
        "modified": "2026-02-01T00:00:00Z",
        "published": "2026-02-01T00:00:00Z",
        "aliases": ["CVE-2026-12345"],
        "summary": "Fetches follow redirects to file:// URLs",
        "details": details,
        "affected": [{
            "ranges": [{"type": "SEMVER", "events": [{"introduced": introduced}, {"fixed": fixed}]}],
            "versions": ["0.9.0"],
            "database_specific": {"package": "tool/web-fetch"},
        }],
        "references": [
            {"type": "FIX", "url": "https://example.com/web-fetch/commit/abc"},
            {"type": "WEB", "url": "javascript:alert(1)"},
        ],
        "database_specific": {"severity": "high"},
    })
}

/// Posts `body` as an admin; the assigned id.
async fn publish(app: &TestApp, token: &str, body: &Value) -> String {
    let res = app
        .request(reqwest::Method::POST, "/api/v1/advisories")
        .bearer_auth(token)
        .json(body)
        .send()
        .await
        .unwrap();
    let written: Value = expect_status(res, StatusCode::CREATED)
        .await
        .json()
        .await
        .unwrap();
    written["id"].as_str().unwrap().to_owned()
}

async fn html(app: &TestApp, path: &str, status: StatusCode) -> String {
    let res = expect_status(app.get(path).await, status).await;
    assert!(
        res.headers()[reqwest::header::CONTENT_TYPE]
            .to_str()
            .unwrap()
            .starts_with("text/html"),
        "{path}"
    );
    res.text().await.unwrap()
}

async fn advisories_are_listed_and_shown_with_details_sanitized(backend: Backend) {
    let Some(app) = TestApp::builder(backend).admins(&["root"]).build().await else {
        return;
    };
    let root = app.account_with_token("root", &["admin"]).await;
    seed_version(&app, Kind::Tool, "web-fetch", "1.0.0", "root")
        .await
        .unwrap();

    let empty = html(&app, "/advisories", StatusCode::OK).await;
    assert!(empty.contains("No advisories"), "{empty}");
    // Every catalog page links the listing.
    assert!(empty.contains(r#"<a href="/advisories">"#), "{empty}");

    let details = "A redirect made the tool **read local files**.\n\n<script>alert('x')</script>\n";
    let id = publish(&app, &root, &advisory("1.1.0", "2.0.0", details)).await;

    let list = html(&app, "/advisories", StatusCode::OK).await;
    assert!(
        list.contains(&format!(r#"<a href="/advisories/{id}">"#)),
        "{list}"
    );
    assert!(
        list.contains("Fetches follow redirects to file:// URLs"),
        "{list}"
    );
    assert!(list.contains(r#"severity-high"#), "{list}");
    assert!(
        list.contains(r#"<a href="/tools/web-fetch">tool web-fetch</a>"#),
        "{list}"
    );
    assert!(!list.contains("withdrawn</span>"), "{list}");

    let page = html(&app, &format!("/advisories/{id}"), StatusCode::OK).await;
    assert!(page.contains("<strong>read local files</strong>"), "{page}");
    assert!(!page.contains("<script>alert"), "{page}");
    assert!(page.contains("CVE-2026-12345"), "{page}");
    assert!(page.contains("from 1.1.0, fixed in 2.0.0"), "{page}");
    assert!(page.contains("<code>0.9.0</code>"), "{page}");
    assert!(
        page.contains(
            r#"<a href="https://example.com/web-fetch/commit/abc" rel="nofollow noopener">"#
        ),
        "{page}"
    );
    // A reference that is not http(s) is shown, never linked.
    assert!(!page.contains(r#"href="javascript:"#), "{page}");
    assert!(
        page.contains(&format!(r#"<a href="/api/v1/advisories/{id}">"#)),
        "{page}"
    );
    assert!(page.contains("/log?at="), "{page}");

    // Withdrawn: still listed and shown, marked.
    let mut withdrawn = advisory("1.1.0", "2.0.0", details);
    withdrawn["id"] = json!(id);
    withdrawn["modified"] = json!("2026-03-01T00:00:00Z");
    withdrawn["withdrawn"] = json!("2026-03-01T00:00:00Z");
    let res = app
        .request(reqwest::Method::POST, "/api/v1/advisories")
        .bearer_auth(&root)
        .json(&withdrawn)
        .send()
        .await
        .unwrap();
    expect_status(res, StatusCode::OK).await;
    let list = html(&app, "/advisories", StatusCode::OK).await;
    assert!(list.contains("withdrawn</span>"), "{list}");
    let page = html(&app, &format!("/advisories/{id}"), StatusCode::OK).await;
    assert!(page.contains("<strong>Withdrawn</strong>"), "{page}");

    // Unknown and malformed ids are the catalog's 404 page.
    html(
        &app,
        "/advisories/x_AGENTLANG-2026-9999",
        StatusCode::NOT_FOUND,
    )
    .await;
    html(&app, "/advisories/not%20an%20id", StatusCode::NOT_FOUND).await;
    html(
        &app,
        "/advisories?after=not%20an%20id",
        StatusCode::NOT_FOUND,
    )
    .await;
}

async fn affected_version_pages_carry_the_notice(backend: Backend) {
    let Some(app) = TestApp::builder(backend).admins(&["root"]).build().await else {
        return;
    };
    let root = app.account_with_token("root", &["admin"]).await;
    for version in ["1.0.0", "1.5.0", "2.0.0"] {
        seed_version(&app, Kind::Tool, "web-fetch", version, "root")
            .await
            .unwrap();
    }
    // Rendered (and kept) before the advisory exists: publishing it must
    // not leave the page without its notice.
    let before = html(&app, "/tools/web-fetch/1.5.0", StatusCode::OK).await;
    assert!(!before.contains("Affected by"), "{before}");
    let id = publish(&app, &root, &advisory("1.1.0", "2.0.0", "Details.")).await;
    let notice = format!(
        r#"Affected by <a href="/advisories/{id}">{id}</a> (high): Fetches follow redirects to file:// URLs"#
    );

    let affected = html(&app, "/tools/web-fetch/1.5.0", StatusCode::OK).await;
    assert!(affected.contains(&notice), "{affected}");
    for unaffected in ["/tools/web-fetch/1.0.0", "/tools/web-fetch/2.0.0"] {
        let page = html(&app, unaffected, StatusCode::OK).await;
        assert!(!page.contains("Affected by"), "{unaffected}: {page}");
    }

    // Withdrawn, it is announced no more, on the page kept before.
    let mut withdrawn = advisory("1.1.0", "2.0.0", "Details.");
    withdrawn["id"] = json!(id);
    withdrawn["modified"] = json!("2026-03-01T00:00:00Z");
    withdrawn["withdrawn"] = json!("2026-03-01T00:00:00Z");
    let res = app
        .request(reqwest::Method::POST, "/api/v1/advisories")
        .bearer_auth(&root)
        .json(&withdrawn)
        .send()
        .await
        .unwrap();
    expect_status(res, StatusCode::OK).await;
    let page = html(&app, "/tools/web-fetch/1.5.0", StatusCode::OK).await;
    assert!(!page.contains("Affected by"), "{page}");
}
