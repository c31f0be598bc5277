//! The real `agentlang-registry` binary as a test's separate process: its
//! backends (SQLite + files, or a fresh PostgreSQL database and S3 prefix),
//! its address, its memory (`/proc`), SIGKILL; and a TCP proxy a test puts
//! between it and a backend to take that backend away, or to freeze it at a
//! chosen point of a conversation.
//!
//! Shared by the suites that need a process rather than the in-process
//! harness: `replicas` (two processes over one database and bucket) and
//! `hostile` (attacks, faults and crashes).

#![allow(dead_code, reason = "each suite uses part of the harness")]

use std::{
    io::{BufRead, BufReader},
    path::{Path, PathBuf},
    process::{Child, Command, Stdio},
    sync::{
        Arc, Mutex,
        atomic::{AtomicBool, Ordering},
        mpsc,
    },
    time::{Duration, Instant},
};

use agentlang_core::{
    Kind, MemberPath, PackageName, SourceTree, Version,
    container::{self, BuildInput, Created},
    signing::SecretKey,
};
use reqwest::{Client, StatusCode};
use serde_json::{Value, json};
use tokio::{
    io::{AsyncReadExt, AsyncWriteExt},
    net::{TcpListener, TcpStream},
    sync::watch,
};

pub fn env(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.is_empty())
}

/// Where a process keeps its data.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    Sqlite,
    PostgresS3,
}

/// A fresh PostgreSQL database and S3 key prefix for one test, dropped with
/// it.
pub struct Backends {
    pub admin_url: String,
    pub database: String,
    pub s3_endpoint: String,
    pub s3_bucket: String,
    pub s3_key: String,
    pub s3_secret: String,
    pub s3_region: String,
}

/// `postgres://u@h:p/db?x` with the database swapped for `name`.
pub fn with_database(url: &str, name: &str) -> String {
    let (base, query) = url
        .split_once('?')
        .map_or((url, None), |(b, q)| (b, Some(q)));
    let after_scheme = base.find("://").map_or(0, |i| i + 3);
    let host_end = base[after_scheme..]
        .find('/')
        .map_or(base.len(), |i| after_scheme + i);
    let mut out = format!("{}/{name}", &base[..host_end]);
    if let Some(q) = query {
        out.push('?');
        out.push_str(q);
    }
    out
}

/// `postgres://u@host:port/db` with `host:port` replaced (to go through a
/// proxy).
pub fn with_host(url: &str, host_port: &str) -> String {
    let after_scheme = url.find("://").map_or(0, |i| i + 3);
    let rest = &url[after_scheme..];
    let authority_end = rest.find('/').unwrap_or(rest.len());
    let authority = &rest[..authority_end];
    let userinfo = authority.rsplit_once('@').map(|(u, _)| u);
    let mut out = url[..after_scheme].to_owned();
    if let Some(user) = userinfo {
        out.push_str(user);
        out.push('@');
    }
    out.push_str(host_port);
    out.push_str(&rest[authority_end..]);
    out
}

/// `host:port` of a URL such as `http://127.0.0.1:9000` or a PostgreSQL URL.
pub fn host_port(url: &str) -> String {
    let after_scheme = url.find("://").map_or(0, |i| i + 3);
    let rest = &url[after_scheme..];
    let authority = &rest[..rest.find('/').unwrap_or(rest.len())];
    let host = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    let host = host.split('?').next().unwrap_or(host);
    if host.contains(':') {
        host.to_owned()
    } else if url.starts_with("postgres") {
        format!("{host}:5432")
    } else {
        format!("{host}:80")
    }
}

