//! [`TestApp::builder`]: the one way a test starts a registry, in-process
//! or as the real binary, on either backend, configured alike both ways.

use std::{
    collections::BTreeMap,
    path::{Path, PathBuf},
    sync::Arc,
    time::Duration,
};

use actix_web::{dev::ServerHandle, web};
use agentlang_core::signing::SecretKey;
use agentlang_registry::{config::Config, startup::Application, state::AppState};
use app::settings::{RateLimitSettings, RegistrationMode, RequestLimits};
use reqwest::{Method, RequestBuilder, Response};
use serde_json::Value;
use store::{Blobs, Db};

use crate::{
    backends::{Backend, Backends, host_port},
    process::{Process, default_binary, proc_status_kib},
    proxy::TcpProxy,
};

/// A change to an in-process registry's resolved configuration.
type ConfigChange = Box<dyn FnOnce(&mut Config)>;

/// What [`TestApp::builder`] starts. Every setting reaches the registry the
/// same way in both forms: as the `AGENTLANG_REGISTRY_*` environment (and,
/// for per-minute rate limits, a `registry.toml`) that the binary reads,
/// which the in-process form resolves with `Config::from_sources`.
pub struct TestAppBuilder {
    backend: Backend,
    process: bool,
    binary_defaults: bool,
    binary: Option<PathBuf>,
    behind_proxies: bool,
    registration: RegistrationMode,
    admins: Vec<String>,
    rate_limits: RateLimitSettings,
    limits: RequestLimits,
    workers: usize,
    public_url: Option<String>,
    max_upload_bytes: Option<usize>,
    env: Vec<(String, String)>,
    adjust: Vec<ConfigChange>,
    users: Vec<(String, Vec<String>, bool)>,
}

/// An account the builder created, with a token and perhaps a registered
/// signing key.
pub struct User {
    pub username: String,
    pub token: String,
    /// The token's id (`/api/v1/tokens/{id}`).
    pub token_id: String,
    pub signing_key: Option<SecretKey>,
}

impl User {
    /// The registered signing key (`user_with_key`).
    pub fn key(&self) -> &SecretKey {
        self.signing_key
            .as_ref()
            .unwrap_or_else(|| panic!("{} has no signing key: use user_with_key", self.username))
    }
}

enum Server {
    InProcess {
        state: web::Data<AppState>,
        handle: ServerHandle,
        store: Box<Store>,
    },
    Process(Process),
}

/// An in-process registry's storage, opened beside it on the same database
/// and blob store: for seeding, and for tests that look behind the API's
/// back. Its own pool, so nothing here reaches into the registry.
pub struct Store {
    pub db: Db,
    pub blobs: Blobs,
}

impl Store {
    async fn open(config: &Config) -> Self {
        let db = Db::connect(
            &config.effective_database_url(),
            config.limits.database_timeout,
            1,
        )
        .await
        .expect("open the registry's database beside it");
        let blobs = Blobs::open(
            &config.effective_storage_url(),
            &config.s3,
            config.limits.storage_timeout,
        )
        .expect("open the registry's blob store beside it");
        Self { db, blobs }
    }
}

/// A running registry: its URL and a client, its users, its folder and
/// backends; in process form also its pid, memory, log, SIGKILL and restart.
pub struct TestApp {
    pub url: String,
    pub client: reqwest::Client,
    server: Server,
    /// `None` with `binary_defaults`: the registry keeps its own.
    jwt_secret: Option<String>,
    users: Arc<BTreeMap<String, User>>,
    /// The builder's `admins`: made admins when the harness registers them.
    admins: Vec<String>,
    /// What a process was started with, for restarts and replicas.
    binary: Option<PathBuf>,
    env: Vec<(String, String)>,
    proxies: Option<(Arc<TcpProxy>, Arc<TcpProxy>)>,
    backends: Option<Arc<Backends>>,
    dir: tempfile::TempDir,
}

impl TestApp {
    /// A registry on `backend` with test settings: open registration, no
    /// admins, every rate limit at 10,000 a minute, default request limits,
    /// one worker, a random JWT secret.
    pub fn builder(backend: Backend) -> TestAppBuilder {
        TestAppBuilder {
            backend,
            process: false,
            binary_defaults: false,
            binary: None,
            behind_proxies: false,
            registration: RegistrationMode::Open,
            admins: Vec::new(),
            rate_limits: RateLimitSettings::all_at(std::num::NonZeroU32::new(10_000).unwrap()),
            limits: RequestLimits::default(),
            workers: 1,
            public_url: None,
            max_upload_bytes: None,
            env: Vec::new(),
            adjust: Vec::new(),
            users: Vec::new(),
        }
    }
}

