use std::num::NonZeroU32;

use reqwest::{Method, StatusCode};
use serde_json::json;

use crate::support::{Backend, TestApp, backend_tests, problem};

backend_tests!(
    credential_endpoints_answer_429_with_retry_after,
    anonymous_reads_are_limited_per_address,
    limits_can_be_turned_off
);

async fn credential_endpoints_answer_429_with_retry_after(backend: Backend) {
    let Some(app) = TestApp::builder(backend)
        .rate_limits(|r| r.credentials_per_minute = NonZeroU32::new(2).unwrap())
        .build()
        .await
    else {
        return;
    };
    assert_eq!(
        app.create_account("alice", "password-123").await.status(),
        StatusCode::CREATED
    );
    let request =
        json!({"username": "alice", "password": "password-123", "name": "t", "scopes": []});
    assert_eq!(
        app.post_json("/api/v1/tokens", &request).await.status(),
        StatusCode::CREATED
    );
    let res = app.post_json("/api/v1/tokens", &request).await;
    let retry_after: u64 = res.headers()["retry-after"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!((1..=30).contains(&retry_after), "{retry_after}");
    problem(res, StatusCode::TOO_MANY_REQUESTS, "rate-limited").await;
}

async fn anonymous_reads_are_limited_per_address(backend: Backend) {
    let Some(app) = TestApp::builder(backend)
        .rate_limits(|r| r.anonymous_reads_per_minute = NonZeroU32::new(5).unwrap())
        .build()
        .await
    else {
        return;
    };
    // Two anonymous requests: the account and its token.
    let token = app.account_with_token("alice", &[]).await;
    for _ in 0..3 {
        assert_eq!(app.get("/api/v1/models").await.status(), StatusCode::OK);
    }
    let res = app.get("/api/v1/models").await;
    assert!(res.headers().contains_key("retry-after"));
    problem(res, StatusCode::TOO_MANY_REQUESTS, "rate-limited").await;
    // A token that verifies spends its own budget; the catalog's pages and
    // any header that is not a valid token spend the address's.
    let with = |auth: &str| {
        app.request(Method::GET, "/api/v1/models")
            .header("authorization", auth.to_owned())
            .send()
    };
    assert_eq!(
        with(&format!("Bearer {token}")).await.unwrap().status(),
        StatusCode::OK
    );
    for garbage in ["Bearer garbage", "Basic YTpi", "Bearer "] {
        let res = with(garbage).await.unwrap();
        problem(res, StatusCode::TOO_MANY_REQUESTS, "rate-limited").await;
    }
    assert_eq!(
        app.get("/search?q=x").await.status(),
        StatusCode::TOO_MANY_REQUESTS
    );
    // Operational endpoints are never counted.
    assert_eq!(app.get("/healthz").await.status(), StatusCode::OK);
}

async fn limits_can_be_turned_off(backend: Backend) {
    let Some(app) = TestApp::builder(backend)
        .rate_limits(|r| {
            r.enabled = false;
            r.anonymous_reads_per_minute = NonZeroU32::new(1).unwrap();
        })
        .build()
        .await
    else {
        return;
    };
    for _ in 0..5 {
        assert_eq!(app.get("/api/v1/models").await.status(), StatusCode::OK);
    }
}