impl Backends {
    /// A fresh database; `None` (with a skip line) when the backends are
    /// not configured outside CI.
    pub async fn create(what: &str) -> Option<Self> {
        let (Some(admin_url), Some(s3_endpoint)) = (
            env("AGENTLANG_TEST_POSTGRES_URL"),
            env("AGENTLANG_TEST_S3_ENDPOINT"),
        ) else {
            assert!(
                env("CI").as_deref() != Some("true"),
                "CI=true but AGENTLANG_TEST_POSTGRES_URL or AGENTLANG_TEST_S3_ENDPOINT is not set"
            );
            eprintln!(
                "skipped: {what} needs PostgreSQL + S3 (set AGENTLANG_TEST_POSTGRES_URL and AGENTLANG_TEST_S3_ENDPOINT)"
            );
            return None;
        };
        let database = format!("p_{}", uuid::Uuid::new_v4().simple());
        let admin = sqlx::PgPool::connect(&admin_url)
            .await
            .expect("connect to AGENTLANG_TEST_POSTGRES_URL");
        // `database` is our own `p_<uuid>`: safe to splice.
        sqlx::query(sqlx::AssertSqlSafe(format!(
            "CREATE DATABASE \"{database}\""
        )))
        .execute(&admin)
        .await
        .expect("create the test database");
        admin.close().await;
        Some(Self {
            admin_url,
            database,
            s3_endpoint,
            s3_bucket: env("AGENTLANG_TEST_S3_BUCKET").unwrap_or_else(|| "agentlang-test".into()),
            s3_key: env("AGENTLANG_TEST_S3_ACCESS_KEY_ID").unwrap_or_else(|| "test".into()),
            s3_secret: env("AGENTLANG_TEST_S3_SECRET_ACCESS_KEY").unwrap_or_else(|| "test".into()),
            s3_region: env("AGENTLANG_TEST_S3_REGION").unwrap_or_else(|| "us-east-1".into()),
        })
    }

    pub fn database_url(&self) -> String {
        with_database(&self.admin_url, &self.database)
    }

    /// The database and storage settings, as `deploy/registry.env` gives
    /// them: through the environment only.
    pub fn env(&self) -> Vec<(&'static str, String)> {
        vec![
            ("AGENTLANG_REGISTRY_DATABASE_URL", self.database_url()),
            (
                "AGENTLANG_REGISTRY_STORAGE_URL",
                format!("s3://{}/{}", self.s3_bucket, self.database),
            ),
            ("AWS_ENDPOINT", self.s3_endpoint.clone()),
            ("AWS_ALLOW_HTTP", "true".into()),
            ("AWS_REGION", self.s3_region.clone()),
            ("AWS_ACCESS_KEY_ID", self.s3_key.clone()),
            ("AWS_SECRET_ACCESS_KEY", self.s3_secret.clone()),
        ]
    }

    /// Keys under this test's prefix in the bucket (straight to S3, never
    /// through a proxy).
    pub async fn stored_blobs(&self) -> Vec<String> {
        use object_store::{ObjectStore, aws::AmazonS3Builder, path::Path as Key};
        let store = AmazonS3Builder::new()
            .with_endpoint(&self.s3_endpoint)
            .with_allow_http(true)
            .with_virtual_hosted_style_request(false)
            .with_region(&self.s3_region)
            .with_bucket_name(&self.s3_bucket)
            .with_access_key_id(&self.s3_key)
            .with_secret_access_key(&self.s3_secret)
            .build()
            .expect("an S3 client");
        let prefix = Key::from(format!("{}/blobs", self.database));
        let mut keys = Vec::new();
        let mut listing = store.list(Some(&prefix));
        use futures_util::StreamExt;
        while let Some(meta) = listing.next().await {
            keys.push(meta.expect("a listing").location.to_string());
        }
        keys
    }
}

impl Drop for Backends {
    fn drop(&mut self) {
        let admin_url = self.admin_url.clone();
        let name = self.database.clone();
        // Drop is synchronous: a short-lived runtime on its own thread.
        let _ = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("runtime");
            runtime.block_on(async {
                if let Ok(pool) = sqlx::PgPool::connect(&admin_url).await {
                    let _ = sqlx::query(sqlx::AssertSqlSafe(format!(
                        "DROP DATABASE IF EXISTS \"{name}\" WITH (FORCE)"
                    )))
                    .execute(&pool)
                    .await;
                }
            });
        })
        .join();
    }
}

