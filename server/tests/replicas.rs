//! Scale-out: two `agentlang-registry` processes (the real binary) on
//! different loopback ports over one PostgreSQL database and one S3 bucket,
//! configured only through the environment, as `docker-compose.yml` runs
//! them. Whatever one replica writes, the other must serve at once; nothing
//! shared may live in one process's memory.
//!
//! Needs `AGENTLANG_TEST_POSTGRES_URL` and `AGENTLANG_TEST_S3_ENDPOINT` (plus
//! the other `AGENTLANG_TEST_S3_*` variables, as the API suite): without
//! them these tests print a skip line, except under `CI=true`, where they
//! fail. Each test gets its own database and key prefix.

use std::{
    collections::HashMap,
    io::{BufRead, BufReader},
    path::Path,
    process::{Child, Command, Stdio},
    sync::mpsc,
    time::{Duration, Instant},
};

use agentlang_core::{
    Kind, MemberPath, PackageName, SourceTree, Version,
    container::{self, BuildInput, Created},
    signing::SecretKey,
};
use agentlang_registry::config::{Config, DatabaseUrl, RateLimitSettings, StorageUrl};
use futures_util::StreamExt;
use reqwest::{Client, StatusCode};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

/// Shared by both replicas, as `deploy/registry.env` shares it.
const JWT_SECRET: &str = "replica-test-secret-replica-test-secret-0123";
/// The issuer of every token: the proxy's address in a real deployment.
/// Both replicas must agree on it, or a token from one is refused by the
/// other.
const PUBLIC_URL: &str = "http://registry.test";

fn env(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.is_empty())
}

struct Backends {
    admin_url: String,
    database: String,
    s3_endpoint: String,
    s3_bucket: String,
    s3_key: String,
    s3_secret: String,
    s3_region: String,
}