impl TestAppBuilder {
    /// Runs the real binary as a separate process (SIGKILL, RSS, restarts,
    /// replicas) instead of in this test's runtime.
    pub fn process(mut self) -> Self {
        self.process = true;
        self
    }

    /// The binary to run (the end-to-end crate's; the registry's own tests
    /// get it from Cargo).
    pub fn binary(mut self, path: &Path) -> Self {
        self.binary = Some(path.to_owned());
        self
    }

    /// A process given nothing but a free port and what the test sets: the
    /// binary's own defaults for the rest, its data in `./data` of its
    /// working folder ([`TestApp::data_dir`]).
    pub fn binary_defaults(mut self) -> Self {
        self.binary_defaults = true;
        self.process()
    }

    /// PostgreSQL and S3 reached through [`TcpProxy`]s the test controls
    /// ([`TestApp::proxies`]).
    pub fn behind_proxies(mut self) -> Self {
        self.behind_proxies = true;
        self
    }

    pub fn registration(mut self, mode: RegistrationMode) -> Self {
        self.registration = mode;
        self
    }

    /// `AGENTLANG_REGISTRY_ADMINS`; the harness also grants these names
    /// admin rights when it registers them ([`TestApp::grant_admin`]).
    pub fn admins(mut self, admins: &[&str]) -> Self {
        self.admins = admins.iter().map(|a| (*a).to_owned()).collect();
        self
    }

    /// Changes the test budgets (every one 10,000 a minute).
    pub fn rate_limits(mut self, adjust: impl FnOnce(&mut RateLimitSettings)) -> Self {
        adjust(&mut self.rate_limits);
        self
    }

    /// Production's budgets ([`RateLimitSettings::default`]), changed by
    /// `adjust`.
    pub fn default_rate_limits(mut self, adjust: impl FnOnce(&mut RateLimitSettings)) -> Self {
        self.rate_limits = RateLimitSettings::default();
        adjust(&mut self.rate_limits);
        self
    }

    /// No rate limits (`AGENTLANG_REGISTRY_RATE_LIMITS=off`).
    pub fn rate_limits_off(self) -> Self {
        self.default_rate_limits(|r| r.enabled = false)
    }

    /// Timeouts and concurrency bounds, from the defaults.
    pub fn limits(mut self, adjust: impl FnOnce(&mut RequestLimits)) -> Self {
        adjust(&mut self.limits);
        self
    }

    pub fn workers(mut self, workers: usize) -> Self {
        self.workers = workers;
        self
    }

    pub fn public_url(mut self, url: &str) -> Self {
        self.public_url = Some(url.to_owned());
        self
    }

    pub fn max_upload_bytes(mut self, bytes: usize) -> Self {
        self.max_upload_bytes = Some(bytes);
        self
    }

    /// One `AGENTLANG_REGISTRY_*` (or `AWS_*`) variable, over the builder's.
    pub fn env(mut self, key: &str, value: impl Into<String>) -> Self {
        self.env.push((key.to_owned(), value.into()));
        self
    }

    /// Changes the resolved configuration of an in-process registry (a
    /// process is configured only by what it reads).
    pub fn config(mut self, adjust: impl FnOnce(&mut Config) + 'static) -> Self {
        self.adjust.push(Box::new(adjust));
        self
    }

    /// An account `username` (password [`super::seed::PASSWORD`]) with a
    /// token of `scopes`: [`TestApp::user`].
    pub fn user(mut self, username: &str, scopes: &[&str]) -> Self {
        let scopes = scopes.iter().map(|s| (*s).to_owned()).collect();
        self.users.push((username.to_owned(), scopes, false));
        self
    }

    /// The same, with a signing key registered with its proof of
    /// possession (`scopes` must hold `keys`).
    pub fn user_with_key(mut self, username: &str, scopes: &[&str]) -> Self {
        assert!(scopes.contains(&"keys"), "registering a key needs `keys`");
        let scopes = scopes.iter().map(|s| (*s).to_owned()).collect();
        self.users.push((username.to_owned(), scopes, true));
        self
    }

