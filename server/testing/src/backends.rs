//! Where a test registry keeps its data: SQLite + files in its own folder,
//! or a fresh PostgreSQL database and S3 key prefix, dropped with the test.
//!
//! The PostgreSQL + S3 backend needs `AGENTLANG_TEST_POSTGRES_URL` and
//! `AGENTLANG_TEST_S3_ENDPOINT` (and optionally the other
//! `AGENTLANG_TEST_S3_*` variables). Without them a test prints a skip line
//! and passes, except under `CI=true`, where a missing backend fails.

use agentlang_registry::config::Config;
use store::{DatabaseUrl, S3Settings, StorageUrl};

pub fn env(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.is_empty())
}

/// Where a registry keeps its data.
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
    let user = authority.rsplit_once('@').map(|(u, _)| u);
    let new_authority = match user {
        Some(user) => format!("{user}@{host_port}"),
        None => host_port.to_owned(),
    };
    format!(
        "{}{new_authority}{}",
        &url[..after_scheme],
        &rest[authority_end..]
    )
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
    pub async fn create() -> Option<Self> {
        let (Some(admin_url), Some(s3_endpoint)) = (
            env("AGENTLANG_TEST_POSTGRES_URL"),
            env("AGENTLANG_TEST_S3_ENDPOINT"),
        ) else {
            assert!(
                env("CI").as_deref() != Some("true"),
                "CI=true but AGENTLANG_TEST_POSTGRES_URL or AGENTLANG_TEST_S3_ENDPOINT is not set"
            );
            eprintln!(
                "skipped: PostgreSQL + S3 backend (set AGENTLANG_TEST_POSTGRES_URL and AGENTLANG_TEST_S3_ENDPOINT)"
            );
            return None;
        };
        let database = format!("t_{}", uuid::Uuid::new_v4().simple());
        let admin = sqlx::PgPool::connect(&admin_url)
            .await
            .expect("connect to AGENTLANG_TEST_POSTGRES_URL");
        // `database` is our own `t_<uuid>`: safe to splice.
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

    /// The database and storage settings as a process gets them, as
    /// `deploy/registry.env` gives them: through the environment only.
    /// `database_host` and `s3_endpoint` (a proxy in front of the backends)
    /// replace the real ones when given.
    pub fn env(
        &self,
        database_host: Option<&str>,
        s3_endpoint: Option<&str>,
    ) -> Vec<(String, String)> {
        let database_url = match database_host {
            Some(host) => with_host(&self.database_url(), host),
            None => self.database_url(),
        };
        [
            ("AGENTLANG_REGISTRY_DATABASE_URL", database_url),
            (
                "AGENTLANG_REGISTRY_STORAGE_URL",
                format!("s3://{}/{}", self.s3_bucket, self.database),
            ),
            (
                "AWS_ENDPOINT",
                s3_endpoint.unwrap_or(&self.s3_endpoint).to_owned(),
            ),
            ("AWS_ALLOW_HTTP", "true".into()),
            ("AWS_REGION", self.s3_region.clone()),
            ("AWS_ACCESS_KEY_ID", self.s3_key.clone()),
            ("AWS_SECRET_ACCESS_KEY", self.s3_secret.clone()),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v))
        .collect()
    }

    /// The same settings for an in-process registry, which reads S3's from
    /// its configuration rather than the process's `AWS_*` variables.
    pub fn apply(&self, config: &mut Config) {
        config.database_url = Some(DatabaseUrl::Postgres(self.database_url()));
        config.storage_url = Some(StorageUrl::S3 {
            bucket: self.s3_bucket.clone(),
            prefix: self.database.clone(),
        });
        config.s3 = S3Settings {
            endpoint: Some(self.s3_endpoint.clone()),
            region: Some(self.s3_region.clone()),
            access_key_id: Some(self.s3_key.clone()),
            secret_access_key: Some(self.s3_secret.clone()),
            allow_http: None,
        };
    }

    /// Keys under this test's prefix in the bucket (straight to S3, never
    /// through a proxy).
    pub async fn stored_blobs(&self) -> Vec<String> {
        use futures_util::StreamExt;
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
                    // `name` is our own `t_<uuid>`: safe to splice.
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

#[test]
fn database_urls_swap_their_database_and_host() {
    assert_eq!(
        with_database("postgres://postgres@127.0.0.1:5432/postgres", "t_1"),
        "postgres://postgres@127.0.0.1:5432/t_1"
    );
    assert_eq!(
        with_database("postgres://h:5432?sslmode=disable", "t_1"),
        "postgres://h:5432/t_1?sslmode=disable"
    );
    assert_eq!(
        with_host("postgres://u:p@db:5432/t_1", "127.0.0.1:7000"),
        "postgres://u:p@127.0.0.1:7000/t_1"
    );
    assert_eq!(host_port("postgres://u@db/x"), "db:5432");
}