/// One running `agentlang-registry` process.
pub struct Registry {
    child: Child,
    pub url: String,
    pub data_dir: PathBuf,
    /// The process's log lines, kept for failure messages.
    log: Arc<Mutex<Vec<String>>>,
}

impl Registry {
    /// Starts the binary with exactly `env` (plus `PATH`), serving from
    /// `data_dir` on a free port, and waits until `/readyz` answers 200.
    pub async fn start(data_dir: &Path, env: &[(&str, String)]) -> Self {
        let mut child = Command::new(env!("CARGO_BIN_EXE_agentlang-registry"))
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("AGENTLANG_REGISTRY_BIND", "127.0.0.1:0")
            .env("AGENTLANG_REGISTRY_DATA_DIR", data_dir)
            // `info`: the address line this waits for.
            .env("AGENTLANG_REGISTRY_LOG", "info")
            .envs(env.iter().map(|(k, v)| (*k, v.as_str())))
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start agentlang-registry");
        let stderr = child.stderr.take().expect("piped stderr");
        let (tx, rx) = mpsc::channel();
        let log = Arc::new(Mutex::new(Vec::new()));
        let kept = Arc::clone(&log);
        std::thread::spawn(move || {
            // Keeps draining after the address line, so the pipe never fills.
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                kept.lock().unwrap().push(line.clone());
                let _ = tx.send(line);
            }
        });
        let address = loop {
            let Ok(line) = rx.recv_timeout(Duration::from_secs(60)) else {
                panic!(
                    "the registry did not log its address:\n{}",
                    log.lock().unwrap().join("\n")
                );
            };
            if let Some(rest) = line.split("listening on http://").nth(1) {
                break rest
                    .split_whitespace()
                    .next()
                    .expect("an address")
                    .to_owned();
            }
        };
        let registry = Self {
            child,
            url: format!("http://{address}"),
            data_dir: data_dir.to_owned(),
            log,
        };
        registry.wait_ready(Duration::from_secs(30)).await;
        registry
    }

    pub async fn wait_ready(&self, within: Duration) {
        let deadline = Instant::now() + within;
        loop {
            if let Ok(res) = reqwest::get(self.path("/readyz")).await
                && res.status() == StatusCode::OK
            {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "{} never became ready:\n{}",
                self.url,
                self.log()
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    pub fn path(&self, path: &str) -> String {
        format!("{}{path}", self.url)
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The process's resident memory, KiB (`VmRSS` in `/proc`).
    pub fn rss_kib(&self) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.pid()))
            .expect("the registry's /proc status");
        status
            .lines()
            .find_map(|l| l.strip_prefix("VmRSS:"))
            .and_then(|v| v.split_whitespace().next())
            .and_then(|v| v.parse().ok())
            .expect("VmRSS")
    }

    pub fn log(&self) -> String {
        self.log.lock().unwrap().join("\n")
    }

    /// SIGKILL: no graceful shutdown, no cleanup. Killing a process that
    /// is already gone does nothing.
    pub fn kill_9(&mut self) {
        let _ = self.child.kill();
        self.child.wait().expect("reap the registry");
    }

    /// Files in the upload spool.
    pub fn spool_files(&self) -> usize {
        std::fs::read_dir(self.data_dir.join("uploads")).map_or(0, |d| d.count())
    }
}

