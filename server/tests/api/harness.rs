//! Spawns the registry in-process on port 0 with its own database and
//! storage, and talks to it over real HTTP.
//!
//! Every backend test runs twice: on SQLite + filesystem, and on PostgreSQL +
//! S3 when `AGENTLANG_TEST_POSTGRES_URL` and `AGENTLANG_TEST_S3_ENDPOINT` are
//! set. Each PostgreSQL test gets its own database (`t_<uuid>`, dropped
//! afterwards) and each S3 test its own key prefix. Without those variables
//! the PostgreSQL run prints a skip line, except under `CI=true`, where a
//! missing backend fails.

use std::{num::NonZeroU32, path::PathBuf};

use actix_web::web;
use agentlang_registry::{
    config::{Config, DatabaseUrl, RateLimitSettings, RegistrationMode, S3Settings, StorageUrl},
    startup::Application,
    state::AppState,
};
use reqwest::{Method, RequestBuilder, Response, StatusCode};
use serde_json::{Value, json};

/// Known to tests so they can forge tokens with the real key.
pub const JWT_SECRET: &str = "732f2a526db765101f11658d85e31059b6e8d4a474343deeefc35a00ad16caa8";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    Sqlite,
    PostgresS3,
}

/// Generates one test per backend from an `async fn name(Backend)`.
macro_rules! backend_tests {
    ($($name:ident),* $(,)?) => {
        $(
            mod $name {
                #[actix_web::test]
                async fn sqlite() {
                    super::$name($crate::harness::Backend::Sqlite).await;
                }
                #[actix_web::test]
                async fn postgres_s3() {
                    super::$name($crate::harness::Backend::PostgresS3).await;
                }
            }
        )*
    };
}
pub(crate) use backend_tests;

struct PostgresS3Env {
    postgres_url: String,
    s3_endpoint: String,
    s3_bucket: String,
    s3_key: String,
    s3_secret: String,
    s3_region: String,
}

fn env(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.is_empty())
}

fn postgres_s3_env() -> Option<PostgresS3Env> {
    let (Some(postgres_url), Some(s3_endpoint)) = (
        env("AGENTLANG_TEST_POSTGRES_URL"),
        env("AGENTLANG_TEST_S3_ENDPOINT"),
    ) else {
        if env("CI").as_deref() == Some("true") {
            panic!(
                "CI=true but AGENTLANG_TEST_POSTGRES_URL or AGENTLANG_TEST_S3_ENDPOINT is not set"
            );
        }
        eprintln!(
            "skipped: PostgreSQL + S3 backend (set AGENTLANG_TEST_POSTGRES_URL and AGENTLANG_TEST_S3_ENDPOINT)"
        );
        return None;
    };
    Some(PostgresS3Env {
        postgres_url,
        s3_endpoint,
        s3_bucket: env("AGENTLANG_TEST_S3_BUCKET").unwrap_or_else(|| "agentlang-test".into()),
        s3_key: env("AGENTLANG_TEST_S3_ACCESS_KEY_ID").unwrap_or_else(|| "test".into()),
        s3_secret: env("AGENTLANG_TEST_S3_SECRET_ACCESS_KEY").unwrap_or_else(|| "test".into()),
        s3_region: env("AGENTLANG_TEST_S3_REGION").unwrap_or_else(|| "us-east-1".into()),
    })
}

/// `postgres://u@h:p/admin_db?x` with the database swapped for `name`.
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

pub struct TestApp {
    pub url: String,
    pub client: reqwest::Client,
    pub state: web::Data<AppState>,
    handle: actix_web::dev::ServerHandle,
    _dir: tempfile::TempDir,
    /// (admin URL, database name) to drop afterwards.
    postgres: Option<(String, String)>,
}