    /// What the registry reads: variables, and the `registry.toml` they
    /// name when per-minute rate limits differ from production's.
    fn registry_env(
        &self,
        dir: &Path,
        jwt_secret: Option<&str>,
        backends: Option<(&Backends, Option<&str>, Option<&str>)>,
    ) -> Vec<(String, String)> {
        let mut env: Vec<(String, String)> = Vec::new();
        let mut set = |key: &str, value: String| {
            env.push((format!("AGENTLANG_REGISTRY_{key}"), value));
        };
        set("BIND", "127.0.0.1:0".into());
        set("WORKERS", self.workers.to_string());
        if !self.binary_defaults {
            set("DATA_DIR", dir.join("data").display().to_string());
            set(
                "REGISTRATION",
                match self.registration {
                    RegistrationMode::Open => "open",
                    RegistrationMode::Closed => "closed",
                }
                .into(),
            );
            if let Some(secret) = jwt_secret {
                set("JWT_SECRET", secret.to_owned());
            }
            let mut enabled = self.rate_limits.clone();
            enabled.enabled = true;
            if format!("{enabled:?}") != format!("{:?}", RateLimitSettings::default()) {
                let file = dir.join("registry.toml");
                std::fs::write(&file, rate_limits_toml(&self.rate_limits))
                    .expect("write registry.toml");
                set("CONFIG", file.display().to_string());
            } else if !self.rate_limits.enabled {
                set("RATE_LIMITS", "off".into());
            }
        }
        if !self.admins.is_empty() {
            set("ADMINS", self.admins.join(","));
        }
        if let Some(url) = &self.public_url {
            set("PUBLIC_URL", url.clone());
        }
        if let Some(bytes) = self.max_upload_bytes {
            set("MAX_UPLOAD_BYTES", bytes.to_string());
        }
        let (limits, defaults) = (&self.limits, RequestLimits::default());
        for (key, value, default) in [
            (
                "BODY_IDLE_TIMEOUT_SECS",
                limits.body_idle_timeout,
                defaults.body_idle_timeout,
            ),
            (
                "UPLOAD_TIMEOUT_SECS",
                limits.upload_timeout,
                defaults.upload_timeout,
            ),
            (
                "UPLOAD_RATE_GRACE_SECS",
                limits.upload_rate_grace,
                defaults.upload_rate_grace,
            ),
            (
                "REQUEST_TIMEOUT_SECS",
                limits.request_timeout,
                defaults.request_timeout,
            ),
            (
                "DATABASE_TIMEOUT_SECS",
                limits.database_timeout,
                defaults.database_timeout,
            ),
            (
                "STORAGE_TIMEOUT_SECS",
                limits.storage_timeout,
                defaults.storage_timeout,
            ),
        ] {
            if value != default {
                set(key, value.as_secs().to_string());
            }
        }
        for (key, value, default) in [
            (
                "MAX_CONCURRENT_UPLOADS",
                limits.max_concurrent_uploads,
                defaults.max_concurrent_uploads,
            ),
            (
                "MAX_CONCURRENT_UPLOADS_PER_ACCOUNT",
                limits.max_concurrent_uploads_per_account,
                defaults.max_concurrent_uploads_per_account,
            ),
            (
                "MAX_CONCURRENT_UPLOADS_PER_ADDRESS",
                limits.max_concurrent_uploads_per_address,
                defaults.max_concurrent_uploads_per_address,
            ),
            (
                "MAX_REQUESTS_PER_ADDRESS",
                limits.max_requests_per_address,
                defaults.max_requests_per_address,
            ),
            (
                "BODY_BUDGET_MIB",
                limits.body_budget_bytes / (1024 * 1024),
                defaults.body_budget_bytes / (1024 * 1024),
            ),
        ] {
            if value != default {
                set(key, value.to_string());
            }
        }
        if limits.upload_min_bytes_per_sec != defaults.upload_min_bytes_per_sec {
            set(
                "UPLOAD_MIN_BYTES_PER_SEC",
                limits.upload_min_bytes_per_sec.to_string(),
            );
        }
        if let Some((backends, database_host, s3_endpoint)) = backends {
            env.extend(backends.env(database_host, s3_endpoint));
        }
        env.extend(self.env.iter().cloned());
        env
    }

