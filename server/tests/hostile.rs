//! Hostile traffic against the real binary, on SQLite + files and on
//! PostgreSQL + S3: every attack of the hardening issue, each answered with
//! the right status, in bounded time, without taking memory or the other
//! clients down; backends that go away and come back; SIGKILL in the middle
//! of a publish.
//!
//! Time bounds here are generous (a loaded two-core machine, a debug build):
//! they catch a hang or a quadratic blow-up, not a slow second. The figures
//! at load are `deploy/bench/attacks.py`'s.

use agentlang_registry_testing as support;

use std::{
    io::{Read, Write},
    net::TcpStream,
    sync::{
        Arc,
        atomic::{AtomicBool, AtomicU64, Ordering},
    },
    time::{Duration, Instant},
};

use app::settings::parse_network;
use futures_util::StreamExt;
use reqwest::{Client, StatusCode};
use serde_json::{Value, json};
use support::{
    Backend, TestApp,
    app::TestAppBuilder,
    backend_tests,
    process::RssSampler,
    proxy::{Flow, TcpProxy},
    seed::tool_container,
};

const MIB: u64 = 1024 * 1024;

/// A registry process for one test: production's rate limits, two workers,
/// and a fixed issuer, so tokens outlive a restart on another port.
fn target(backend: Backend) -> TestAppBuilder {
    TestApp::builder(backend)
        .process()
        .workers(2)
        .public_url("http://registry.test")
        .default_rate_limits(|_| {})
}

fn per_minute(n: u32) -> std::num::NonZeroU32 {
    std::num::NonZeroU32::new(n).unwrap()
}

backend_tests!(
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    a_batch_of_millions_is_refused_after_its_limit,
    a_payload_full_of_addresses_is_scanned_in_linear_time,
    a_resolve_naming_90000_models_is_refused_before_any_work,
    container_metadata_is_bounded_in_total,
    silent_and_slow_bodies_are_cut_off,
    invalid_tokens_spend_the_anonymous_budget,
    search_resolve_and_agent_messages_are_limited,
    passwords_are_limited_per_username_and_forwarded_address,
    uploads_in_flight_are_bounded_per_account,
    sigkill_mid_upload_restarts_clean,
);

/// While it runs, an innocent client asks `/healthz` every 50 ms; the
/// slowest answer (or failure) it saw is what a test asserts.
struct Innocent {
    stop: Arc<AtomicBool>,
    slowest_ms: Arc<AtomicU64>,
    task: tokio::task::JoinHandle<()>,
}

impl Innocent {
    fn start(url: String) -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let slowest_ms = Arc::new(AtomicU64::new(0));
        let (flag, slowest) = (Arc::clone(&stop), Arc::clone(&slowest_ms));
        let task = tokio::spawn(async move {
            let client = Client::builder()
                .timeout(Duration::from_secs(30))
                .build()
                .unwrap();
            while !flag.load(Ordering::Relaxed) {
                let started = Instant::now();
                let ok = client
                    .get(&url)
                    .send()
                    .await
                    .is_ok_and(|r| r.status() == StatusCode::OK);
                let ms = if ok {
                    started.elapsed().as_millis() as u64
                } else {
                    u64::MAX
                };
                slowest.fetch_max(ms, Ordering::Relaxed);
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        });
        Self {
            stop,
            slowest_ms,
            task,
        }
    }

    /// The slowest `/healthz` answer, in ms (`u64::MAX`: one failed).
    async fn slowest_ms(self) -> u64 {
        self.stop.store(true, Ordering::Relaxed);
        self.task.await.unwrap();
        self.slowest_ms.load(Ordering::Relaxed)
    }
}

/// Generous bounds for a loaded machine.
const INNOCENT_MS: u64 = 3_000;
const RSS_GROWTH: u64 = 128 * MIB;