impl Drop for TestApp {
    fn drop(&mut self) {
        // Stops accepting; the test's runtime is going away anyway.
        drop(self.handle.stop(false));
        if let Some((admin_url, name)) = self.postgres.take() {
            // Drop is synchronous: a short-lived runtime on its own thread.
            let _ = std::thread::spawn(move || {
                let runtime = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .expect("runtime");
                runtime.block_on(async {
                    if let Ok(pool) = sqlx::PgPool::connect(&admin_url).await {
                        let _ = // `name` is our own `t_<uuid>`: safe to splice.
                        sqlx::query(sqlx::AssertSqlSafe(format!(
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
}

/// A config for tests: port 0, one worker, known JWT secret, generous limits.
pub fn test_config(data_dir: PathBuf) -> Config {
    Config {
        bind: "127.0.0.1:0".into(),
        data_dir,
        jwt_secret: Some(JWT_SECRET.into()),
        workers: Some(1),
        rate_limits: RateLimitSettings::all_at(NonZeroU32::new(10_000).unwrap()),
        registration: RegistrationMode::Open,
        ..Config::default()
    }
}

/// Spawns with defaults; `None` when the backend is skipped.
pub async fn spawn(backend: Backend) -> Option<TestApp> {
    spawn_with(backend, |_| {}).await
}

pub async fn spawn_with(backend: Backend, adjust: impl FnOnce(&mut Config)) -> Option<TestApp> {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut config = test_config(dir.path().join("data"));
    let mut postgres = None;
    if backend == Backend::PostgresS3 {
        let env = postgres_s3_env()?;
        let name = format!("t_{}", uuid::Uuid::new_v4().simple());
        let admin = sqlx::PgPool::connect(&env.postgres_url)
            .await
            .expect("connect to AGENTLANG_TEST_POSTGRES_URL");
        sqlx::query(sqlx::AssertSqlSafe(format!("CREATE DATABASE \"{name}\"")))
            .execute(&admin)
            .await
            .expect("create test database");
        admin.close().await;
        config.database_url = Some(DatabaseUrl::Postgres(with_database(
            &env.postgres_url,
            &name,
        )));
        config.storage_url = Some(StorageUrl::S3 {
            bucket: env.s3_bucket.clone(),
            prefix: name.clone(),
        });
        config.s3 = S3Settings {
            endpoint: Some(env.s3_endpoint.clone()),
            region: Some(env.s3_region.clone()),
            access_key_id: Some(env.s3_key.clone()),
            secret_access_key: Some(env.s3_secret.clone()),
            allow_http: None,
        };
        postgres = Some((env.postgres_url, name));
    }
    adjust(&mut config);
    let app = Application::build(config).await.expect("build the app");
    let url = format!("http://{}", app.address());
    let state = app.state();
    let handle = app.handle();
    actix_web::rt::spawn(app.run_until_stopped());
    Some(TestApp {
        url,
        client: reqwest::Client::new(),
        state,

        handle,
        _dir: dir,
        postgres,
    })
}

impl TestApp {
    pub fn request(&self, method: Method, path: &str) -> RequestBuilder {
        self.client.request(method, format!("{}{path}", self.url))
    }

    pub async fn get(&self, path: &str) -> Response {
        self.request(Method::GET, path).send().await.expect("GET")
    }

    pub async fn post_json(&self, path: &str, body: &Value) -> Response {
        self.request(Method::POST, path)
            .json(body)
            .send()
            .await
            .expect("POST")
    }

    pub async fn create_account(&self, username: &str, password: &str) -> Response {
        self.post_json(
            "/api/v1/accounts",
            &json!({"username": username, "password": password}),
        )
        .await
    }

    /// Creates the account and a token with `scopes`; returns the token.
    pub async fn account_with_token(&self, username: &str, scopes: &[&str]) -> String {
        let res = self.create_account(username, "password-123").await;
        assert_eq!(
            res.status(),
            StatusCode::CREATED,
            "{}",
            res.text().await.unwrap()
        );
        self.token(username, scopes).await
    }

    pub async fn token(&self, username: &str, scopes: &[&str]) -> String {
        let res = self
            .post_json(
                "/api/v1/tokens",
                &json!({"username": username, "password": "password-123", "name": "test", "scopes": scopes}),
            )
            .await;
        assert_eq!(res.status(), StatusCode::CREATED);
        let body: Value = res.json().await.unwrap();
        body["token"].as_str().unwrap().to_owned()
    }

    /// The stored account, if `username` names one.
    pub async fn account_record(
        &self,
        username: &str,
    ) -> Option<agentlang_registry::db::accounts::AccountRecord> {
        self.state
            .db
            .find_account(&agentlang_registry::common::names::Username::parse(username).unwrap())
            .await
            .unwrap()
    }

    pub async fn account_id(&self, username: &str) -> i64 {
        self.state
            .db
            .find_account(&agentlang_registry::common::names::Username::parse(username).unwrap())
            .await
            .unwrap()
            .expect("account exists")
            .id
    }
}

/// Reads a problem document, checking its media type and common members.
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
    assert_eq!(
        body["type"],
        format!("https://agentlang.dev/problems/{slug}"),
        "{body}"
    );
    assert_eq!(body["status"], status.as_u16());
    assert!(body["request_id"].is_string(), "{body}");
    assert!(body["instance"].is_string(), "{body}");
    body
}

#[test]
fn database_urls_swap_their_database() {
    assert_eq!(
        with_database("postgres://postgres@127.0.0.1:5432/postgres", "t_1"),
        "postgres://postgres@127.0.0.1:5432/t_1"
    );
    assert_eq!(
        with_database("postgres://h:5432?sslmode=disable", "t_1"),
        "postgres://h:5432/t_1?sslmode=disable"
    );
}

/// Records a version straight through the storage API, as publish will.
pub async fn seed_version(
    app: &TestApp,
    kind: agentlang_core::Kind,
    name: &str,
    version: &str,
    publisher: &str,
) -> Result<
    agentlang_registry::db::packages::PublishedVersion,
    agentlang_registry::db::packages::PublishError,
> {
    use agentlang_registry::{blobs::Sha256Digest, db::packages::NewVersion};
    let name = agentlang_core::PackageName::new(name).unwrap();
    let version = agentlang_core::Version::parse(version).unwrap();
    let bytes = format!("container of {name}@{version}");
    let sha256 = Sha256Digest::of(bytes.as_bytes());
    let publisher = app.account_id(publisher).await;
    let manifest = json!({"format": "agentlang.container/1", "name": name, "version": version});
    let spec = json!({"name": name, "version": version, "description": "seeded"});
    app.state
        .db
        .publish_version(&NewVersion {
            kind,
            name: &name,
            version: &version,
            sha256: &sha256,
            size: bytes.len() as u64,
            signer_key_id: None,
            manifest: &manifest,
            spec: &spec,
            lockfile: None,
            quality_report: None,
            extras: None,
            dependencies: &[],
            description: "seeded",
            keywords: &[],
            publisher,
        })
        .await
}