    /// Starts the registry and creates its users; `None` when the backend
    /// is skipped (never under `CI=true`).
    pub async fn build(self) -> Option<TestApp> {
        let backends = match self.backend {
            Backend::Sqlite => None,
            Backend::PostgresS3 => Some(Arc::new(Backends::create().await?)),
        };
        assert!(
            !self.behind_proxies || backends.is_some(),
            "proxies stand in front of PostgreSQL and S3"
        );
        assert!(
            !self.process || self.adjust.is_empty(),
            "a process reads only its environment: use the builder's settings or env()"
        );
        let dir = tempfile::tempdir().expect("tempdir");
        let jwt_secret = (!self.binary_defaults).then(random_secret);
        let proxies = match (&backends, self.behind_proxies) {
            (Some(b), true) => Some((
                Arc::new(TcpProxy::start(&host_port(&b.admin_url)).await),
                Arc::new(TcpProxy::start(&host_port(&b.s3_endpoint)).await),
            )),
            _ => None,
        };
        let proxy_endpoint = proxies
            .as_ref()
            .map(|(_, s3)| format!("http://{}", s3.address));
        let (url, server, env, binary) = if self.process {
            let env = self.registry_env(
                dir.path(),
                jwt_secret.as_deref(),
                backends.as_deref().map(|b| {
                    (
                        b,
                        proxies.as_ref().map(|(db, _)| db.address.as_str()),
                        proxy_endpoint.as_deref(),
                    )
                }),
            );
            let binary = self
                .binary
                .clone()
                .or_else(default_binary)
                .expect("the registry binary: set it with .binary()");
            let process = Process::start(&binary, dir.path(), &env).await;
            (
                process.url.clone(),
                Server::Process(process),
                env,
                Some(binary),
            )
        } else {
            assert!(
                !self.behind_proxies,
                "an in-process registry reads S3's endpoint from its configuration: use .process()"
            );
            let env: BTreeMap<String, String> = self
                .registry_env(dir.path(), jwt_secret.as_deref(), None)
                .into_iter()
                .collect();
            let mut config =
                Config::from_sources(|key| env.get(key).cloned()).expect("the test configuration");
            if let Some(backends) = &backends {
                backends.apply(&mut config);
            }
            for adjust in self.adjust {
                adjust(&mut config);
            }
            let app = Application::build(config).await.expect("build the app");
            let url = format!("http://{}", app.address());
            let state = app.state();
            let handle = app.handle();
            let store = Box::new(Store::open(&state.config).await);
            actix_web::rt::spawn(app.run_until_stopped());
            (
                url,
                Server::InProcess {
                    state,
                    handle,
                    store,
                },
                Vec::new(),
                None,
            )
        };
        let mut users = BTreeMap::new();
        let mut app = TestApp {
            url,
            client: reqwest::Client::new(),
            server,
            jwt_secret,
            users: Arc::default(),
            admins: self.admins.clone(),
            binary,
            env,
            proxies,
            backends,
            dir,
        };
        for (username, scopes, with_key) in self.users {
            let scopes: Vec<&str> = scopes.iter().map(String::as_str).collect();
            let created = app.account_with_token_record(&username, &scopes).await;
            let token = created["token"].as_str().unwrap().to_owned();
            let signing_key = if with_key {
                Some(app.register_key(&token).await)
            } else {
                None
            };
            users.insert(
                username.clone(),
                User {
                    username,
                    token_id: created["id"].as_str().unwrap().to_owned(),
                    token,
                    signing_key,
                },
            );
        }
        app.users = Arc::new(users);
        Some(app)
    }
}

/// 64 random hex digits: the registry refuses weak secrets.
fn random_secret() -> String {
    format!(
        "{}{}",
        uuid::Uuid::new_v4().simple(),
        uuid::Uuid::new_v4().simple()
    )
}

/// `[rate_limits]` of a `registry.toml` with every budget of `limits`.
fn rate_limits_toml(limits: &RateLimitSettings) -> String {
    let proxies: Vec<String> = limits
        .trusted_proxies
        .iter()
        .map(|net| format!("{:?}", net.to_string()))
        .collect();
    format!(
        "[rate_limits]\nenabled = {}\npublish_per_minute = {}\ncredentials_per_minute = {}\n\
         logins_per_username_per_minute = {}\nanonymous_reads_per_minute = {}\n\
         authenticated_per_minute = {}\nexpensive_per_minute = {}\n\
         agent_messages_per_minute = {}\ntrusted_proxies = [{}]\n",
        limits.enabled,
        limits.publish_per_minute,
        limits.credentials_per_minute,
        limits.logins_per_username_per_minute,
        limits.anonymous_reads_per_minute,
        limits.authenticated_per_minute,
        limits.expensive_per_minute,
        limits.agent_messages_per_minute,
        proxies.join(", ")
    )
}