/// Runs `attack` with an innocent client and an RSS sampler around it;
/// asserts the innocent was served and memory stayed bounded, and returns
/// what the attack returned with how long it took.
async fn under_watch<T>(
    target: &TestApp,
    attack: impl std::future::Future<Output = T>,
) -> (T, Duration) {
    let before = target.rss_kib() * 1024;
    let sampler = RssSampler::start(target.pid());
    let innocent = Innocent::start(target.path("/healthz"));
    let started = Instant::now();
    let outcome = attack.await;
    let took = started.elapsed();
    let slowest = innocent.slowest_ms().await;
    let peak = sampler.peak_kib() * 1024;
    assert!(
        slowest <= INNOCENT_MS,
        "an innocent /healthz waited {slowest} ms during the attack"
    );
    assert!(
        peak.saturating_sub(before) <= RSS_GROWTH,
        "RSS grew from {} MiB to {} MiB",
        before / MIB,
        peak / MIB
    );
    (outcome, took)
}

// ---------------------------------------------------------------------------
// Bounded work per request

async fn a_batch_of_millions_is_refused_after_its_limit(backend: Backend) {
    let Some(t) = target(backend).build().await else {
        return;
    };
    // 5.2 million items in 10.4 MB: within the spec's byte limit.
    let mut body = Vec::with_capacity(10_400_002);
    body.push(b'[');
    for i in 0..5_200_000 {
        if i > 0 {
            body.push(b',');
        }
        body.push(b'0');
    }
    body.push(b']');
    let post = t
        .client
        .post(t.path("/moltspeak/v0.1/batch"))
        .header("content-type", "application/json")
        .body(body)
        .send();
    let (res, took) = under_watch(&t, post).await;
    let problem = support::problem(
        res.unwrap(),
        StatusCode::UNPROCESSABLE_ENTITY,
        "validation-failed",
    )
    .await;
    assert_eq!(problem["errors"][0]["field"], "batch", "{problem}");
    assert!(
        problem["errors"][0]["message"]
            .as_str()
            .unwrap()
            .contains("at most 100"),
        "{problem}"
    );
    assert!(took < Duration::from_secs(30), "{took:?}");

    // A batch is rate-limited whole: past the budget, one 429, no answers.
    let batch: Vec<Value> = (0..100)
        .map(|i| json!({"v": "0.1", "id": format!("m{i}"), "op": "hello", "p": {}, "cls": "pub"}))
        .collect();
    let mut statuses = Vec::new();
    for _ in 0..7 {
        let res = t
            .client
            .post(t.path("/moltspeak/v0.1/batch"))
            .json(&batch)
            .send()
            .await
            .unwrap();
        statuses.push(res.status());
    }
    // 600 messages a minute: six batches of a hundred, then refused whole.
    assert_eq!(statuses[..6], [StatusCode::OK; 6], "{statuses:?}");
    let res = t
        .client
        .post(t.path("/moltspeak/v0.1/batch"))
        .json(&batch)
        .send()
        .await
        .unwrap();
    assert!(res.headers().contains_key("retry-after"));
    support::problem(res, StatusCode::TOO_MANY_REQUESTS, "rate-limited").await;
}

async fn a_payload_full_of_addresses_is_scanned_in_linear_time(backend: Backend) {
    let Some(t) = target(backend).build().await else {
        return;
    };
    // 144,000 addresses in 1 MB: quadratic before, four seconds of a
    // worker in a release build.
    let text = "a@b.cc ".repeat(140_000);
    let message = json!({
        "v": "0.1", "id": "pii-1", "op": "query", "cls": "pub",
        "from": {"agent": "mallory"}, "to": {"agent": "agentlang-registry"},
        "p": {"domain": "registry", "intent": "search", "params": {"q": text}},
    });
    let post = t
        .client
        .post(t.path("/moltspeak/v0.1/message"))
        .json(&message)
        .send();
    let (res, took) = under_watch(&t, post).await;
    let res = res.unwrap();
    assert_eq!(res.status(), StatusCode::OK);
    let answer: Value = res.json().await.unwrap();
    assert_eq!(answer["op"], "error", "{answer}");
    assert_eq!(answer["p"]["code"], "E_CONSENT", "{answer}");
    // The findings stop at the cap: the answer stays small.
    assert_eq!(answer["p"]["detected_pii"]["count"], 1000, "{answer}");
    assert!(took < Duration::from_secs(30), "{took:?}");
}