impl Drop for Registry {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Samples a process's RSS until stopped; the peak is what a test asserts.
pub struct RssSampler {
    stop: Arc<AtomicBool>,
    handle: std::thread::JoinHandle<u64>,
}

impl RssSampler {
    pub fn start(pid: u32) -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&stop);
        let handle = std::thread::spawn(move || {
            let mut peak = 0;
            while !flag.load(Ordering::Relaxed) {
                if let Ok(status) = std::fs::read_to_string(format!("/proc/{pid}/status"))
                    && let Some(kib) = status
                        .lines()
                        .find_map(|l| l.strip_prefix("VmRSS:"))
                        .and_then(|v| v.split_whitespace().next())
                        .and_then(|v| v.parse::<u64>().ok())
                {
                    peak = peak.max(kib);
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            peak
        });
        Self { stop, handle }
    }

    /// The highest RSS seen, KiB.
    pub fn peak_kib(self) -> u64 {
        self.stop.store(true, Ordering::Relaxed);
        self.handle.join().expect("the sampler")
    }
}

/// A new account and a token with `scopes` for it.
pub async fn account_with_token(
    client: &Client,
    registry: &Registry,
    username: &str,
    scopes: &[&str],
) -> String {
    let created = account_with_token_record(client, registry, username, scopes).await;
    created["token"].as_str().unwrap().to_owned()
}

/// A new account and the whole answer that created its token (id, token,
/// scopes...).
pub async fn account_with_token_record(
    client: &Client,
    registry: &Registry,
    username: &str,
    scopes: &[&str],
) -> Value {
    let res = client
        .post(registry.path("/api/v1/accounts"))
        .json(&json!({"username": username, "password": "password-123"}))
        .send()
        .await
        .unwrap();
    assert_eq!(
        res.status(),
        StatusCode::CREATED,
        "{}",
        res.text().await.unwrap()
    );
    let res = client
        .post(registry.path("/api/v1/tokens"))
        .json(&json!({"username": username, "password": "password-123", "name": "test", "scopes": scopes}))
        .send()
        .await
        .unwrap();
    assert_eq!(
        res.status(),
        StatusCode::CREATED,
        "{}",
        res.text().await.unwrap()
    );
    res.json().await.unwrap()
}

/// The body of `POST /api/v1/keys` for `key`, with its proof of
/// possession for the account `token` belongs to (asked of the registry at
/// `base_url`).
pub async fn key_registration(
    client: &Client,
    base_url: &str,
    token: &str,
    key: &SecretKey,
) -> Value {
    use base64::Engine;
    let account: Value = client
        .get(format!("{base_url}/api/v1/account"))
        .bearer_auth(token)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let username = account["username"].as_str().expect("the token's account");
    let message = format!(
        "agentlang-key-registration:{username}:{}",
        key.public_key().key_id()
    );
    json!({
        "public_key_pem": key.public_key().to_spki_pem(),
        "proof": base64::engine::general_purpose::STANDARD.encode(key.sign(message.as_bytes())),
    })
}

/// Registers a new signing key with `token` (scope `keys`).
pub async fn register_key(client: &Client, registry: &Registry, token: &str) -> SecretKey {
    let key = SecretKey::generate().unwrap();
    let body = key_registration(client, &registry.path(""), token, &key).await;
    let res = client
        .post(registry.path("/api/v1/keys"))
        .bearer_auth(token)
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(
        res.status(),
        StatusCode::CREATED,
        "{}",
        res.text().await.unwrap()
    );
    key
}

/// A signed tool container: tool.yaml, a README, the given dependencies
/// and an optional incompressible payload, so its size is what we ask.
pub fn tool_container(
    key: &SecretKey,
    name: &str,
    version: &str,
    dependencies: &[(&str, &str)],
    readme: &str,
    payload_bytes: usize,
) -> Vec<u8> {
    let mut yaml = format!(
        "name: {name}\nversion: {version}\ndescription: test tool {name}\nkind: http\ninput_schema: {{type: object}}\n"
    );
    if !dependencies.is_empty() {
        yaml.push_str("dependencies:\n");
        for (dep, req) in dependencies {
            yaml.push_str(&format!("  {dep}: \"{req}\"\n"));
        }
    }
    let mut tree = SourceTree::new();
    tree.insert(MemberPath::new("tool.yaml").unwrap(), yaml.into_bytes());
    tree.insert(
        MemberPath::new("README.md").unwrap(),
        readme.as_bytes().to_vec(),
    );
    if payload_bytes > 0 {
        // splitmix64: deterministic and incompressible.
        let mut state = 0x1234_5678_u64;
        let mut payload = Vec::with_capacity(payload_bytes + 8);
        while payload.len() < payload_bytes {
            state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let mut z = state;
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            payload.extend_from_slice(&(z ^ (z >> 31)).to_le_bytes());
        }
        payload.truncate(payload_bytes);
        tree.insert(MemberPath::new("assets/payload.bin").unwrap(), payload);
    }
    container::build(&BuildInput {
        tree: &tree,
        kind: Kind::Tool,
        name: &PackageName::new(name).unwrap(),
        version: &Version::parse(version).unwrap(),
        created: Created::from_unix_seconds(1_767_225_600).unwrap(),
        signing_key: key,
        prompt_key: None,
    })
    .unwrap()
}

// ---------------------------------------------------------------------------
// A TCP proxy with a kill switch

/// What the proxy does with a connection's bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flow {
    /// Relay both ways.
    Open,
    /// Keep connections and listener, relay nothing: a backend that hangs.
    Frozen,
    /// Close every connection and refuse new ones: a backend that is gone.
    Cut,
}