/// `postgres://u@h:p/db?x` with the database swapped for `name`.
fn with_database(url: &str, name: &str) -> String {
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

impl Backends {
    /// A fresh database; `None` (with a skip line) when the backends are
    /// not configured outside CI.
    async fn create() -> Option<Self> {
        let (Some(admin_url), Some(s3_endpoint)) = (
            env("AGENTLANG_TEST_POSTGRES_URL"),
            env("AGENTLANG_TEST_S3_ENDPOINT"),
        ) else {
            assert!(
                env("CI").as_deref() != Some("true"),
                "CI=true but AGENTLANG_TEST_POSTGRES_URL or AGENTLANG_TEST_S3_ENDPOINT is not set"
            );
            eprintln!(
                "skipped: replicas need PostgreSQL + S3 (set AGENTLANG_TEST_POSTGRES_URL and AGENTLANG_TEST_S3_ENDPOINT)"
            );
            return None;
        };
        let database = format!("r_{}", uuid::Uuid::new_v4().simple());
        let admin = sqlx::PgPool::connect(&admin_url)
            .await
            .expect("connect to AGENTLANG_TEST_POSTGRES_URL");
        // `database` is our own `r_<uuid>`: safe to splice.
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

    fn database_url(&self) -> String {
        with_database(&self.admin_url, &self.database)
    }

    /// Everything a replica is configured with, all through the
    /// environment, as in `deploy/registry.env`.
    fn replica_env(&self, data_dir: &Path) -> Vec<(&'static str, String)> {
        vec![
            ("AGENTLANG_REGISTRY_BIND", "127.0.0.1:0".into()),
            ("AGENTLANG_REGISTRY_PUBLIC_URL", PUBLIC_URL.into()),
            (
                "AGENTLANG_REGISTRY_DATA_DIR",
                data_dir.display().to_string(),
            ),
            ("AGENTLANG_REGISTRY_DATABASE_URL", self.database_url()),
            (
                "AGENTLANG_REGISTRY_STORAGE_URL",
                format!("s3://{}/{}", self.s3_bucket, self.database),
            ),
            ("AGENTLANG_REGISTRY_JWT_SECRET", JWT_SECRET.into()),
            ("AGENTLANG_REGISTRY_RATE_LIMITS", "off".into()),
            ("AGENTLANG_REGISTRY_WORKERS", "2".into()),
            // `info`: the address line the harness waits for.
            ("AGENTLANG_REGISTRY_LOG", "info".into()),
            ("AWS_ENDPOINT", self.s3_endpoint.clone()),
            ("AWS_ALLOW_HTTP", "true".into()),
            ("AWS_REGION", self.s3_region.clone()),
            ("AWS_ACCESS_KEY_ID", self.s3_key.clone()),
            ("AWS_SECRET_ACCESS_KEY", self.s3_secret.clone()),
        ]
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
struct Replica {
    child: Child,
    url: String,
}

impl Replica {
    /// Starts the binary and waits for the address it logs; the process is
    /// ready when `/readyz` answers 200.
    async fn start(backends: &Backends, data_dir: &Path) -> Self {
        let mut child = Command::new(env!("CARGO_BIN_EXE_agentlang-registry"))
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .envs(backends.replica_env(data_dir))
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start agentlang-registry");
        let stderr = child.stderr.take().expect("piped stderr");
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            // Keeps draining after the address line, so the pipe never fills.
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                let _ = tx.send(line);
            }
        });
        let address = loop {
            let line = rx
                .recv_timeout(Duration::from_secs(60))
                .expect("the replica logs its address");
            if let Some(rest) = line.split("listening on http://").nth(1) {
                break rest
                    .split_whitespace()
                    .next()
                    .expect("an address")
                    .to_owned();
            }
        };
        let replica = Self {
            child,
            url: format!("http://{address}"),
        };
        replica.wait_ready().await;
        replica
    }

    async fn wait_ready(&self) {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            if let Ok(res) = reqwest::get(format!("{}/readyz", self.url)).await
                && res.status() == StatusCode::OK
            {
                return;
            }
            assert!(Instant::now() < deadline, "{} never became ready", self.url);
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    fn path(&self, path: &str) -> String {
        format!("{}{path}", self.url)
    }

    /// SIGKILL: no graceful shutdown, no cleanup.
    fn kill_9(&mut self) {
        self.child.kill().expect("SIGKILL the replica");
        self.child.wait().expect("reap the replica");
    }
}

impl Drop for Replica {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Two replicas over one database and bucket, each with its own data folder
/// (which holds only upload spool files).
struct Cluster {
    a: Replica,
    b: Replica,
    client: Client,
    dir: tempfile::TempDir,
    backends: Backends,
}

impl Cluster {
    async fn start() -> Option<Self> {
        let backends = Backends::create().await?;
        let dir = tempfile::tempdir().expect("tempdir");
        let a = Replica::start(&backends, &dir.path().join("a")).await;
        let b = Replica::start(&backends, &dir.path().join("b")).await;
        assert_ne!(a.url, b.url);
        Some(Self {
            a,
            b,
            client: Client::new(),
            dir,
            backends,
        })
    }

    /// Creates `username` through `via` and a token with `scopes`.
    async fn account_with_token(&self, via: &Replica, username: &str, scopes: &[&str]) -> Value {
        let res = self
            .client
            .post(via.path("/api/v1/accounts"))
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
        let res = self
            .client
            .post(via.path("/api/v1/tokens"))
            .json(&json!({"username": username, "password": "password-123", "name": "replicas", "scopes": scopes}))
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
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn accounts_and_tokens_made_on_one_replica_work_on_the_other() {
    let Some(cluster) = Cluster::start().await else {
        return;
    };
    let (a, b) = (&cluster.a, &cluster.b);
    let created = cluster.account_with_token(a, "alice", &["publish"]).await;
    let token = created["token"].as_str().unwrap();
    let id = created["id"].as_str().unwrap();

    // B checks A's token with the shared secret and finds it in the shared
    // database.
    let res = cluster
        .client
        .get(b.path("/api/v1/tokens"))
        .bearer_auth(token)
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::OK);
    let list: Value = res.json().await.unwrap();
    assert_eq!(list["tokens"][0]["id"], id, "{list}");

    // The name is taken for both replicas at once.
    let res = cluster
        .client
        .post(b.path("/api/v1/accounts"))
        .json(&json!({"username": "Alice", "password": "password-123"}))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::CONFLICT);

    // Revoked through B: A refuses it on the very next request, since
    // revocation lives in the database, not in a replica's memory.
    let res = cluster
        .client
        .delete(b.path(&format!("/api/v1/tokens/{id}")))
        .bearer_auth(token)
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::NO_CONTENT);
    let res = cluster
        .client
        .get(a.path("/api/v1/tokens"))
        .bearer_auth(token)
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::UNAUTHORIZED);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replica_killed_with_sigkill_restarts_and_serves_while_the_other_keeps_serving() {
    let Some(mut cluster) = Cluster::start().await else {
        return;
    };
    let created = cluster.account_with_token(&cluster.a, "bob", &[]).await;
    let token = created["token"].as_str().unwrap().to_owned();
    cluster.a.kill_9();

    // B does not notice: it shares nothing with A but the backends.
    let res = cluster
        .client
        .get(cluster.b.path("/readyz"))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::OK);
    let res = cluster
        .client
        .get(cluster.b.path("/api/v1/tokens"))
        .bearer_auth(&token)
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::OK);

    // A comes back over the same database (migrations already applied) and
    // its own data folder, and serves the token B just accepted.
    cluster.a = Replica::start(&cluster.backends, &cluster.dir.path().join("a")).await;
    let res = cluster
        .client
        .get(cluster.a.path("/api/v1/tokens"))
        .bearer_auth(&token)
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::OK);
}