async fn a_resolve_naming_90000_models_is_refused_before_any_work(backend: Backend) {
    let Some(t) = target(backend).build().await else {
        return;
    };
    let models: Vec<String> = (0..90_000).map(|i| format!("m{i}")).collect();
    let post = t
        .client
        .post(t.path("/api/v1/resolve"))
        .json(&json!({"tools": {}, "models": models}))
        .send();
    let (res, took) = under_watch(&t, post).await;
    let problem = support::problem(
        res.unwrap(),
        StatusCode::UNPROCESSABLE_ENTITY,
        "validation-failed",
    )
    .await;
    assert_eq!(problem["errors"][0]["field"], "models", "{problem}");
    assert!(
        problem["errors"][0]["message"]
            .as_str()
            .unwrap()
            .contains("at most 32"),
        "{problem}"
    );
    assert_eq!(problem["errors"].as_array().unwrap().len(), 1);
    assert!(took < Duration::from_secs(10), "{took:?}");
}

/// A container that is never valid (it has no manifest) whose `count`
/// top-level YAML members of 1 MiB each are what the reader keeps in
/// memory. A repeated block with a little noise every 256 bytes compresses
/// about 30:1, under the gzip-bomb ratio.
fn kept_members_container(count: usize) -> Vec<u8> {
    let mut state = 7u64;
    let mut next = move || {
        state = state
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1);
        b'a' + ((state >> 33) % 26) as u8
    };
    let block: Vec<u8> = (0..20 * 1024).map(|_| next()).collect();
    let mut archive = tar::Builder::new(Vec::new());
    for i in 0..count {
        let mut data: Vec<u8> = block.iter().copied().cycle().take(MIB as usize).collect();
        for k in (0..data.len()).step_by(256) {
            for b in &mut data[k..k + 8] {
                *b = next();
            }
        }
        let mut header = tar::Header::new_ustar();
        header.set_size(data.len() as u64);
        header.set_mode(0o644);
        header.set_cksum();
        archive
            .append_data(&mut header, format!("m{i:04}.yaml"), data.as_slice())
            .unwrap();
    }
    let tar = archive.into_inner().unwrap();
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gz.write_all(&tar).unwrap();
    gz.finish().unwrap()
}

async fn container_metadata_is_bounded_in_total(backend: Backend) {
    let Some(t) = target(backend).build().await else {
        return;
    };
    let token = t.account_with_token("mallory", &["publish"]).await;
    // 100 MiB of members the reader would keep, 4 uploads at once.
    let body = bytes::Bytes::from(kept_members_container(100));
    assert!(body.len() < 10 * MIB as usize, "{} bytes", body.len());
    let uploads = futures_util::future::join_all((0..4).map(|_| {
        t.client
            .post(t.path("/api/v1/publish"))
            .bearer_auth(&token)
            .header("content-type", "application/octet-stream")
            .body(body.clone())
            .send()
    }));
    let (answers, took) = under_watch(&t, uploads).await;
    for res in answers {
        let problem = support::problem(
            res.unwrap(),
            StatusCode::UNPROCESSABLE_ENTITY,
            "container-invalid",
        )
        .await;
        assert!(
            problem["detail"].as_str().unwrap().contains("in all"),
            "{problem}"
        );
    }
    assert!(took < Duration::from_secs(60), "{took:?}");
    assert_eq!(t.spool_files(), 0);
}

/// Reads until the server answers or closes; the answer's first line.
fn read_answer(stream: &mut TcpStream, within: Duration) -> String {
    stream.set_read_timeout(Some(within)).unwrap();
    let mut buf = vec![0u8; 4096];
    let mut got = Vec::new();
    loop {
        match stream.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => {
                got.extend_from_slice(&buf[..n]);
                if got.windows(4).any(|w| w == b"\r\n\r\n") {
                    break;
                }
            }
            Err(e) => panic!("no answer within {within:?}: {e}"),
        }
    }
    String::from_utf8_lossy(&got)
        .lines()
        .next()
        .unwrap_or_default()
        .to_owned()
}

