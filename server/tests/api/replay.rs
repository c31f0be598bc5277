//! The catalog's `/replay` viewer over real HTTP: a multipart upload in, a
//! server-rendered timeline out; every bound that protects it.

use std::num::NonZeroU32;

use reqwest::{Method, StatusCode};

use crate::support::{Backend, TestApp, backend_tests};

backend_tests!(
    an_uploaded_log_comes_back_as_a_timeline,
    bad_large_and_empty_uploads_are_refused_with_a_page,
    replays_are_rate_limited_per_address,
);

const BOUNDARY: &str = "----agentlang-test-boundary";

fn multipart(field: &str, file_name: &str, content: &[u8]) -> Vec<u8> {
    let mut body = format!(
        "--{BOUNDARY}\r\nContent-Disposition: form-data; name=\"{field}\"; filename=\"{file_name}\"\r\nContent-Type: application/x-ndjson\r\n\r\n"
    )
    .into_bytes();
    body.extend_from_slice(content);
    body.extend_from_slice(format!("\r\n--{BOUNDARY}--\r\n").as_bytes());
    body
}

async fn post(app: &TestApp, body: Vec<u8>) -> reqwest::Response {
    app.request(Method::POST, "/replay")
        .header(
            "content-type",
            format!("multipart/form-data; boundary={BOUNDARY}"),
        )
        .body(body)
        .send()
        .await
        .unwrap()
}

const LOG: &str = r#"{"type":"agent.delegate","timestamp":"2025-01-29T10:00:00Z","from":"orchestrator","to":"researcher","task":"Find <papers>"}
{"type":"tool.call","timestamp":"2025-01-29T10:00:01Z","agent_id":"researcher","tool":"web_search","input":{"query":"q"},"call_id":"a"}
{"type":"tool.result","timestamp":"2025-01-29T10:00:03Z","call_id":"a","output":{"n":3},"duration_ms":2000}
{"type":"tool.call","timestamp":"2025-01-29T10:00:04Z","agent_id":"researcher","tool":"web_fetch","call_id":"b"}
{"type":"tool.result","timestamp":"2025-01-29T10:00:05Z","call_id":"b","error":"404 Not Found"}
{"type":"context.compact","timestamp":"2025-01-29T10:00:06Z","agent_id":"researcher","strategy":"summarize","tokens_before":90000,"tokens_after":12000}
"#;

async fn an_uploaded_log_comes_back_as_a_timeline(backend: Backend) {
    let Some(app) = TestApp::builder(backend).build().await else {
        return;
    };
    let form = app.get("/replay").await;
    assert_eq!(form.status(), StatusCode::OK);
    assert!(
        form.headers()["content-security-policy"]
            .to_str()
            .unwrap()
            .starts_with("default-src 'self'")
    );
    let html = form.text().await.unwrap();
    assert!(html.contains(r#"enctype="multipart/form-data""#), "{html}");
    assert!(
        !html.contains("<script>") && !html.contains("style="),
        "{html}"
    );

    let res = post(&app, multipart("events", "session.jsonl", LOG.as_bytes())).await;
    assert_eq!(res.status(), StatusCode::OK);
    let html = res.text().await.unwrap();
    assert!(html.contains("session.jsonl: 6 events, 2 agents"), "{html}");
    // One lane per agent, in order of appearance.
    let heads: Vec<&str> = html
        .match_indices(r#"<th scope="col" class="lane-head">"#)
        .map(|(i, m)| {
            let rest = &html[i + m.len()..];
            &rest[..rest.find('<').unwrap()]
        })
        .collect();
    assert_eq!(heads, ["orchestrator", "researcher"]);
    // The delegation is an arrow from lane 0 into lane 1.
    assert!(
        html.contains("lane-cell arrow arrow-from arrow-right"),
        "{html}"
    );
    assert!(
        html.contains("lane-cell arrow arrow-to arrow-right event-cell"),
        "{html}"
    );
    // Calls paired with results and durations; the failure highlighted.
    assert!(html.contains("(2000 ms)"), "{html}");
    assert!(
        html.contains("<strong>Error:</strong> 404 Not Found"),
        "{html}"
    );
    assert_eq!(html.matches(r#"class="event-row is-error""#).count(), 1);
    assert!(html.contains("90000 → 12000 tokens"), "{html}");
    // Escaped, never markup.
    assert!(
        html.contains("Find &#60;papers&#62;") || html.contains("Find &lt;papers&gt;"),
        "{html}"
    );
}

async fn bad_large_and_empty_uploads_are_refused_with_a_page(backend: Backend) {
    let Some(app) = TestApp::builder(backend).build().await else {
        return;
    };
    let res = post(
        &app,
        multipart(
            "events",
            "bad.jsonl",
            br#"{"type":"tool.result","timestamp":"2025-01-29T10:00:00Z"}"#,
        ),
    )
    .await;
    assert_eq!(res.status(), StatusCode::UNPROCESSABLE_ENTITY);
    let html = res.text().await.unwrap();
    assert!(html.contains("bad.jsonl cannot be replayed"), "{html}");
    assert!(html.contains("events[0]"), "{html}");

    let big = vec![b' '; 1024 * 1024 + 1];
    let res = post(&app, multipart("events", "big.jsonl", &big)).await;
    assert_eq!(res.status(), StatusCode::PAYLOAD_TOO_LARGE);
    assert!(
        res.text()
            .await
            .unwrap()
            .contains("larger than 1048576 bytes")
    );

    let res = post(&app, multipart("other", "x.txt", b"hello")).await;
    assert_eq!(res.status(), StatusCode::BAD_REQUEST);
    assert!(res.text().await.unwrap().contains("choose an events file"));

    // Too many events, each one small.
    let line =
        r#"{"type":"agent.think","timestamp":"2025-01-29T10:00:00Z","agent_id":"a","content":"x"}"#;
    let many = vec![line; 5_001].join("\n");
    let res = post(&app, multipart("events", "many.jsonl", many.as_bytes())).await;
    assert_eq!(res.status(), StatusCode::UNPROCESSABLE_ENTITY);
    assert!(
        res.text()
            .await
            .unwrap()
            .contains("at most 5000 are accepted")
    );
}

async fn replays_are_rate_limited_per_address(backend: Backend) {
    let Some(app) = TestApp::builder(backend)
        .rate_limits(|r| r.expensive_per_minute = NonZeroU32::new(2).unwrap())
        .build()
        .await
    else {
        return;
    };
    for _ in 0..2 {
        let res = post(&app, multipart("events", "s.jsonl", LOG.as_bytes())).await;
        assert_eq!(res.status(), StatusCode::OK);
    }
    let res = post(&app, multipart("events", "s.jsonl", LOG.as_bytes())).await;
    assert_eq!(res.status(), StatusCode::TOO_MANY_REQUESTS);
    assert!(res.text().await.unwrap().contains("too many replays"));
}