/// A proxy on a free loopback port in front of `upstream`. Tests point the
/// registry at [`TcpProxy::address`] and then take the backend away
/// ([`Flow::Cut`]), make it hang ([`Flow::Frozen`]), or freeze it at the
/// moment a client sends a given byte string ([`TcpProxy::freeze_when_sent`]:
/// the matching bytes are held back, so the backend never receives them).
pub struct TcpProxy {
    pub address: String,
    flow: watch::Sender<Flow>,
    trigger: Arc<Mutex<Option<Trigger>>>,
    task: tokio::task::JoinHandle<()>,
}

/// A one-shot freeze.
#[derive(Debug, Clone)]
struct Trigger {
    /// Client bytes that freeze the proxy when seen.
    needle: Vec<u8>,
    /// Whether the matching bytes still reach the backend (only its answer
    /// is held back).
    deliver: bool,
}

impl TcpProxy {
    pub async fn start(upstream: &str) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind a proxy");
        let address = listener.local_addr().unwrap().to_string();
        let (flow, flows) = watch::channel(Flow::Open);
        let trigger: Arc<Mutex<Option<Trigger>>> = Arc::default();
        let upstream = upstream.to_owned();
        let (flow_tx, shared_trigger) = (flow.clone(), Arc::clone(&trigger));
        let task = tokio::spawn(async move {
            loop {
                let Ok((client, _)) = listener.accept().await else {
                    return;
                };
                if *flows.borrow() == Flow::Cut {
                    drop(client);
                    continue;
                }
                let (upstream, flows, flow_tx, trigger) = (
                    upstream.clone(),
                    flows.clone(),
                    flow_tx.clone(),
                    Arc::clone(&shared_trigger),
                );
                tokio::spawn(async move {
                    let Ok(server) = TcpStream::connect(&upstream).await else {
                        return;
                    };
                    relay(client, server, flows, flow_tx, trigger).await;
                });
            }
        });
        Self {
            address,
            flow,
            trigger,
            task,
        }
    }

    pub fn set(&self, flow: Flow) {
        self.flow.send_replace(flow);
    }

    /// Freezes every connection as soon as a client sends `needle`. With
    /// `deliver`, the bytes holding it still reach the backend and only
    /// what comes back is held (the backend acted; the client never hears).
    pub fn freeze_when_sent(&self, needle: &[u8], deliver: bool) {
        *self.trigger.lock().unwrap() = Some(Trigger {
            needle: needle.to_vec(),
            deliver,
        });
    }

    /// Whether a trigger fired.
    pub fn is_frozen(&self) -> bool {
        *self.flow.borrow() == Flow::Frozen
    }
}