/// Whether the server closed the connection (a read gets end of stream).
fn closed_by_server(stream: &mut TcpStream, within: Duration) -> bool {
    stream.set_read_timeout(Some(within)).unwrap();
    let mut buf = vec![0u8; 65536];
    loop {
        match stream.read(&mut buf) {
            Ok(0) => return true,
            Ok(_) => {}
            Err(_) => return false,
        }
    }
}

async fn silent_and_slow_bodies_are_cut_off(backend: Backend) {
    let Some(t) = target(backend)
        .limits(|l| {
            l.body_idle_timeout = Duration::from_secs(2);
            l.request_timeout = Duration::from_secs(4);
        })
        .build()
        .await
    else {
        return;
    };
    let token = t.account_with_token("slowpoke", &["publish"]).await;
    let address = t.url.trim_start_matches("http://").to_owned();
    let token_header = format!("Authorization: Bearer {token}\r\n");
    let (silent, slow) = tokio::task::spawn_blocking(move || {
        // A body that goes silent after its first byte: 408 after the idle
        // timeout, connection closed, spool file gone.
        let silent_at = |path: &str, extra: &str, media_type: &str| {
            let mut s = TcpStream::connect(&address).unwrap();
            write!(
                s,
                "POST {path} HTTP/1.1\r\nHost: x\r\n{extra}Content-Type: {media_type}\r\nContent-Length: 100000\r\n\r\n"
            )
            .unwrap();
            s.write_all(b"{").unwrap();
            let started = Instant::now();
            let status = read_answer(&mut s, Duration::from_secs(20));
            (status, started.elapsed(), closed_by_server(&mut s, Duration::from_secs(5)))
        };
        let silent = [
            silent_at("/api/v1/resolve", "", "application/json"),
            silent_at("/api/v1/publish", &token_header, "application/octet-stream"),
            silent_at("/moltspeak/v0.1/message", "", "application/json"),
        ];
        // A body that trickles a byte a second, never silent for long: cut
        // off at the request's total time.
        let mut s = TcpStream::connect(&address).unwrap();
        write!(
            s,
            "POST /api/v1/resolve HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n"
        )
        .unwrap();
        let started = Instant::now();
        let mut slow_status = String::new();
        for _ in 0..20 {
            if s.write_all(b" ").is_err() {
                break;
            }
            std::thread::sleep(Duration::from_secs(1));
            s.set_nonblocking(true).unwrap();
            let mut buf = [0u8; 1024];
            if let Ok(n) = s.read(&mut buf)
                && n > 0
            {
                slow_status = String::from_utf8_lossy(&buf[..n]).lines().next().unwrap().to_owned();
                break;
            }
            s.set_nonblocking(false).unwrap();
        }
        (silent, (slow_status, started.elapsed()))
    })
    .await
    .unwrap();
    for (status, took, closed) in silent {
        assert!(status.starts_with("HTTP/1.1 408"), "{status}");
        assert!(
            took >= Duration::from_secs(1) && took < Duration::from_secs(15),
            "{took:?}"
        );
        assert!(closed, "the connection stays open after 408");
    }
    let (status, took) = slow;
    assert!(
        status.starts_with("HTTP/1.1 408"),
        "{status:?} after {took:?}"
    );
    assert!(took < Duration::from_secs(12), "{took:?}");
    // The cut-off publish released its spool file.
    let deadline = Instant::now() + Duration::from_secs(10);
    while t.spool_files() > 0 && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(t.spool_files(), 0);
    // And the registry serves.
    let res = t.client.get(t.path("/api/v1/models")).send().await.unwrap();
    assert_eq!(res.status(), StatusCode::OK);
}

// ---------------------------------------------------------------------------
// Rate limits that hold

