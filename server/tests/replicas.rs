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

use agentlang_registry_testing as support;

use std::{collections::HashMap, path::Path};

use agentlang_core::signing::SecretKey;
use agentlang_registry::config::Config;
use reqwest::{Client, StatusCode};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use store::{DatabaseUrl, StorageUrl};
use support::{Backend, TestApp, expect_status, problem, seed::tool_container};

/// The issuer of every token: the proxy's address in a real deployment.
/// Both replicas must agree on it, or a token from one is refused by the
/// other.
const PUBLIC_URL: &str = "http://registry.test";

/// One replica.
type Replica = TestApp;

/// Two replicas over one database and bucket, each with its own data folder
/// (which holds only upload spool files), configured all through the
/// environment, as in `deploy/registry.env`: the same JWT secret (as that
/// file shares it), issuer and backends, rate limits off.
struct Cluster {
    a: Replica,
    b: Replica,
    client: Client,
}

impl Cluster {
    async fn start() -> Option<Self> {
        let a = TestApp::builder(Backend::PostgresS3)
            .process()
            .public_url(PUBLIC_URL)
            .rate_limits_off()
            // Every publisher here shares 127.0.0.1.
            .limits(|l| l.max_concurrent_uploads_per_address = 16)
            .workers(2)
            .build()
            .await?;
        let b = a.replica().await;
        assert_ne!(a.url, b.url);
        Some(Self {
            a,
            b,
            client: Client::new(),
        })
    }