/// The example files in `deploy/` say what the registry reads: the env file
/// of the compose topology and the TOML example both load, and mean what
/// their comments say.
#[test]
fn the_deploy_configuration_files_load() {
    let deploy = Path::new(env!("CARGO_MANIFEST_DIR")).join("../deploy");

    let text = std::fs::read_to_string(deploy.join("registry.env")).unwrap();
    let vars: HashMap<String, String> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(|l| {
            let (k, v) = l.split_once('=').expect("KEY=value lines");
            (k.to_owned(), v.to_owned())
        })
        .collect();
    for key in vars.keys() {
        assert!(
            key.starts_with("AGENTLANG_REGISTRY_") || key.starts_with("AWS_"),
            "{key} is read by nothing"
        );
    }
    let config = Config::from_sources(|k| vars.get(k).cloned()).expect("registry.env loads");
    assert_eq!(config.bind, "0.0.0.0:8080");
    assert!(matches!(
        config.effective_database_url(),
        DatabaseUrl::Postgres(_)
    ));
    assert_eq!(
        config.effective_storage_url(),
        StorageUrl::S3 {
            bucket: "agentlang".into(),
            prefix: "registry".into()
        }
    );
    assert!(config.jwt_secret.is_some(), "replicas must share a secret");
    assert!(config.public_url.is_some(), "replicas must share an issuer");
    assert!(!config.rate_limits.enabled, "limited at the proxy instead");

    let toml = deploy.join("registry.example.toml");
    let config = Config::from_sources(|k| {
        (k == "AGENTLANG_REGISTRY_CONFIG").then(|| toml.display().to_string())
    })
    .expect("registry.example.toml loads");
    let defaults = Config::default();
    assert_eq!(config.bind, defaults.bind);
    assert_eq!(config.data_dir, defaults.data_dir);
    assert_eq!(config.max_upload_bytes, defaults.max_upload_bytes);
    assert_eq!(config.database_url, None);
    assert_eq!(config.storage_url, None);
    let RateLimitSettings {
        enabled,
        publish_per_minute,
        credentials_per_minute,
        anonymous_reads_per_minute,
        agent_messages_per_minute,
    } = config.rate_limits;
    let d = defaults.rate_limits;
    assert_eq!(
        (
            enabled,
            publish_per_minute,
            credentials_per_minute,
            anonymous_reads_per_minute,
            agent_messages_per_minute
        ),
        (
            d.enabled,
            d.publish_per_minute,
            d.credentials_per_minute,
            d.anonymous_reads_per_minute,
            d.agent_messages_per_minute
        ),
        "the example shows the defaults"
    );
}