async fn invalid_tokens_spend_the_anonymous_budget(backend: Backend) {
    let Some(t) = target(backend)
        .rate_limits(|r| r.anonymous_reads_per_minute = per_minute(10))
        .build()
        .await
    else {
        return;
    };
    let mut statuses = Vec::new();
    for auth in [
        "Bearer garbage",
        "Bearer eyJhbGciOiJIUzI1NiJ9.e30.c2lnbmF0dXJl",
        "Basic YWxpY2U6cGFzc3dvcmQ=",
        "",
    ]
    .iter()
    .cycle()
    .take(14)
    {
        let mut request = t.client.get(t.path("/api/v1/models"));
        if !auth.is_empty() {
            request = request.header("authorization", *auth);
        }
        statuses.push(request.send().await.unwrap().status());
    }
    let refused = statuses
        .iter()
        .filter(|s| **s == StatusCode::TOO_MANY_REQUESTS)
        .count();
    assert_eq!(refused, 4, "{statuses:?}");
    assert!(
        statuses[..10].iter().all(|s| *s == StatusCode::OK),
        "{statuses:?}"
    );
}

async fn search_resolve_and_agent_messages_are_limited(backend: Backend) {
    let Some(t) = target(backend)
        .rate_limits(|r| {
            r.expensive_per_minute = per_minute(4);
            r.agent_messages_per_minute = per_minute(3);
        })
        .build()
        .await
    else {
        return;
    };
    let mut statuses = Vec::new();
    for i in 0..6 {
        let res = match i % 3 {
            0 => t.client.get(t.path("/search?q=web")).send().await,
            1 => t.client.get(t.path("/api/v1/search?q=web")).send().await,
            _ => {
                t.client
                    .post(t.path("/api/v1/resolve"))
                    .json(&json!({"tools": {}}))
                    .send()
                    .await
            }
        };
        statuses.push(res.unwrap().status());
    }
    assert!(statuses[..4].iter().all(|s| s.is_success()), "{statuses:?}");
    assert_eq!(statuses[4..], [StatusCode::TOO_MANY_REQUESTS; 2]);
    // Catalog pages are limited by the general budget: ordinary reads
    // still go through.
    let res = t.client.get(t.path("/")).send().await.unwrap();
    assert_eq!(res.status(), StatusCode::OK);

    // Agent messages: three answered, then the protocol's own refusal.
    let query = json!({"v": "0.1", "id": "q", "op": "query", "cls": "pub",
        "p": {"domain": "registry", "intent": "search", "params": {"q": "x"}}});
    let mut ops = Vec::new();
    for _ in 0..4 {
        let answer: Value = t
            .client
            .post(t.path("/moltspeak/v0.1/message"))
            .json(&query)
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        ops.push(format!(
            "{} {}",
            answer["op"].as_str().unwrap_or_default(),
            answer["p"]["code"].as_str().unwrap_or_default()
        ));
    }
    assert_eq!(
        ops,
        ["respond ", "respond ", "respond ", "error E_RATE_LIMIT"]
    );
}

async fn passwords_are_limited_per_username_and_forwarded_address(backend: Backend) {
    let Some(t) = target(backend)
        .rate_limits(|r| {
            r.credentials_per_minute = per_minute(4);
            r.logins_per_username_per_minute = per_minute(2);
            r.trusted_proxies = vec![parse_network("127.0.0.1").unwrap()];
        })
        .build()
        .await
    else {
        return;
    };
    let attempt = |username: &str, client_ip: &str| {
        t.client
            .post(t.path("/api/v1/tokens"))
            .header("x-forwarded-for", client_ip.to_owned())
            .json(&json!({"username": username, "password": "wrong-password", "name": "t", "scopes": []}))
            .send()
    };
    // One address guessing at one name runs out of tries at it, and only
    // itself: another address (the name's holder, say) is still answered,
    // so nobody can lock an account by failing to sign in to it.
    let mut statuses = Vec::new();
    for _ in 0..3 {
        statuses.push(attempt("victim", "203.0.113.1").await.unwrap().status());
    }
    assert_eq!(
        statuses,
        [
            StatusCode::UNAUTHORIZED,
            StatusCode::UNAUTHORIZED,
            StatusCode::TOO_MANY_REQUESTS
        ]
    );
    assert_eq!(
        attempt("victim", "203.0.113.2").await.unwrap().status(),
        StatusCode::UNAUTHORIZED
    );
    // One forwarded address trying many names: its own budget runs out
    // (three attempts already spent above), other addresses keep theirs.
    let mut statuses = Vec::new();
    for name in ["u1", "u2", "u3", "u4"] {
        statuses.push(attempt(name, "203.0.113.1").await.unwrap().status());
    }
    assert_eq!(statuses[3], StatusCode::TOO_MANY_REQUESTS, "{statuses:?}");
    assert_eq!(
        attempt("u5", "198.51.100.7").await.unwrap().status(),
        StatusCode::UNAUTHORIZED
    );
    // IPv6 clients share their /64's budget.
    let mut statuses = Vec::new();
    for (i, name) in ["v1", "v2", "v3", "v4", "v5"].iter().enumerate() {
        let ip = format!("2001:db8:7:7::{}", i + 1);
        statuses.push(attempt(name, &ip).await.unwrap().status());
    }
    assert_eq!(statuses[4], StatusCode::TOO_MANY_REQUESTS, "{statuses:?}");
}

