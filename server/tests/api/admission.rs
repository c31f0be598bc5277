//! What a client may hold at one moment: requests in flight per address,
//! request bodies in memory, upload slots (taken once a manifest checked
//! out, a share kept for established publishers), an upload's least rate,
//! and how often one version may be yanked and unyanked.

use std::time::Duration;

use reqwest::StatusCode;
use serde_json::json;
use tokio::{
    io::{AsyncReadExt, AsyncWriteExt},
    net::TcpStream,
};

use crate::{
    publish::{publish, published, publisher, tool},
    support::{Backend, TestApp, backend_tests, problem},
};

backend_tests!(
    an_address_has_its_share_of_requests_in_flight,
    request_bodies_share_one_budget,
    uploads_that_never_send_a_manifest_hold_no_slot,
    an_upload_must_arrive_at_the_least_rate,
    a_version_may_change_a_few_times_a_minute,
);

/// Opens a request whose body never ends: `declared` bytes announced, a
/// few sent. It holds its place in flight until the stream is dropped.
async fn stalled(app: &TestApp, path: &str, token: Option<&str>, declared: usize) -> TcpStream {
    let mut stream = TcpStream::connect(app.url.trim_start_matches("http://"))
        .await
        .unwrap();
    let auth = token.map_or(String::new(), |t| format!("Authorization: Bearer {t}\r\n"));
    let head = format!(
        "POST {path} HTTP/1.1\r\nHost: registry\r\n{auth}Content-Type: application/json\r\n\
         Content-Length: {declared}\r\n\r\n"
    );
    stream.write_all(head.as_bytes()).await.unwrap();
    stream.write_all(b"{\"to").await.unwrap();
    stream
}

/// The status line's code of what a stalled request was answered, if it
/// was answered within `within`.
async fn answered(stream: &mut TcpStream, within: Duration) -> Option<u16> {
    let mut response = vec![0u8; 4096];
    let n = tokio::time::timeout(within, stream.read(&mut response))
        .await
        .ok()?
        .ok()?;
    String::from_utf8_lossy(&response[..n])
        .strip_prefix("HTTP/1.1 ")
        .and_then(|rest| rest.get(..3))
        .and_then(|code| code.parse().ok())
}