impl TestApp {
    pub fn path(&self, path: &str) -> String {
        format!("{}{path}", self.url)
    }

    pub fn request(&self, method: Method, path: &str) -> RequestBuilder {
        self.client.request(method, self.path(path))
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

    /// Makes `username` an admin as an operator does once the account
    /// exists (`agentlang-registry admin grant`): an admin named before
    /// the account registered is not made one by registering.
    pub async fn grant_admin(&self, username: &str) {
        match &self.server {
            Server::InProcess { store, .. } => {
                let username = agentlang_core::Username::parse(username).expect("a username");
                app::accounts::set_admin(&store.db, &username, true)
                    .await
                    .expect("grant admin");
            }
            Server::Process(_) => {
                let binary = self.binary.as_deref().expect("a process");
                let out = std::process::Command::new(binary)
                    .env_clear()
                    .envs(self.env.iter().cloned())
                    .current_dir(self.dir.path())
                    .args(["admin", "grant", username])
                    .output()
                    .expect("run admin grant");
                assert!(out.status.success(), "admin grant {username}: {out:?}");
            }
        }
    }

    /// The registry's public URL: its address unless configured.
    pub fn public_url(&self) -> String {
        match &self.server {
            Server::InProcess { state, .. } => state.registry.public_url().to_owned(),
            Server::Process(_) => self
                .env
                .iter()
                .find(|(k, _)| k == "AGENTLANG_REGISTRY_PUBLIC_URL")
                .map_or_else(|| self.url.clone(), |(_, v)| v.clone()),
        }
    }

    /// Whether the builder named `username` an admin.
    pub(crate) fn is_configured_admin(&self, username: &str) -> bool {
        let wanted = agentlang_core::names::normalize(username);
        self.admins
            .iter()
            .any(|admin| agentlang_core::names::normalize(admin) == wanted)
    }

    /// The HS256 secret the registry signs tokens with, to forge some.
    pub fn jwt_secret(&self) -> &str {
        self.jwt_secret
            .as_deref()
            .expect("a registry on the binary's defaults keeps its secret to itself")
    }

    /// A user the builder created.
    pub fn user(&self, username: &str) -> &User {
        self.users
            .get(username)
            .unwrap_or_else(|| panic!("no user {username}: add it with .user()"))
    }

    /// Where the registry keeps its files (SQLite database, blobs, spool).
    pub fn data_dir(&self) -> PathBuf {
        self.dir.path().join("data")
    }

    /// Backdates every version of `version` to `days` days ago in a
    /// SQLite registry's database, in process or not: what a registry
    /// looks like some days after a release, which no API can make.
    /// Before any resolve reads them, since no generation moves.
    pub async fn backdate_versions(&self, version: &str, days: i64) {
        use sqlx::Connection as _;
        let url = format!("sqlite://{}", self.data_dir().join("registry.db").display());
        let mut conn = sqlx::SqliteConnection::connect(&url)
            .await
            .expect("the registry's SQLite database");
        sqlx::query("UPDATE versions SET published_at = published_at - $1 WHERE version = $2")
            .bind(days * 86_400)
            .bind(version)
            .execute(&mut conn)
            .await
            .expect("backdating versions");
    }

    /// Files in the upload spool.
    pub fn spool_files(&self) -> usize {
        std::fs::read_dir(self.data_dir().join("uploads")).map_or(0, |d| d.count())
    }

    /// The PostgreSQL database and S3 prefix, on that backend.
    pub fn backends(&self) -> &Backends {
        self.backends
            .as_deref()
            .expect("a PostgreSQL + S3 registry")
    }

    /// The proxies in front of PostgreSQL and S3 (`behind_proxies`).
    pub fn proxies(&self) -> (Arc<TcpProxy>, Arc<TcpProxy>) {
        self.proxies.clone().expect("built behind_proxies")
    }

    /// The in-process registry's state (database, blobs).
    pub fn state(&self) -> &web::Data<AppState> {
        match &self.server {
            Server::InProcess { state, .. } => state,
            Server::Process(_) => panic!("a process's state is its own: build without .process()"),
        }
    }

    /// The in-process registry's rules, to call one directly.
    pub fn registry(&self) -> &app::Registry {
        &self.state().registry
    }

    /// The in-process registry's storage, opened beside it ([`Store`]).
    /// Every transparency-log entry, parsed, oldest first.
    pub async fn log_entries(&self) -> Vec<Value> {
        let db = &self.store().db;
        let count = db.log_entry_count().await.expect("log size");
        db.log_entries(0, count)
            .await
            .expect("log entries")
            .into_iter()
            .map(|(_, bytes)| serde_json::from_slice(&bytes).expect("a log entry is JSON"))
            .collect()
    }

    pub fn store(&self) -> &Store {
        match &self.server {
            Server::InProcess { store, .. } => store,
            Server::Process(_) => {
                panic!("a process's storage is its own: build without .process()")
            }
        }
    }

    fn process(&self) -> &Process {
        match &self.server {
            Server::Process(process) => process,
            Server::InProcess { .. } => panic!("an in-process registry: build with .process()"),
        }
    }

    fn process_mut(&mut self) -> &mut Process {
        match &mut self.server {
            Server::Process(process) => process,
            Server::InProcess { .. } => panic!("an in-process registry: build with .process()"),
        }
    }

    pub fn pid(&self) -> u32 {
        self.process().pid()
    }

    /// The process's resident memory, KiB (`VmRSS`).
    pub fn rss_kib(&self) -> u64 {
        proc_status_kib(self.pid(), "VmRSS").expect("the registry's VmRSS")
    }

    /// The process's peak resident memory so far, KiB (`VmHWM`).
    pub fn peak_rss_kib(&self) -> u64 {
        proc_status_kib(self.pid(), "VmHWM").expect("the registry's VmHWM")
    }

    /// The process's log so far.
    pub fn log(&self) -> String {
        self.process().log()
    }

    /// SIGKILL: no graceful shutdown, no cleanup.
    pub fn kill_9(&mut self) {
        self.process_mut().kill_9();
    }

    /// SIGTERM, and how the process ended within `within` (`None`: still
    /// running).
    pub async fn terminate(&mut self, within: Duration) -> Option<std::process::ExitStatus> {
        let process = self.process_mut();
        process.terminate();
        process.exit_status(within).await
    }

    /// Kills the process (if it still runs) and starts it again on the same
    /// folder and backends, the variables in `changes` replacing or adding
    /// to the first start's. The address changes.
    pub async fn restart(&mut self, changes: &[(&str, String)]) {
        self.kill_9();
        for (key, value) in changes {
            self.env.retain(|(k, _)| k != key);
            self.env.push(((*key).to_owned(), value.clone()));
        }
        let binary = self.binary.clone().expect("a process");
        let process = Process::start(&binary, self.dir.path(), &self.env).await;
        self.url = process.url.clone();
        self.server = Server::Process(process);
    }

    /// A second process with this one's settings, secret, users and
    /// backends and a data folder of its own: a replica behind the same
    /// proxy.
    pub async fn replica(&self) -> TestApp {
        let binary = self.binary.clone().expect("a process");
        let dir = tempfile::tempdir().expect("tempdir");
        let mut env = self.env.clone();
        for (key, value) in &mut env {
            match key.as_str() {
                "AGENTLANG_REGISTRY_DATA_DIR" => {
                    *value = dir.path().join("data").display().to_string()
                }
                "AGENTLANG_REGISTRY_CONFIG" => {
                    let file = dir.path().join("registry.toml");
                    std::fs::copy(&*value, &file).expect("copy registry.toml");
                    *value = file.display().to_string();
                }
                _ => {}
            }
        }
        let process = Process::start(&binary, dir.path(), &env).await;
        TestApp {
            url: process.url.clone(),
            client: reqwest::Client::new(),
            server: Server::Process(process),
            jwt_secret: self.jwt_secret.clone(),
            users: Arc::clone(&self.users),
            admins: self.admins.clone(),
            binary: Some(binary),
            env,
            proxies: self.proxies.clone(),
            backends: self.backends.clone(),
            dir,
        }
    }
}

impl Drop for TestApp {
    fn drop(&mut self) {
        if let Server::InProcess { handle, .. } = &self.server {
            // Stops accepting; the test's runtime is going away anyway.
            drop(handle.stop(false));
        }
    }
}