async fn uploads_in_flight_are_bounded_per_account(backend: Backend) {
    let Some(t) = target(backend)
        .limits(|l| l.max_concurrent_uploads_per_account = 1)
        .build()
        .await
    else {
        return;
    };
    let token = t.account_with_token("busy", &["publish", "keys"]).await;
    let key = t.register_key(&token).await;
    let container = tool_container(&key, "slow_tool", "1.0.0", &[], "# slow", 256 * 1024);
    // One upload trickles in...
    let chunks: Vec<bytes::Bytes> = container
        .chunks(16 * 1024)
        .map(bytes::Bytes::copy_from_slice)
        .collect();
    let body = futures_util::stream::iter(chunks).then(|c| async move {
        tokio::time::sleep(Duration::from_millis(150)).await;
        Ok::<_, std::io::Error>(c)
    });
    let slow = tokio::spawn(
        t.client
            .post(t.path("/api/v1/publish"))
            .bearer_auth(&token)
            .body(reqwest::Body::wrap_stream(body))
            .send(),
    );
    tokio::time::sleep(Duration::from_millis(500)).await;
    // ...so a second one by the same account waits its turn.
    let other = tool_container(&key, "other_tool", "1.0.0", &[], "# other", 0);
    let res = t
        .client
        .post(t.path("/api/v1/publish"))
        .bearer_auth(&token)
        .body(other.clone())
        .send()
        .await
        .unwrap();
    assert!(res.headers().contains_key("retry-after"));
    support::problem(res, StatusCode::TOO_MANY_REQUESTS, "rate-limited").await;
    let slow = slow.await.unwrap().unwrap();
    assert_eq!(slow.status(), StatusCode::CREATED);
    let res = t
        .client
        .post(t.path("/api/v1/publish"))
        .bearer_auth(&token)
        .body(other)
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::CREATED);
}

// ---------------------------------------------------------------------------
// Faults

/// A target on PostgreSQL + S3 whose database and blob store are reached
/// through proxies the test controls.
async fn behind_proxies() -> Option<(TestApp, Arc<TcpProxy>, Arc<TcpProxy>)> {
    let t = target(Backend::PostgresS3)
        .behind_proxies()
        .limits(|l| {
            l.database_timeout = Duration::from_secs(2);
            l.storage_timeout = Duration::from_secs(3);
        })
        .build()
        .await?;
    let (db, s3) = t.proxies();
    Some((t, db, s3))
}

/// Asserts a request answers 503 problem+json within `within`.
async fn unavailable(request: reqwest::RequestBuilder, within: Duration) -> Value {
    let started = Instant::now();
    let res = request.send().await.unwrap();
    let took = started.elapsed();
    assert!(took < within, "the answer took {took:?}");
    assert!(res.headers().contains_key("retry-after"));
    support::problem(res, StatusCode::SERVICE_UNAVAILABLE, "unavailable").await
}