async fn an_address_has_its_share_of_requests_in_flight(backend: Backend) {
    let Some(app) = TestApp::builder(backend)
        .limits(|l| l.max_requests_per_address = 2)
        .build()
        .await
    else {
        return;
    };
    let mut held = Vec::new();
    for _ in 0..2 {
        held.push(stalled(&app, "/api/v1/resolve", None, 1_000).await);
    }
    // Let both reach the server and be admitted.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let res = app.get("/api/v1/models").await;
    assert!(res.headers().contains_key("retry-after"));
    problem(res, StatusCode::TOO_MANY_REQUESTS, "rate-limited").await;
    // Monitors are never turned away.
    assert_eq!(app.get("/healthz").await.status(), StatusCode::OK);
    // What ends gives its place back.
    drop(held);
    let mut ok = false;
    for _ in 0..50 {
        if app.get("/api/v1/models").await.status() == StatusCode::OK {
            ok = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(ok, "the address's places came back");
}

async fn request_bodies_share_one_budget(backend: Backend) {
    // An eighth of 1 MiB per address: 128 KiB.
    let Some(app) = TestApp::builder(backend)
        .limits(|l| l.body_budget_bytes = 1024 * 1024)
        .build()
        .await
    else {
        return;
    };
    let big = json!({"tools": {"x": "*"}, "pad": "x".repeat(200 * 1024)}).to_string();
    let res = app
        .request(reqwest::Method::POST, "/api/v1/resolve")
        .header("content-type", "application/json")
        .body(big)
        .send()
        .await
        .unwrap();
    // Past its address's share: the address's own doing, so 429 (the
    // process's whole budget spent by many is 503: app::admission's tests).
    assert_eq!(res.headers()["connection"], "close");
    assert!(res.headers().contains_key("retry-after"));
    problem(res, StatusCode::TOO_MANY_REQUESTS, "rate-limited").await;
    // A body within the share is read, and the budget it held came back:
    // this one is answered on what it says.
    let res = app
        .request(reqwest::Method::POST, "/api/v1/resolve")
        .header("content-type", "application/json")
        .body(json!({"tools": {"nowhere": "*"}}).to_string())
        .send()
        .await
        .unwrap();
    problem(res, StatusCode::UNPROCESSABLE_ENTITY, "validation-failed").await;
}

async fn uploads_that_never_send_a_manifest_hold_no_slot(backend: Backend) {
    // Four slots (one kept for established publishers), eight uploads in
    // flight; four an account, five an address (all test traffic comes
    // from one).
    let Some(app) = TestApp::builder(backend)
        .limits(|l| {
            l.max_concurrent_uploads = 4;
            l.max_concurrent_uploads_per_account = 4;
            l.max_concurrent_uploads_per_address = 5;
        })
        .build()
        .await
    else {
        return;
    };
    let mallory = app
        .account_with_token("mallory", &["publish", "keys"])
        .await;
    // Four uploads that never get past a gzip header: no manifest, so no
    // verification slot.
    let mut trickles = Vec::new();
    for _ in 0..4 {
        let mut stream = TcpStream::connect(app.url.trim_start_matches("http://"))
            .await
            .unwrap();
        let head = format!(
            "POST /api/v1/publish HTTP/1.1\r\nHost: registry\r\nAuthorization: Bearer {mallory}\r\n\
             Content-Type: application/octet-stream\r\nContent-Length: 100000\r\n\r\n"
        );
        stream.write_all(head.as_bytes()).await.unwrap();
        stream.write_all(&[0x1f, 0x8b, 8, 0]).await.unwrap();
        trickles.push(stream);
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    // The account has its four uploads in flight...
    let res = publish(&app, &mallory, vec![0x1f, 0x8b]).await;
    problem(res, StatusCode::TOO_MANY_REQUESTS, "rate-limited").await;
    // ...but they hold no slot: a publisher who sends gets one.
    let alice = publisher(&app, "alice").await;
    published(&app, &alice.token, tool(&alice.key, "calc", "1.0.0", &[])).await;
    drop(trickles);
}

async fn an_upload_must_arrive_at_the_least_rate(backend: Backend) {
    let Some(app) = TestApp::builder(backend)
        .limits(|l| {
            l.upload_min_bytes_per_sec = 1024;
            l.upload_rate_grace = Duration::from_secs(1);
        })
        .build()
        .await
    else {
        return;
    };
    let alice = publisher(&app, "alice").await;
    let mut stream = TcpStream::connect(app.url.trim_start_matches("http://"))
        .await
        .unwrap();
    let head = format!(
        "POST /api/v1/publish HTTP/1.1\r\nHost: registry\r\nAuthorization: Bearer {}\r\n\
         Content-Type: application/octet-stream\r\nContent-Length: 100000\r\n\r\n",
        alice.token
    );
    stream.write_all(head.as_bytes()).await.unwrap();
    // 100 bytes and silence: due after the grace plus 0.1 s, long before
    // the 30 s idle timeout.
    stream.write_all(&[0u8; 100]).await.unwrap();
    let started = std::time::Instant::now();
    assert_eq!(
        answered(&mut stream, Duration::from_secs(10)).await,
        Some(408)
    );
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "cut by the rate, not the idle timeout"
    );
    // A publish at any honest speed is not.
    published(&app, &alice.token, tool(&alice.key, "calc", "1.0.0", &[])).await;
}

async fn a_version_may_change_a_few_times_a_minute(backend: Backend) {
    let Some(app) = TestApp::builder(backend)
        .default_rate_limits(|_| {})
        .build()
        .await
    else {
        return;
    };
    let alice = publisher(&app, "alice").await;
    published(&app, &alice.token, tool(&alice.key, "calc", "1.0.0", &[])).await;
    published(&app, &alice.token, tool(&alice.key, "calc", "1.1.0", &[])).await;
    let change = |version: &'static str, op: &'static str| {
        app.request(
            reqwest::Method::POST,
            &format!("/api/v1/tools/calc/{version}/{op}"),
        )
        .bearer_auth(&alice.token)
        .json(&json!({}))
        .send()
    };
    for op in ["yank", "unyank", "yank", "unyank"] {
        assert_eq!(change("1.0.0", op).await.unwrap().status(), StatusCode::OK);
    }
    // Asking for the state it has changes nothing and is not counted.
    assert_eq!(
        change("1.0.0", "unyank").await.unwrap().status(),
        StatusCode::OK
    );
    let res = change("1.0.0", "yank").await.unwrap();
    assert!(res.headers().contains_key("retry-after"));
    problem(res, StatusCode::TOO_MANY_REQUESTS, "rate-limited").await;
    // Another version has its own budget.
    assert_eq!(
        change("1.1.0", "yank").await.unwrap().status(),
        StatusCode::OK
    );
}