impl Drop for TcpProxy {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn relay(
    client: TcpStream,
    server: TcpStream,
    flows: watch::Receiver<Flow>,
    flow_tx: watch::Sender<Flow>,
    trigger: Arc<Mutex<Option<Trigger>>>,
) {
    let (mut client_read, mut client_write) = client.into_split();
    let (mut server_read, mut server_write) = server.into_split();
    let upward = {
        let mut flows = flows.clone();
        async move {
            let mut buf = vec![0u8; 64 * 1024];
            loop {
                let n = tokio::select! {
                    read = client_read.read(&mut buf) => match read { Ok(0) | Err(_) => return, Ok(n) => n },
                    _ = wait_for_cut(&mut flows) => return,
                };
                let chunk = &buf[..n];
                let fired = {
                    let mut slot = trigger.lock().unwrap();
                    match slot.as_ref() {
                        Some(t) if chunk.windows(t.needle.len()).any(|w| w == t.needle) => {
                            slot.take()
                        }
                        _ => None,
                    }
                };
                if let Some(fired) = fired {
                    if fired.deliver && server_write.write_all(chunk).await.is_err() {
                        return;
                    }
                    flow_tx.send_replace(Flow::Frozen);
                    continue;
                }
                if !pass(&mut flows).await || server_write.write_all(chunk).await.is_err() {
                    return;
                }
            }
        }
    };
    let downward = {
        let mut flows = flows.clone();
        async move {
            let mut buf = vec![0u8; 64 * 1024];
            loop {
                let n = tokio::select! {
                    read = server_read.read(&mut buf) => match read { Ok(0) | Err(_) => return, Ok(n) => n },
                    _ = wait_for_cut(&mut flows) => return,
                };
                if !pass(&mut flows).await || client_write.write_all(&buf[..n]).await.is_err() {
                    return;
                }
            }
        }
    };
    // Either side ending (or a cut) ends the connection.
    tokio::select! {
        () = upward => {}
        () = downward => {}
    }
}

/// Waits while frozen; false once cut.
async fn pass(flows: &mut watch::Receiver<Flow>) -> bool {
    loop {
        match *flows.borrow_and_update() {
            Flow::Open => return true,
            Flow::Cut => return false,
            Flow::Frozen => {}
        }
        if flows.changed().await.is_err() {
            return false;
        }
    }
}

async fn wait_for_cut(flows: &mut watch::Receiver<Flow>) {
    loop {
        if *flows.borrow_and_update() == Flow::Cut {
            return;
        }
        if flows.changed().await.is_err() {
            std::future::pending::<()>().await;
        }
    }
}

/// `bytes` as a streamed body of 64 KiB chunks, one every 10 ms, with no
/// length; the receiver hears the index of each chunk as it is sent, so a
/// test can act while the server is still reading.
pub fn trickled_body(bytes: &[u8]) -> (reqwest::Body, tokio::sync::mpsc::UnboundedReceiver<usize>) {
    use futures_util::StreamExt;
    let (sent_tx, sent_rx) = tokio::sync::mpsc::unbounded_channel::<usize>();
    let chunks: Vec<bytes::Bytes> = bytes
        .chunks(64 * 1024)
        .map(bytes::Bytes::copy_from_slice)
        .collect();
    let body = futures_util::stream::iter(chunks.into_iter().enumerate()).then(move |(i, c)| {
        let sent_tx = sent_tx.clone();
        async move {
            tokio::time::sleep(Duration::from_millis(10)).await;
            let _ = sent_tx.send(i);
            Ok::<_, std::io::Error>(c)
        }
    });
    (reqwest::Body::wrap_stream(body), sent_rx)
}