async fn wait_until_ready(target: &TestApp, within: Duration) {
    let deadline = Instant::now() + within;
    loop {
        let res = target.client.get(target.path("/readyz")).send().await;
        if res.is_ok_and(|r| r.status() == StatusCode::OK) {
            return;
        }
        assert!(Instant::now() < deadline, "never ready again");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unreachable_database_answers_503_quickly_and_comes_back() {
    let Some((t, db, _s3)) = behind_proxies().await else {
        return;
    };
    let token = t.account_with_token("alice", &["publish", "keys"]).await;
    let key = t.register_key(&token).await;

    db.set(Flow::Cut);
    let within = Duration::from_secs(15);
    unavailable(t.client.get(t.path("/api/v1/tools/anything")), within).await;
    let problem = unavailable(t.client.get(t.path("/readyz")), within).await;
    assert_eq!(problem["detail"], "the database is unreachable");
    let body = tool_container(&key, "during_outage", "1.0.0", &[], "# x", 0);
    unavailable(
        t.client
            .post(t.path("/api/v1/publish"))
            .bearer_auth(&token)
            .body(body.clone()),
        within,
    )
    .await;
    // A database that hangs rather than refuses: the same, within the
    // configured wait for a connection.
    db.set(Flow::Frozen);
    unavailable(t.client.get(t.path("/api/v1/tools/anything")), within).await;

    // Back: served again without a restart, and the refused publish can be
    // sent again.
    db.set(Flow::Open);
    wait_until_ready(&t, Duration::from_secs(30)).await;
    let res = t
        .client
        .post(t.path("/api/v1/publish"))
        .bearer_auth(&token)
        .body(body)
        .send()
        .await
        .unwrap();
    assert_eq!(
        res.status(),
        StatusCode::CREATED,
        "{}",
        res.text().await.unwrap()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unreachable_blob_store_answers_503_and_a_publish_leaves_nothing() {
    let Some((t, _db, s3)) = behind_proxies().await else {
        return;
    };
    let token = t.account_with_token("bob", &["publish", "keys"]).await;
    let key = t.register_key(&token).await;
    let first = tool_container(&key, "stored_tool", "1.0.0", &[], "# stored", 0);
    let res = t
        .client
        .post(t.path("/api/v1/publish"))
        .bearer_auth(&token)
        .body(first)
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::CREATED);

    s3.set(Flow::Cut);
    let within = Duration::from_secs(20);
    unavailable(
        t.client
            .get(t.path("/api/v1/tools/stored_tool/1.0.0/download")),
        within,
    )
    .await;
    let problem = unavailable(t.client.get(t.path("/readyz")), within).await;
    assert_eq!(problem["detail"], "blob storage is unreachable");
    // Records come from the database: still served.
    let res = t
        .client
        .get(t.path("/api/v1/tools/stored_tool"))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::OK);
    // A publish cannot store its blob: 503, and nothing of it is visible.
    let second = tool_container(&key, "stored_tool", "1.1.0", &[], "# second", 0);
    unavailable(
        t.client
            .post(t.path("/api/v1/publish"))
            .bearer_auth(&token)
            .body(second.clone()),
        within,
    )
    .await;
    let res = t
        .client
        .get(t.path("/api/v1/tools/stored_tool/1.1.0"))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::NOT_FOUND);

    s3.set(Flow::Open);
    wait_until_ready(&t, Duration::from_secs(30)).await;
    let res = t
        .client
        .post(t.path("/api/v1/publish"))
        .bearer_auth(&token)
        .body(second)
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::CREATED);
    let res = t
        .client
        .get(t.path("/api/v1/tools/stored_tool/1.0.0/download"))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::OK);
}

// ---------------------------------------------------------------------------
// SIGKILL in the middle of a publish

/// After a crash: the version is not visible, the spool is empty, and the
/// whole container publishes.
async fn nothing_half_published(t: &TestApp, token: &str, name: &str, container: Vec<u8>) {
    assert_eq!(t.spool_files(), 0, "spool files survived a restart");
    for path in [
        format!("/api/v1/tools/{name}"),
        format!("/api/v1/tools/{name}/1.0.0"),
    ] {
        let res = t.client.get(t.path(&path)).send().await.unwrap();
        assert_eq!(res.status(), StatusCode::NOT_FOUND, "{path}");
    }
    let res = t
        .client
        .post(t.path("/api/v1/publish"))
        .bearer_auth(token)
        .body(container)
        .send()
        .await
        .unwrap();
    assert_eq!(
        res.status(),
        StatusCode::CREATED,
        "{}",
        res.text().await.unwrap()
    );
}