    /// Creates `username` through `via` and a token with `scopes`.
    async fn account_with_token(&self, via: &Replica, username: &str, scopes: &[&str]) -> Value {
        via.account_with_token_record(username, scopes).await
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn accounts_and_tokens_made_on_one_replica_work_on_the_other() {
    let Some(cluster) = Cluster::start().await else {
        return;
    };
    let (a, b) = (&cluster.a, &cluster.b);
    let created = cluster
        .account_with_token(a, "alice", &["publish", "tokens"])
        .await;
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
    let created = cluster
        .account_with_token(&cluster.a, "bob", &["tokens"])
        .await;
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
    cluster.a.restart(&[]).await;
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
    assert!(
        config.jwt_secret.is_none(),
        "no usable secret ships; replicas share the one kept in the database"
    );
    assert!(config.public_url.is_some(), "replicas must share an issuer");
    assert!(config.rate_limits.enabled, "limited per forwarded client");
    let nginx_in_compose_network: std::net::IpAddr = "172.30.0.9".parse().unwrap();
    assert!(
        config
            .rate_limits
            .trusted_proxies
            .iter()
            .any(|net| net.contains(&nginx_in_compose_network)),
        "the proxy's X-Forwarded-For is believed"
    );

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
    let (file, d) = (config.rate_limits, defaults.rate_limits);
    assert_eq!(
        (
            file.enabled,
            file.publish_per_minute,
            file.credentials_per_minute,
            file.logins_per_username_per_minute,
            file.anonymous_reads_per_minute,
            file.authenticated_per_minute,
            file.expensive_per_minute,
            file.agent_messages_per_minute,
            file.trusted_proxies,
        ),
        (
            d.enabled,
            d.publish_per_minute,
            d.credentials_per_minute,
            d.logins_per_username_per_minute,
            d.anonymous_reads_per_minute,
            d.authenticated_per_minute,
            d.expensive_per_minute,
            d.agent_messages_per_minute,
            d.trusted_proxies,
        ),
        "the example shows the defaults"
    );
    let (file, d) = (&config.limits, &defaults.limits);
    assert_eq!(
        format!("{file:?}"),
        format!("{d:?}"),
        "the example shows the default request limits"
    );
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
        // Registered through B, used through A: keys live in the database.
        let key = self.b.register_key(&token).await;
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
        expect_status(res, StatusCode::CREATED).await;
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

/// A replica keeps an account's keys briefly for its publishes; a key
/// registered or revoked through the other replica meanwhile still counts
/// at once: the new key is looked up again, the revoked one is refused by
/// the commit, and nothing of that publish is stored.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn keys_registered_or_revoked_through_one_replica_count_at_once_on_the_other() {
    let Some(cluster) = Cluster::start().await else {
        return;
    };
    let (a, b) = (&cluster.a, &cluster.b);
    let (token, first) = cluster.publisher("dora").await;
    let published = |key: &SecretKey, name: &str| tool_container(key, name, "1.0.0", &[], "# k", 0);
    // A reads (and keeps) dora's keys: the first one only.
    let res = cluster
        .publish(a, &token, published(&first, "kept_one"))
        .await;
    expect_status(res, StatusCode::CREATED).await;

    let second = b.register_key(&token).await;
    let res = cluster
        .publish(a, &token, published(&second, "kept_two"))
        .await;
    expect_status(res, StatusCode::CREATED).await;

    let res = cluster
        .client
        .delete(b.path(&format!("/api/v1/keys/{}", first.public_key().key_id())))
        .bearer_auth(&token)
        .send()
        .await
        .unwrap();
    expect_status(res, StatusCode::OK).await;
    let res = cluster
        .publish(a, &token, published(&first, "kept_three"))
        .await;
    problem(res, StatusCode::UNPROCESSABLE_ENTITY, "key-revoked").await;
    let res = cluster.get(b, "/api/v1/tools/kept_three").await;
    assert_eq!(res.status(), StatusCode::NOT_FOUND);
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
    let (body, mut sent_rx) = support::proxy::trickled_body(&big);
    let upload = tokio::spawn(
        cluster
            .client
            .post(cluster.a.path("/api/v1/publish"))
            .bearer_auth(&token)
            .header("content-type", "application/octet-stream")
            .body(body)
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
    expect_status(res, StatusCode::CREATED).await;

    // A restarts and serves, the version B published included.
    cluster.a.restart(&[]).await;
    let res = cluster
        .get(&cluster.a, "/api/v1/tools/big_tool/1.0.0/download")
        .await;
    assert_eq!(res.status(), StatusCode::OK);
    assert_eq!(res.bytes().await.unwrap().as_ref(), big.as_slice());
}

/// The transparency log over two replicas: publishes racing through both
/// get one order, each index used once, and both replicas serve the same
/// checkpoint once each has caught up, signed with the key they share
/// through the database. Half the publishes create their package and half
/// add a version to a known one: the two take the log's append lock and the
/// generation's row, and once took them in opposite orders (a deadlock).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replicas_publishing_at_once_log_one_order_with_no_index_twice() {
    let Some(cluster) = Cluster::start().await else {
        return;
    };
    // Four publishers, two uploads each at a time per replica: under the
    // per-account upload limit.
    let mut publishers = Vec::new();
    for p in 0..4 {
        let (token, key) = cluster.publisher(&format!("frank{p}")).await;
        let body = tool_container(&key, &format!("known_{p}"), "0.1.0", &[], "# known", 0);
        let res = cluster.publish(&cluster.a, &token, body).await;
        assert_eq!(res.status(), StatusCode::CREATED);
        publishers.push((token, key));
    }
    let publishes = (0..16).map(|i| {
        let via = if i % 2 == 0 { &cluster.a } else { &cluster.b };
        let (token, key) = &publishers[i / 4];
        let body = if i % 2 == 0 {
            tool_container(key, &format!("logged_{i}"), "1.0.0", &[], "# logged", 0)
        } else {
            let (name, version) = (format!("known_{}", i / 4), format!("1.{i}.0"));
            tool_container(key, &name, &version, &[], "# known", 0)
        };
        let token = token.clone();
        let cluster = &cluster;
        async move {
            let res = cluster.publish(via, &token, body).await;
            assert_eq!(res.status(), StatusCode::CREATED);
            let record: Value = res.json().await.unwrap();
            (
                record["log"]["index"].as_u64().expect("a log index"),
                record["name"].as_str().unwrap().to_owned(),
            )
        }
    });
    let logged: HashMap<u64, String> = futures_util::future::join_all(publishes)
        .await
        .into_iter()
        .collect();
    assert_eq!(logged.len(), 16, "an index was used twice: {logged:?}");
    let last = *logged.keys().max().unwrap();

    // Both replicas reach a checkpoint covering every publish, and agree.
    let mut notes = Vec::new();
    for replica in [&cluster.a, &cluster.b] {
        let mut note = String::new();
        for _ in 0..100 {
            note = cluster
                .get(replica, "/log/checkpoint")
                .await
                .text()
                .await
                .unwrap();
            let size: u64 = note.lines().nth(1).unwrap().parse().unwrap();
            if size > last {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        }
        notes.push(note);
    }
    let keys: Vec<String> = futures_util::future::join_all(
        [&cluster.a, &cluster.b]
            .map(|r| async { cluster.get(r, "/log/key").await.text().await.unwrap() }),
    )
    .await;
    assert_eq!(keys[0], keys[1], "one log key for every replica");
    let size: u64 = notes[0].lines().nth(1).unwrap().parse().unwrap();
    assert!(size > last, "{}", notes[0]);
    if notes[0].lines().nth(1) == notes[1].lines().nth(1) {
        assert_eq!(notes[0], notes[1]);
    }

    // Entry `i` of the bundle is the publish whose answer named `i`, and
    // the indexes are dense: no gap, no entry twice.
    let path = agentlang_core::tlog::tile_path(None, 0, size);
    let bundle = cluster
        .get(&cluster.b, &format!("/log/{path}"))
        .await
        .bytes()
        .await
        .unwrap();
    let mut rest = &bundle[..];
    let mut index = 0u64;
    while !rest.is_empty() {
        let len = usize::from(u16::from_be_bytes([rest[0], rest[1]]));
        let entry: Value = serde_json::from_slice(&rest[2..2 + len]).unwrap();
        if let Some(name) = logged.get(&index) {
            assert_eq!(entry["op"], "publish");
            assert_eq!(entry["name"], name.as_str(), "entry {index}");
        }
        rest = &rest[2 + len..];
        index += 1;
    }
    assert_eq!(index, size);
}