/// A signed `.tool` container: tool.yaml (with `dependencies`), a README
/// and an optional incompressible payload, so its size is what we ask.
fn tool_container(
    key: &SecretKey,
    name: &str,
    version: &str,
    dependencies: &[(&str, &str)],
    readme: &str,
    payload_bytes: usize,
) -> Vec<u8> {
    let mut yaml = format!(
        "name: {name}\nversion: {version}\ndescription: replica test tool {name}\nkind: http\ninput_schema: {{type: object}}\n"
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

fn sha256_hex(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

impl Cluster {
    /// An account with a publish token and a registered signing key.
    async fn publisher(&self, username: &str) -> (String, SecretKey) {
        let created = self
            .account_with_token(&self.a, username, &["publish", "keys"])
            .await;
        let token = created["token"].as_str().unwrap().to_owned();
        let key = SecretKey::generate().unwrap();
        // Registered through B, used through A: keys live in the database.
        let res = self
            .client
            .post(self.b.path("/api/v1/keys"))
            .bearer_auth(&token)
            .json(&json!({"public_key_pem": key.public_key().to_spki_pem()}))
            .send()
            .await
            .unwrap();
        assert_eq!(
            res.status(),
            StatusCode::CREATED,
            "{}",
            res.text().await.unwrap()
        );
        (token, key)
    }

    async fn publish(&self, via: &Replica, token: &str, body: Vec<u8>) -> reqwest::Response {
        self.client
            .post(via.path("/api/v1/publish"))
            .bearer_auth(token)
            .header("content-type", "application/octet-stream")
            .body(body)
            .send()
            .await
            .unwrap()
    }

    async fn get(&self, via: &Replica, path: &str) -> reqwest::Response {
        self.client.get(via.path(path)).send().await.unwrap()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_version_published_through_one_replica_is_served_at_once_by_the_other() {
    let Some(cluster) = Cluster::start().await else {
        return;
    };
    let (a, b) = (&cluster.a, &cluster.b);
    let (token, key) = cluster.publisher("carol").await;
    let base = tool_container(&key, "replica_base", "1.2.0", &[], "# base", 0);
    let top = tool_container(
        &key,
        "replica_top",
        "1.0.0",
        &[("replica_base", "^1.0")],
        "# top",
        0,
    );
    for body in [base.clone(), top.clone()] {
        let res = cluster.publish(a, &token, body).await;
        assert_eq!(
            res.status(),
            StatusCode::CREATED,
            "{}",
            res.text().await.unwrap()
        );
    }

    // B serves all of it on the very next request: the record, the bytes,
    // the index, a resolution, search and the catalog page.
    let res = cluster.get(b, "/api/v1/tools/replica_top/1.0.0").await;
    assert_eq!(res.status(), StatusCode::OK);
    let record: Value = res.json().await.unwrap();
    assert_eq!(record["sha256"], sha256_hex(&top), "{record}");

    let res = cluster
        .get(b, "/api/v1/tools/replica_base/1.2.0/download")
        .await;
    assert_eq!(res.status(), StatusCode::OK);
    assert_eq!(res.bytes().await.unwrap().as_ref(), base.as_slice());

    let res = cluster.get(b, "/api/v1/index/tools/replica_base").await;
    assert_eq!(res.status(), StatusCode::OK);
    let index = res.text().await.unwrap();
    assert!(
        index.contains("1.2.0") && index.contains(&sha256_hex(&base)),
        "{index}"
    );

    let res = cluster
        .client
        .post(b.path("/api/v1/resolve"))
        .header("accept", "application/json")
        .json(&json!({"tools": {"replica_top": "^1"}}))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::OK);
    let lock: Value = res.json().await.unwrap();
    assert_eq!(lock["tools"]["replica_top"]["version"], "1.0.0", "{lock}");
    assert_eq!(lock["tools"]["replica_base"]["version"], "1.2.0", "{lock}");
    assert_eq!(
        lock["tools"]["replica_base"]["hash"],
        format!("sha256:{}", sha256_hex(&base)),
        "{lock}"
    );

    let res = cluster.get(b, "/api/v1/search?q=replica_top").await;
    assert_eq!(res.status(), StatusCode::OK);
    let found = res.text().await.unwrap();
    assert!(found.contains("replica_top"), "{found}");

    let res = cluster.get(b, "/tools/replica_top").await;
    assert_eq!(res.status(), StatusCode::OK);
    let page = res.text().await.unwrap();
    assert!(
        page.contains("replica_top") && page.contains("1.0.0"),
        "{page}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_publishes_of_one_version_through_both_replicas_have_one_winner() {
    let Some(cluster) = Cluster::start().await else {
        return;
    };
    let (token, key) = cluster.publisher("dave").await;
    for round in 0..5 {
        let version = format!("1.{round}.0");
        // Different bytes for one version: exactly one may become it.
        let first = tool_container(&key, "race_tool", &version, &[], "# first", 0);
        let second = tool_container(&key, "race_tool", &version, &[], "# second", 0);
        let (ra, rb) = tokio::join!(
            cluster.publish(&cluster.a, &token, first.clone()),
            cluster.publish(&cluster.b, &token, second.clone()),
        );
        let mut statuses = [ra.status().as_u16(), rb.status().as_u16()];
        statuses.sort_unstable();
        assert_eq!(statuses, [201, 409], "round {round}");
        let winner = if ra.status() == StatusCode::CREATED {
            &first
        } else {
            &second
        };
        for via in [&cluster.a, &cluster.b] {
            let record: Value = cluster
                .get(via, &format!("/api/v1/tools/race_tool/{version}"))
                .await
                .json()
                .await
                .unwrap();
            assert_eq!(record["sha256"], sha256_hex(winner), "round {round}");
        }
    }
    let package: Value = cluster
        .get(&cluster.b, "/api/v1/tools/race_tool")
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(
        package["versions"].as_array().map(Vec::len),
        Some(5),
        "{package}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigkill_in_the_middle_of_an_upload_leaves_no_partial_version() {
    let Some(mut cluster) = Cluster::start().await else {
        return;
    };
    let (token, key) = cluster.publisher("erin").await;
    let big = tool_container(&key, "big_tool", "1.0.0", &[], "# big", 8 * 1024 * 1024);

    // A slow chunked upload to A: 64 KiB every 10 ms, with no length, so A
    // is spooling it when it dies.
    let (sent_tx, mut sent_rx) = tokio::sync::mpsc::unbounded_channel::<usize>();
    let chunks: Vec<bytes::Bytes> = big
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
    let upload = tokio::spawn(
        cluster
            .client
            .post(cluster.a.path("/api/v1/publish"))
            .bearer_auth(&token)
            .header("content-type", "application/octet-stream")
            .body(reqwest::Body::wrap_stream(body))
            .send(),
    );
    // About 2 MiB in: a quarter of the container.
    while sent_rx.recv().await.is_some_and(|i| i < 32) {}
    cluster.a.kill_9();
    let cut_off = upload.await.unwrap();
    assert!(
        cut_off.is_err() || cut_off.as_ref().is_ok_and(|r| !r.status().is_success()),
        "the cut-off upload cannot have succeeded: {cut_off:?}"
    );

    // Nothing of it is visible through B, which keeps serving.
    let res = cluster.get(&cluster.b, "/readyz").await;
    assert_eq!(res.status(), StatusCode::OK);
    let res = cluster.get(&cluster.b, "/api/v1/tools/big_tool").await;
    assert_eq!(res.status(), StatusCode::NOT_FOUND);
    let res = cluster
        .get(&cluster.b, "/api/v1/tools/big_tool/1.0.0")
        .await;
    assert_eq!(res.status(), StatusCode::NOT_FOUND);
    let res = cluster
        .client
        .post(cluster.b.path("/api/v1/resolve"))
        .header("accept", "application/json")
        .json(&json!({"tools": {"big_tool": null}}))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::UNPROCESSABLE_ENTITY);
    // The version was never taken: the whole container publishes through B.
    let res = cluster.publish(&cluster.b, &token, big.clone()).await;
    assert_eq!(
        res.status(),
        StatusCode::CREATED,
        "{}",
        res.text().await.unwrap()
    );

    // A restarts and serves, the version B published included.
    cluster.a = Replica::start(&cluster.backends, &cluster.dir.path().join("a")).await;
    let res = cluster
        .get(&cluster.a, "/api/v1/tools/big_tool/1.0.0/download")
        .await;
    assert_eq!(res.status(), StatusCode::OK);
    assert_eq!(res.bytes().await.unwrap().as_ref(), big.as_slice());
}