async fn sigkill_mid_upload_restarts_clean(backend: Backend) {
    let Some(mut t) = target(backend).build().await else {
        return;
    };
    let token = t.account_with_token("erin", &["publish", "keys"]).await;
    let key = t.register_key(&token).await;
    let big = tool_container(&key, "big_tool", "1.0.0", &[], "# big", 4 * MIB as usize);
    // A slow chunked upload, spooling when the process dies.
    let (body, mut sent_rx) = support::proxy::trickled_body(&big);
    let upload = tokio::spawn(
        t.client
            .post(t.path("/api/v1/publish"))
            .bearer_auth(&token)
            .body(body)
            .send(),
    );
    while sent_rx.recv().await.is_some_and(|i| i < 16) {}
    assert_eq!(t.spool_files(), 1, "the upload is being spooled");
    t.restart(&[]).await;
    let cut_off = upload.await.unwrap();
    assert!(
        cut_off.as_ref().map_or(true, |r| !r.status().is_success()),
        "the cut-off upload cannot have succeeded: {cut_off:?}"
    );
    nothing_half_published(&t, &token, "big_tool", big).await;
}

/// A crash at a point `arm` picks: the sweep then removes the blob a
/// killed publish left (grace 0 after the restart).
async fn sigkill_at(arm: impl FnOnce(&TcpProxy, &TcpProxy), name: &str) {
    let Some((mut t, db, s3)) = behind_proxies().await else {
        return;
    };
    let token = t.account_with_token("frank", &["publish", "keys"]).await;
    let key = t.register_key(&token).await;
    let container = tool_container(&key, name, "1.0.0", &[], "# crash", 64 * 1024);
    arm(&db, &s3);
    let publish = tokio::spawn(
        t.client
            .post(t.path("/api/v1/publish"))
            .bearer_auth(&token)
            .body(container.clone())
            .send(),
    );
    let deadline = Instant::now() + Duration::from_secs(30);
    while !(db.is_frozen() || s3.is_frozen()) {
        assert!(
            Instant::now() < deadline,
            "the publish never reached the point"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // Whatever was on its way is there now. The process dies, then its
    // connections do (PostgreSQL rolls back what they held open).
    tokio::time::sleep(Duration::from_millis(300)).await;
    t.kill_9();
    db.set(Flow::Cut);
    s3.set(Flow::Cut);
    let backends = t.backends();
    let direct_db = backends.database_url();
    let direct_s3 = backends.s3_endpoint.clone();
    t.restart(&[
        ("AGENTLANG_REGISTRY_DATABASE_URL", direct_db),
        ("AWS_ENDPOINT", direct_s3),
        ("AGENTLANG_REGISTRY_SWEEP_INTERVAL_SECS", "1".into()),
        ("AGENTLANG_REGISTRY_SWEEP_GRACE_SECS", "0".into()),
    ])
    .await;
    drop(publish);
    // The orphan blob (if the crash came after it was written) is swept.
    let backends = t.backends();
    let deadline = Instant::now() + Duration::from_secs(30);
    while !backends.stored_blobs().await.is_empty() {
        assert!(Instant::now() < deadline, "an orphan blob was never swept");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    nothing_half_published(&t, &token, name, container).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigkill_after_the_blob_write_restarts_clean() {
    // The blob reaches S3; its answer never reaches the registry.
    sigkill_at(|_, s3| s3.freeze_when_sent(b"PUT /", true), "after_blob").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigkill_during_the_commit_restarts_clean() {
    // The transaction's COMMIT never reaches PostgreSQL.
    sigkill_at(
        |db, _| db.freeze_when_sent(b"COMMIT", false),
        "during_commit",
    )
    .await;
}
