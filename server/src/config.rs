//! Configuration: built-in defaults, then a TOML file
//! (`AGENTLANG_REGISTRY_CONFIG`), then `AGENTLANG_REGISTRY_*` variables; the
//! environment wins.
//!
//! With nothing configured the registry serves `127.0.0.1:8080` with SQLite
//! and filesystem blobs under `./data`.

use std::{
    path::{Path, PathBuf},
    time::Duration,
};

use app::settings::{
    DatabaseUrl, IdentitySettings, LogSettings, RateLimitSettings, RegistrationMode, RequestLimits,
    S3Settings, Settings, StorageUrl, parse_network,
};
use serde::Deserialize;

/// Prefix of every environment variable the registry reads.
pub const ENV_PREFIX: &str = "AGENTLANG_REGISTRY_";

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("cannot read the configuration file {path}: {source}")]
    ReadFile {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("invalid configuration file {path}: {source}")]
    ParseFile {
        path: PathBuf,
        source: Box<toml::de::Error>,
    },
    #[error("{variable}: {message}")]
    Invalid { variable: String, message: String },
}

/// The registry's settings, resolved.
#[derive(Debug, Clone)]
pub struct Config {
    /// `host:port` to listen on; port 0 picks a free port.
    pub bind: String,
    /// The URL clients reach the registry at: JWT issuer, links. Defaults to
    /// `http://` plus the bound address.
    pub public_url: Option<String>,
    /// Holds the SQLite file, the filesystem blobs and the JWT secret unless
    /// configured elsewhere.
    pub data_dir: PathBuf,
    /// Defaults to the SQLite file `<data_dir>/registry.db`.
    pub database_url: Option<DatabaseUrl>,
    /// Defaults to `file://<data_dir>`.
    pub storage_url: Option<StorageUrl>,
    pub s3: S3Settings,
    /// Largest request body accepted for uploads, in bytes.
    pub max_upload_bytes: usize,
    pub registration: RegistrationMode,
    pub rate_limits: RateLimitSettings,
    /// HS256 secret for API tokens (at least 32 random bytes; weak ones are
    /// refused at start-up). When absent, the registry generates one and
    /// keeps it in its database, so every replica of the database shares it.
    pub jwt_secret: Option<String>,
    /// Usernames of accounts to make admins at start-up. Each binds to the
    /// account holding the name the first time a registry starts with it,
    /// or to none: an account registered under the name later is not made
    /// an admin (`agentlang-registry admin grant` is how to, once known).
    pub admins: Vec<String>,
    /// HTTP worker threads; `None` means one per core.
    pub workers: Option<usize>,
    /// The registry's agent identity (CLowl, MoltSpeak).
    pub identity: IdentitySettings,
    /// The transparency log's key, origin and witnesses.
    pub log: LogSettings,
    /// How often each replica sweeps unreferenced blobs; zero turns the
    /// periodic sweep off. Sweeps are idempotent, so replicas may overlap.
    pub sweep_interval: Duration,
    /// How old an unreferenced blob must be before a sweep deletes it: longer
    /// than any publish takes between writing its blob and committing.
    pub sweep_grace: Duration,
    /// How long one resolution may run before it is answered 503.
    pub resolve_timeout: Duration,
    /// With S3 storage: how long the presigned URL a download is redirected
    /// to stays valid; zero streams downloads through the registry. A CDN
    /// in front of the bucket then serves the bytes.
    pub download_redirect: Duration,
    /// Memory for recently downloaded containers (each up to 2 MiB), served
    /// without touching the store again; zero keeps none.
    pub blob_cache_mib: u64,
    /// How long before a request arrived the registry-generation read that
    /// validates its cached answer may have started: a change made through
    /// another replica shows within this (this replica's own, at once).
    /// Zero waits, under load, for a read that started after the request.
    pub freshness_window: Duration,
    /// Timeouts and concurrency bounds of requests.
    pub limits: RequestLimits,
    /// The namespace of MCP server names on `/v0.1/servers`
    /// (`<namespace>/<tool name>`, reverse DNS); `None`: the public URL's
    /// host reversed, or `local.agentlang` for an address.
    pub mcp_namespace: Option<String>,
    /// Trusted publishing: the OpenID Connect issuers whose ID tokens are
    /// exchanged for publish tokens (none: trusted publishing is off).
    pub oidc_issuers: Vec<String>,
    /// The `aud` those ID tokens must carry; `None`: the public URL's
    /// `host[:port]`.
    pub oidc_audience: Option<String>,
}

impl Default for Config {
    fn default() -> Self {
        Self {
            bind: "127.0.0.1:8080".to_owned(),
            public_url: None,
            data_dir: PathBuf::from("./data"),
            database_url: None,
            storage_url: None,
            s3: S3Settings::default(),
            max_upload_bytes: 50 * 1024 * 1024,
            registration: RegistrationMode::Open,
            rate_limits: RateLimitSettings::default(),
            jwt_secret: None,
            admins: Vec::new(),
            workers: None,
            identity: IdentitySettings::default(),
            log: LogSettings::default(),
            sweep_interval: Duration::from_secs(3600),
            sweep_grace: Duration::from_secs(3600),
            resolve_timeout: Duration::from_secs(5),
            download_redirect: Duration::ZERO,
            blob_cache_mib: 64,
            freshness_window: Duration::from_millis(1),
            limits: RequestLimits::default(),
            mcp_namespace: None,
            oidc_issuers: Vec::new(),
            oidc_audience: None,
        }
    }
}

/// The TOML file's shape: every key optional.
#[derive(Debug, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
struct FileConfig {
    bind: Option<String>,
    public_url: Option<String>,
    data_dir: Option<PathBuf>,
    database_url: Option<String>,
    storage_url: Option<String>,
    s3: Option<S3Settings>,
    max_upload_bytes: Option<usize>,
    registration: Option<RegistrationMode>,
    rate_limits: Option<RateLimitSettings>,
    jwt_secret: Option<String>,
    admins: Option<Vec<String>>,
    workers: Option<usize>,
    identity: Option<IdentitySettings>,
    /// `[tlog]`; `[log]` is its first spelling, kept working.
    #[serde(alias = "log")]
    tlog: Option<LogSettings>,
    sweep_interval_secs: Option<u64>,
    sweep_grace_secs: Option<u64>,
    resolve_timeout_ms: Option<u64>,
    download_redirect_secs: Option<u64>,
    blob_cache_mib: Option<u64>,
    freshness_window_ms: Option<u64>,
    body_idle_timeout_secs: Option<u64>,
    upload_timeout_secs: Option<u64>,
    request_timeout_secs: Option<u64>,
    max_concurrent_uploads: Option<usize>,
    max_concurrent_uploads_per_account: Option<usize>,
    max_concurrent_uploads_per_address: Option<usize>,
    max_requests_per_address: Option<usize>,
    body_budget_mib: Option<usize>,
    upload_min_bytes_per_sec: Option<u64>,
    upload_rate_grace_secs: Option<u64>,
    database_timeout_secs: Option<u64>,
    storage_timeout_secs: Option<u64>,
    mcp_namespace: Option<String>,
    oidc_issuers: Option<Vec<String>>,
    oidc_audience: Option<String>,
}

impl Config {
    /// Reads the process environment and the file it names.
    pub fn from_env() -> Result<Self, ConfigError> {
        Self::from_sources(|key| std::env::var(key).ok())
    }

    /// Resolves defaults, the file named by `AGENTLANG_REGISTRY_CONFIG` and
    /// the variables `env` returns, in that order.
    pub fn from_sources(env: impl Fn(&str) -> Option<String>) -> Result<Self, ConfigError> {
        let var = |name: &str| env(&format!("{ENV_PREFIX}{name}")).filter(|v| !v.is_empty());
        let mut config = Config::default();
        if let Some(path) = var("CONFIG") {
            let path = PathBuf::from(path);
            let text = std::fs::read_to_string(&path).map_err(|source| ConfigError::ReadFile {
                path: path.clone(),
                source,
            })?;
            config.apply_file(&path, &text)?;
        }
        config.apply_env(var)?;
        Ok(config)
    }

    fn apply_file(&mut self, path: &Path, text: &str) -> Result<(), ConfigError> {
        let file: FileConfig = toml::from_str(text).map_err(|source| ConfigError::ParseFile {
            path: path.to_owned(),
            source: Box::new(source),
        })?;
        let invalid = |key: &str, message: String| ConfigError::Invalid {
            variable: format!("{} ({key})", path.display()),
            message,
        };
        if let Some(v) = file.bind {
            check_bind(&v).map_err(|m| invalid("bind", m))?;
            self.bind = v;
        }
        if let Some(v) = file.public_url {
            self.public_url = Some(normalize_public_url(&v).map_err(|m| invalid("public_url", m))?);
        }
        if let Some(v) = file.data_dir {
            self.data_dir = v;
        }
        if let Some(v) = file.database_url {
            self.database_url =
                Some(DatabaseUrl::parse(&v).map_err(|m| invalid("database_url", m))?);
        }
        if let Some(v) = file.storage_url {
            self.storage_url = Some(StorageUrl::parse(&v).map_err(|m| invalid("storage_url", m))?);
        }
        if let Some(v) = file.s3 {
            self.s3 = v;
        }
        if let Some(v) = file.max_upload_bytes {
            self.max_upload_bytes = v;
        }
        if let Some(v) = file.registration {
            self.registration = v;
        }
        if let Some(v) = file.rate_limits {
            self.rate_limits = v;
        }
        if file.jwt_secret.is_some() {
            self.jwt_secret = file.jwt_secret;
        }
        if let Some(admins) = file.admins {
            self.admins = admins;
        }
        if file.workers.is_some() {
            self.workers = file.workers;
        }
        if let Some(v) = file.tlog {
            self.log = v;
        }
        if let Some(v) = file.identity {
            self.identity = v;
        }
        if let Some(v) = file.sweep_interval_secs {
            self.sweep_interval = Duration::from_secs(v);
        }
        if let Some(v) = file.sweep_grace_secs {
            self.sweep_grace = Duration::from_secs(v);
        }
        if let Some(v) = file.resolve_timeout_ms {
            self.resolve_timeout = Duration::from_millis(v);
        }
        if let Some(v) = file.download_redirect_secs {
            self.download_redirect = Duration::from_secs(v);
        }
        if let Some(v) = file.blob_cache_mib {
            self.blob_cache_mib = v;
        }
        if let Some(v) = file.freshness_window_ms {
            self.freshness_window = Duration::from_millis(v);
        }
        if let Some(v) = file.mcp_namespace {
            agentlang_core::mcp::check_namespace(&v).map_err(|m| invalid("mcp_namespace", m))?;
            self.mcp_namespace = Some(v);
        }
        if let Some(v) = file.oidc_issuers {
            app::trusted_publishing::check_issuers(&v).map_err(|m| invalid("oidc_issuers", m))?;
            self.oidc_issuers = v;
        }
        if let Some(v) = file.oidc_audience {
            self.oidc_audience = Some(v);
        }
        let limits = &mut self.limits;
        let secs = Duration::from_secs;
        for (value, slot) in [
            (file.body_idle_timeout_secs, &mut limits.body_idle_timeout),
            (file.upload_timeout_secs, &mut limits.upload_timeout),
            (file.upload_rate_grace_secs, &mut limits.upload_rate_grace),
            (file.request_timeout_secs, &mut limits.request_timeout),
            (file.database_timeout_secs, &mut limits.database_timeout),
            (file.storage_timeout_secs, &mut limits.storage_timeout),
        ] {
            if let Some(v) = value {
                *slot = secs(v);
            }
        }
        if let Some(v) = file.max_concurrent_uploads {
            limits.max_concurrent_uploads = v;
        }
        if let Some(v) = file.max_concurrent_uploads_per_account {
            limits.max_concurrent_uploads_per_account = v;
        }
        if let Some(v) = file.max_concurrent_uploads_per_address {
            limits.max_concurrent_uploads_per_address = v;
        }
        if let Some(v) = file.max_requests_per_address {
            limits.max_requests_per_address = v;
        }
        if let Some(v) = file.body_budget_mib {
            limits.body_budget_bytes = v.saturating_mul(1024 * 1024);
        }
        if let Some(v) = file.upload_min_bytes_per_sec {
            limits.upload_min_bytes_per_sec = v;
        }
        self.check_limits()
            .map_err(|(key, message)| invalid(&key.to_ascii_lowercase(), message))
    }

    /// Timeouts of zero would refuse every request, and zero uploads every
    /// publish: both are configuration mistakes.
    fn check_limits(&self) -> Result<(), (&'static str, String)> {
        let limits = &self.limits;
        for (name, value) in [
            ("BODY_IDLE_TIMEOUT_SECS", limits.body_idle_timeout),
            ("UPLOAD_TIMEOUT_SECS", limits.upload_timeout),
            ("UPLOAD_RATE_GRACE_SECS", limits.upload_rate_grace),
            ("REQUEST_TIMEOUT_SECS", limits.request_timeout),
            ("DATABASE_TIMEOUT_SECS", limits.database_timeout),
            ("STORAGE_TIMEOUT_SECS", limits.storage_timeout),
        ] {
            if value.is_zero() {
                return Err((name, "must be at least 1 second".to_owned()));
            }
        }
        for (name, value) in [
            ("MAX_CONCURRENT_UPLOADS", limits.max_concurrent_uploads),
            (
                "MAX_CONCURRENT_UPLOADS_PER_ACCOUNT",
                limits.max_concurrent_uploads_per_account,
            ),
            (
                "MAX_CONCURRENT_UPLOADS_PER_ADDRESS",
                limits.max_concurrent_uploads_per_address,
            ),
            ("MAX_REQUESTS_PER_ADDRESS", limits.max_requests_per_address),
            ("BODY_BUDGET_MIB", limits.body_budget_bytes),
            (
                "UPLOAD_MIN_BYTES_PER_SEC",
                usize::try_from(limits.upload_min_bytes_per_sec).unwrap_or(usize::MAX),
            ),
        ] {
            if value == 0 {
                return Err((name, "must be at least 1".to_owned()));
            }
        }
        Ok(())
    }

    fn apply_env(&mut self, var: impl Fn(&str) -> Option<String>) -> Result<(), ConfigError> {
        let invalid = |name: &str, message: String| ConfigError::Invalid {
            variable: format!("{ENV_PREFIX}{name}"),
            message,
        };
        if let Some(v) = var("BIND") {
            check_bind(&v).map_err(|m| invalid("BIND", m))?;
            self.bind = v;
        }
        if let Some(v) = var("PUBLIC_URL") {
            self.public_url = Some(normalize_public_url(&v).map_err(|m| invalid("PUBLIC_URL", m))?);
        }
        if let Some(v) = var("DATA_DIR") {
            self.data_dir = PathBuf::from(v);
        }
        if let Some(v) = var("DATABASE_URL") {
            self.database_url =
                Some(DatabaseUrl::parse(&v).map_err(|m| invalid("DATABASE_URL", m))?);
        }
        if let Some(v) = var("STORAGE_URL") {
            self.storage_url = Some(StorageUrl::parse(&v).map_err(|m| invalid("STORAGE_URL", m))?);
        }
        if let Some(v) = var("MAX_UPLOAD_BYTES") {
            self.max_upload_bytes = v
                .parse()
                .map_err(|_| invalid("MAX_UPLOAD_BYTES", format!("{v:?} is not a byte count")))?;
        }
        if let Some(v) = var("REGISTRATION") {
            self.registration = match v.as_str() {
                "open" => RegistrationMode::Open,
                "closed" => RegistrationMode::Closed,
                _ => {
                    return Err(invalid(
                        "REGISTRATION",
                        format!("{v:?} is not a registration mode (expected open or closed)"),
                    ));
                }
            };
        }
        if let Some(v) = var("RATE_LIMITS") {
            self.rate_limits.enabled = match v.as_str() {
                "on" => true,
                "off" => false,
                _ => {
                    return Err(invalid("RATE_LIMITS", format!("{v:?} is not on or off")));
                }
            };
        }
        if let Some(v) = var("JWT_SECRET") {
            self.jwt_secret = Some(v);
        }
        if let Some(v) = var("ADMINS") {
            self.admins = v
                .split(',')
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(str::to_owned)
                .collect();
        }
        if let Some(v) = var("WORKERS") {
            let n: usize = v
                .parse()
                .ok()
                .filter(|n| *n > 0)
                .ok_or_else(|| invalid("WORKERS", format!("{v:?} is not a positive count")))?;
            self.workers = Some(n);
        }
        if let Some(v) = var("AGENT_ID") {
            self.identity.agent_id = v;
        }
        if let Some(v) = var("AGENT_ORG") {
            self.identity.org = v;
        }
        if let Some(v) = var("IDENTITY_KEY") {
            self.identity.key_pem = Some(v);
        }
        if let Some(v) = var("IDENTITY_KEY_FILE") {
            self.identity.key_file = Some(PathBuf::from(v));
        }
        if let Some(v) = var("TLOG_KEY") {
            self.log.key_pem = Some(v);
        }
        if let Some(v) = var("TLOG_KEY_FILE") {
            self.log.key_file = Some(PathBuf::from(v));
        }
        if let Some(v) = var("TLOG_ORIGIN") {
            self.log.origin = Some(v);
        }
        if let Some(v) = var("TLOG_WITNESSES") {
            self.log.witnesses = v
                .split(',')
                .map(str::trim)
                .filter(|w| !w.is_empty())
                .map(str::to_owned)
                .collect();
        }
        let number = |name: &str| -> Result<Option<u64>, ConfigError> {
            var(name)
                .map(|v| {
                    v.parse::<u64>()
                        .map_err(|_| invalid(name, format!("{v:?} is not a whole number")))
                })
                .transpose()
        };
        if let Some(v) = number("MOLTSPEAK_SESSION_TTL_SECS")? {
            if v == 0 {
                return Err(invalid(
                    "MOLTSPEAK_SESSION_TTL_SECS",
                    "a session must live at least one second".to_owned(),
                ));
            }
            self.identity.moltspeak_session_ttl_secs = v;
        }
        if let Some(v) = number("SWEEP_INTERVAL_SECS")? {
            self.sweep_interval = Duration::from_secs(v);
        }
        if let Some(v) = number("SWEEP_GRACE_SECS")? {
            self.sweep_grace = Duration::from_secs(v);
        }
        if let Some(v) = number("RESOLVE_TIMEOUT_MS")? {
            self.resolve_timeout = Duration::from_millis(v);
        }
        if let Some(v) = number("DOWNLOAD_REDIRECT_SECS")? {
            self.download_redirect = Duration::from_secs(v);
        }
        if let Some(v) = number("BLOB_CACHE_MIB")? {
            self.blob_cache_mib = v;
        }
        if let Some(v) = number("FRESHNESS_WINDOW_MS")? {
            self.freshness_window = Duration::from_millis(v);
        }
        for (name, slot) in [
            ("BODY_IDLE_TIMEOUT_SECS", &mut self.limits.body_idle_timeout),
            ("UPLOAD_TIMEOUT_SECS", &mut self.limits.upload_timeout),
            ("UPLOAD_RATE_GRACE_SECS", &mut self.limits.upload_rate_grace),
            ("REQUEST_TIMEOUT_SECS", &mut self.limits.request_timeout),
            ("DATABASE_TIMEOUT_SECS", &mut self.limits.database_timeout),
            ("STORAGE_TIMEOUT_SECS", &mut self.limits.storage_timeout),
        ] {
            if let Some(v) = number(name)? {
                *slot = Duration::from_secs(v);
            }
        }
        if let Some(v) = number("MAX_CONCURRENT_UPLOADS")? {
            self.limits.max_concurrent_uploads = usize::try_from(v).unwrap_or(usize::MAX);
        }
        if let Some(v) = number("MAX_CONCURRENT_UPLOADS_PER_ACCOUNT")? {
            self.limits.max_concurrent_uploads_per_account =
                usize::try_from(v).unwrap_or(usize::MAX);
        }
        if let Some(v) = number("MAX_CONCURRENT_UPLOADS_PER_ADDRESS")? {
            self.limits.max_concurrent_uploads_per_address =
                usize::try_from(v).unwrap_or(usize::MAX);
        }
        if let Some(v) = number("MAX_REQUESTS_PER_ADDRESS")? {
            self.limits.max_requests_per_address = usize::try_from(v).unwrap_or(usize::MAX);
        }
        if let Some(v) = number("BODY_BUDGET_MIB")? {
            self.limits.body_budget_bytes =
                usize::try_from(v.saturating_mul(1024 * 1024)).unwrap_or(usize::MAX);
        }
        if let Some(v) = number("UPLOAD_MIN_BYTES_PER_SEC")? {
            self.limits.upload_min_bytes_per_sec = v;
        }
        if let Some(v) = var("MCP_NAMESPACE") {
            agentlang_core::mcp::check_namespace(&v).map_err(|m| invalid("MCP_NAMESPACE", m))?;
            self.mcp_namespace = Some(v);
        }
        if let Some(v) = var("OIDC_ISSUERS") {
            let issuers: Vec<String> = v
                .split(',')
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(str::to_owned)
                .collect();
            app::trusted_publishing::check_issuers(&issuers)
                .map_err(|m| invalid("OIDC_ISSUERS", m))?;
            self.oidc_issuers = issuers;
        }
        if let Some(v) = var("OIDC_AUDIENCE") {
            self.oidc_audience = Some(v);
        }
        if let Some(v) = var("TRUSTED_PROXIES") {
            self.rate_limits.trusted_proxies = v
                .split(',')
                .filter(|s| !s.trim().is_empty())
                .map(parse_network)
                .collect::<Result<_, _>>()
                .map_err(|m| invalid("TRUSTED_PROXIES", m))?;
        }
        self.check_limits().map_err(|(name, m)| invalid(name, m))?;
        if let Some(secret) = &self.jwt_secret {
            app::secrets::check_secret_strength(secret).map_err(|m| invalid("JWT_SECRET", m))?;
        }
        Ok(())
    }

    /// The database URL in effect.
    pub fn effective_database_url(&self) -> DatabaseUrl {
        self.database_url
            .clone()
            .unwrap_or_else(|| DatabaseUrl::SqlitePath(self.data_dir.join("registry.db")))
    }

    /// The storage URL in effect.
    pub fn effective_storage_url(&self) -> StorageUrl {
        self.storage_url
            .clone()
            .unwrap_or_else(|| StorageUrl::File(self.data_dir.clone()))
    }

    /// Headers of every response: `Strict-Transport-Security` when the
    /// configured public URL is https, so a browser that saw the registry
    /// once never again reaches it over plain http (where its session
    /// cookie and forms would travel in the clear). A year; no
    /// `includeSubDomains`, since the registry does not know what else its
    /// domain serves. None on http: the header would pin nothing there.
    pub fn default_headers(&self) -> actix_web::middleware::DefaultHeaders {
        let headers = actix_web::middleware::DefaultHeaders::new();
        if self
            .public_url
            .as_deref()
            .is_some_and(|url| url.starts_with("https://"))
        {
            headers.add((
                actix_web::http::header::STRICT_TRANSPORT_SECURITY,
                "max-age=31536000",
            ))
        } else {
            headers
        }
    }

    /// What the registry's rules are opened with: this configuration, with
    /// the public URL the server settled on and the number of runtimes
    /// that will query the database.
    pub fn settings(&self, public_url: String, runtimes: usize) -> Settings {
        Settings {
            public_url,
            data_dir: self.data_dir.clone(),
            database_url: self.effective_database_url(),
            storage_url: self.effective_storage_url(),
            s3: self.s3.clone(),
            runtimes,
            max_upload_bytes: self.max_upload_bytes,
            registration: self.registration,
            rate_limits: self.rate_limits.clone(),
            jwt_secret: self.jwt_secret.clone(),
            admins: self.admins.clone(),
            identity: self.identity.clone(),
            log: self.log.clone(),
            sweep_interval: self.sweep_interval,
            sweep_grace: self.sweep_grace,
            resolve_timeout: self.resolve_timeout,
            download_redirect: self.download_redirect,
            blob_cache_mib: self.blob_cache_mib,
            freshness_window: self.freshness_window,
            limits: self.limits.clone(),
            mcp_namespace: self.mcp_namespace.clone(),
            oidc_issuers: self.oidc_issuers.clone(),
            oidc_audience: self.oidc_audience.clone(),
        }
    }
}

/// Every `AGENTLANG_REGISTRY_*` variable the registry reads, with what it
/// means. `--help` lists them with their defaults and `config check`
/// prints their effective values, both through [`Config::value_of`].
pub const VARIABLES: &[(&str, &str)] = &[
    (
        "CONFIG",
        "a TOML file read before the variables (same keys, lower case)",
    ),
    ("BIND", "host:port to listen on (port 0: any free port)"),
    (
        "PUBLIC_URL",
        "the URL clients reach the registry at (token issuer, links, problem types)",
    ),
    (
        "DATA_DIR",
        "folder of the SQLite file, file blobs, upload spool and identity key",
    ),
    ("DATABASE_URL", "sqlite://PATH or postgres://..."),
    (
        "STORAGE_URL",
        "file://PATH or s3://BUCKET/PREFIX (S3 settings: AWS_* variables or [s3])",
    ),
    ("MAX_UPLOAD_BYTES", "largest container accepted"),
    ("REGISTRATION", "open or closed: who may create accounts"),
    (
        "RATE_LIMITS",
        "on or off (per-bucket budgets: [rate_limits] in the file)",
    ),
    (
        "TRUSTED_PROXIES",
        "comma-separated networks whose X-Forwarded-For is believed",
    ),
    (
        "JWT_SECRET",
        "token signing secret, 32+ random bytes (default: generated, kept in the database)",
    ),
    (
        "ADMINS",
        "comma-separated usernames of existing accounts made admins (a name with no account when first named binds to none)",
    ),
    ("WORKERS", "HTTP worker threads (default: one per core)"),
    ("AGENT_ID", "the registry's agent id in CLowl and MoltSpeak"),
    ("AGENT_ORG", "the registry's organisation in MoltSpeak"),
    (
        "IDENTITY_KEY",
        "PKCS#8 PEM Ed25519 key of the registry's agent identity",
    ),
    ("IDENTITY_KEY_FILE", "a file holding that key"),
    (
        "MOLTSPEAK_SESSION_TTL_SECS",
        "how long a verified MoltSpeak session lives (default 3600)",
    ),
    (
        "TLOG_KEY",
        "PKCS#8 PEM Ed25519 key signing the transparency log's checkpoints (default: generated, kept in the database)",
    ),
    ("TLOG_KEY_FILE", "a file holding that key"),
    (
        "TLOG_ORIGIN",
        "the log's origin line and key name (default: the public URL's host[:port]/log)",
    ),
    (
        "TLOG_WITNESSES",
        "comma-separated witnesses, `<verifier key>=<submission prefix URL>` (asked with tlog-witness add-checkpoint after every checkpoint) or a bare key (cosignatures accepted, never asked)",
    ),
    (
        "SWEEP_INTERVAL_SECS",
        "how often unreferenced blobs are swept (0: never)",
    ),
    (
        "SWEEP_GRACE_SECS",
        "how old an unreferenced blob must be to be swept",
    ),
    (
        "RESOLVE_TIMEOUT_MS",
        "longest one resolution may run before 503",
    ),
    (
        "DOWNLOAD_REDIRECT_SECS",
        "with S3: redirect downloads to a presigned URL valid this long (0: stream them)",
    ),
    (
        "BLOB_CACHE_MIB",
        "memory for recently downloaded containers of up to 2 MiB each (0: none)",
    ),
    (
        "FRESHNESS_WINDOW_MS",
        "a change through another replica shows within this (0: at once, at a round trip per request under load)",
    ),
    (
        "BODY_IDLE_TIMEOUT_SECS",
        "a request body silent this long is cut off (408)",
    ),
    (
        "UPLOAD_TIMEOUT_SECS",
        "an upload's whole body must arrive within this (408)",
    ),
    (
        "REQUEST_TIMEOUT_SECS",
        "every other request is answered within this",
    ),
    (
        "DATABASE_TIMEOUT_SECS",
        "wait for a database connection before 503",
    ),
    (
        "STORAGE_TIMEOUT_SECS",
        "longest one object-storage call may take",
    ),
    (
        "MAX_CONCURRENT_UPLOADS",
        "uploads verified at once by this process",
    ),
    (
        "MAX_CONCURRENT_UPLOADS_PER_ACCOUNT",
        "uploads one account may have in flight",
    ),
    (
        "MAX_CONCURRENT_UPLOADS_PER_ADDRESS",
        "uploads one address may have in flight",
    ),
    (
        "MAX_REQUESTS_PER_ADDRESS",
        "requests one address may have in flight",
    ),
    (
        "BODY_BUDGET_MIB",
        "request bodies all requests in flight may hold in memory, in MiB",
    ),
    (
        "UPLOAD_MIN_BYTES_PER_SEC",
        "the slowest an upload may arrive, on average, once its grace has passed",
    ),
    (
        "UPLOAD_RATE_GRACE_SECS",
        "how long an upload may arrive slower than its least rate",
    ),
    (
        "MCP_NAMESPACE",
        "reverse-DNS namespace of the MCP server names /v0.1/servers lists, NAMESPACE/TOOL (default: the public URL's host reversed; local.agentlang for an address)",
    ),
    (
        "OIDC_ISSUERS",
        "trusted publishing: comma-separated OpenID Connect issuer URLs (https; http only on a loopback host) whose ID tokens are exchanged for publish tokens (default: none, trusted publishing off)",
    ),
    (
        "OIDC_AUDIENCE",
        "trusted publishing: the aud the ID tokens must carry (default: the public URL's host[:port])",
    ),
];

/// The TOML key that sets variable `name` (one of [`VARIABLES`]), in the
/// spelling server/README.md's table uses (`[section] key` for a key of a
/// table); `None` for `CONFIG`, which names the file. Most are the name in
/// lower case; the rest live in a section.
pub fn toml_key(name: &str) -> Option<String> {
    Some(match name {
        "CONFIG" => return None,
        "RATE_LIMITS" => "[rate_limits] enabled".to_owned(),
        "TRUSTED_PROXIES" => "[rate_limits] trusted_proxies".to_owned(),
        "AGENT_ID" => "[identity] agent_id".to_owned(),
        "AGENT_ORG" => "[identity] org".to_owned(),
        "IDENTITY_KEY" => "[identity] key_pem".to_owned(),
        "IDENTITY_KEY_FILE" => "[identity] key_file".to_owned(),
        "MOLTSPEAK_SESSION_TTL_SECS" => "[identity] moltspeak_session_ttl_secs".to_owned(),
        "TLOG_KEY" => "[tlog] key_pem".to_owned(),
        "TLOG_KEY_FILE" => "[tlog] key_file".to_owned(),
        "TLOG_ORIGIN" => "[tlog] origin".to_owned(),
        "TLOG_WITNESSES" => "[tlog] witnesses".to_owned(),
        other => other.to_ascii_lowercase(),
    })
}

/// `host:port` with a port number, as the listener takes it: an address
/// (`0.0.0.0:8080`, `[::]:8080`) or a name (`localhost:8080`). Checked
/// here so `config check` refuses what `serve` could not bind.
fn check_bind(bind: &str) -> Result<(), String> {
    let bad = || format!("{bind:?} is not host:port (e.g. 127.0.0.1:8080 or [::]:8080)");
    let (host, port) = bind.rsplit_once(':').ok_or_else(bad)?;
    port.parse::<u16>().map_err(|_| bad())?;
    let host_ok = match host.strip_prefix('[').and_then(|h| h.strip_suffix(']')) {
        Some(v6) => v6.parse::<std::net::Ipv6Addr>().is_ok(),
        None => {
            !host.is_empty()
                && host
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'.' || b == b'-')
        }
    };
    if host_ok { Ok(()) } else { Err(bad()) }
}

/// Shown instead of a secret.
const REDACTED: &str = "[redacted]";

/// A URL with its password replaced, for printing.
fn without_password(url: &str) -> String {
    match (url.find("://"), url.rfind('@')) {
        (Some(scheme), Some(at)) if at > scheme => {
            let userinfo = &url[scheme + 3..at];
            match userinfo.split_once(':') {
                Some((user, _)) => format!("{}{user}:{REDACTED}{}", &url[..scheme + 3], &url[at..]),
                None => url.to_owned(),
            }
        }
        _ => url.to_owned(),
    }
}

impl Config {
    /// The value of variable `name` (one of [`VARIABLES`]) in effect, as it
    /// would be written, with secrets redacted; `None` for an unknown name.
    pub fn value_of(&self, name: &str) -> Option<String> {
        let secs = |d: Duration| d.as_secs().to_string();
        let limits = &self.limits;
        Some(match name {
            "CONFIG" => String::new(),
            "BIND" => self.bind.clone(),
            "PUBLIC_URL" => self.public_url.clone().unwrap_or_default(),
            "DATA_DIR" => self.data_dir.display().to_string(),
            "DATABASE_URL" => match self.effective_database_url() {
                DatabaseUrl::Sqlite(url) => url,
                DatabaseUrl::SqlitePath(path) => format!("sqlite://{}", path.display()),
                DatabaseUrl::Postgres(url) => without_password(&url),
            },
            "STORAGE_URL" => match self.effective_storage_url() {
                StorageUrl::File(path) => format!("file://{}", path.display()),
                StorageUrl::S3 { bucket, prefix } => format!("s3://{bucket}/{prefix}"),
            },
            "MAX_UPLOAD_BYTES" => self.max_upload_bytes.to_string(),
            "REGISTRATION" => match self.registration {
                RegistrationMode::Open => "open".to_owned(),
                RegistrationMode::Closed => "closed".to_owned(),
            },
            "RATE_LIMITS" => if self.rate_limits.enabled {
                "on"
            } else {
                "off"
            }
            .to_owned(),
            "TRUSTED_PROXIES" => self
                .rate_limits
                .trusted_proxies
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join(","),
            "JWT_SECRET" => self
                .jwt_secret
                .as_ref()
                .map(|_| REDACTED.to_owned())
                .unwrap_or_default(),
            "ADMINS" => self.admins.join(","),
            "WORKERS" => self.workers.map(|w| w.to_string()).unwrap_or_default(),
            "AGENT_ID" => self.identity.agent_id.clone(),
            "AGENT_ORG" => self.identity.org.clone(),
            "IDENTITY_KEY" => self
                .identity
                .key_pem
                .as_ref()
                .map(|_| REDACTED.to_owned())
                .unwrap_or_default(),
            "IDENTITY_KEY_FILE" => self
                .identity
                .key_file
                .as_ref()
                .map(|p| p.display().to_string())
                .unwrap_or_default(),
            "TLOG_KEY" => self
                .log
                .key_pem
                .as_ref()
                .map(|_| REDACTED.to_owned())
                .unwrap_or_default(),
            "TLOG_KEY_FILE" => self
                .log
                .key_file
                .as_ref()
                .map(|p| p.display().to_string())
                .unwrap_or_default(),
            "TLOG_ORIGIN" => self.log.origin.clone().unwrap_or_default(),
            "TLOG_WITNESSES" => self.log.witnesses.join(","),
            "SWEEP_INTERVAL_SECS" => secs(self.sweep_interval),
            "SWEEP_GRACE_SECS" => secs(self.sweep_grace),
            "MOLTSPEAK_SESSION_TTL_SECS" => self.identity.moltspeak_session_ttl_secs.to_string(),
            "RESOLVE_TIMEOUT_MS" => self.resolve_timeout.as_millis().to_string(),
            "DOWNLOAD_REDIRECT_SECS" => secs(self.download_redirect),
            "BLOB_CACHE_MIB" => self.blob_cache_mib.to_string(),
            "FRESHNESS_WINDOW_MS" => self.freshness_window.as_millis().to_string(),
            "BODY_IDLE_TIMEOUT_SECS" => secs(limits.body_idle_timeout),
            "UPLOAD_TIMEOUT_SECS" => secs(limits.upload_timeout),
            "REQUEST_TIMEOUT_SECS" => secs(limits.request_timeout),
            "DATABASE_TIMEOUT_SECS" => secs(limits.database_timeout),
            "STORAGE_TIMEOUT_SECS" => secs(limits.storage_timeout),
            "MAX_CONCURRENT_UPLOADS" => limits.max_concurrent_uploads.to_string(),
            "MAX_CONCURRENT_UPLOADS_PER_ACCOUNT" => {
                limits.max_concurrent_uploads_per_account.to_string()
            }
            "MAX_CONCURRENT_UPLOADS_PER_ADDRESS" => {
                limits.max_concurrent_uploads_per_address.to_string()
            }
            "MAX_REQUESTS_PER_ADDRESS" => limits.max_requests_per_address.to_string(),
            "BODY_BUDGET_MIB" => (limits.body_budget_bytes / (1024 * 1024)).to_string(),
            "UPLOAD_MIN_BYTES_PER_SEC" => limits.upload_min_bytes_per_sec.to_string(),
            "UPLOAD_RATE_GRACE_SECS" => secs(limits.upload_rate_grace),
            "MCP_NAMESPACE" => self.mcp_namespace.clone().unwrap_or_default(),
            "OIDC_ISSUERS" => self.oidc_issuers.join(","),
            "OIDC_AUDIENCE" => self.oidc_audience.clone().unwrap_or_default(),
            _ => return None,
        })
    }

    /// `NAME=value` per variable, secrets redacted: what `config check`
    /// prints.
    pub fn effective_lines(&self) -> Vec<String> {
        VARIABLES
            .iter()
            .map(|(name, _)| {
                format!(
                    "{ENV_PREFIX}{name}={}",
                    self.value_of(name).unwrap_or_default()
                )
            })
            .collect()
    }
}

/// The `--help` text's list: every variable, what it means, its default.
pub fn variables_help() -> String {
    let defaults = Config::default();
    let mut out = String::from("Configuration (environment variables):\n");
    for (name, meaning) in VARIABLES {
        let default = defaults.value_of(name).unwrap_or_default();
        let default = if default.is_empty() {
            String::new()
        } else {
            format!(" [default: {default}]")
        };
        let key = toml_key(name).map_or_else(String::new, |k| format!(" (TOML: {k})"));
        out.push_str(&format!(
            "  {ENV_PREFIX}{name}{key}\n      {meaning}{default}\n"
        ));
    }
    out.push_str(
        "  AGENTLANG_REGISTRY_LOG\n      log filter, as RUST_LOG (pubgrub at warn unless named) [default: info]\n",
    );
    out.push_str(
        "  AGENTLANG_REGISTRY_LOG_FORMAT\n      text (one line per event) or json (one object per line) [default: text]\n",
    );
    out
}

/// Accepts `http(s)://host[:port][/path]` and drops a trailing slash, so the
/// JWT issuer compares equal however it was written.
fn normalize_public_url(url: &str) -> Result<String, String> {
    let rest = url
        .strip_prefix("http://")
        .or_else(|| url.strip_prefix("https://"))
        .ok_or_else(|| format!("{url:?} must start with http:// or https://"))?;
    if rest.is_empty() || rest.starts_with('/') {
        return Err(format!("{url:?} has no host"));
    }
    Ok(url.trim_end_matches('/').to_owned())
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;

    /// Variables read before the configuration, by `main`.
    const PROCESS_VARIABLES: [&str; 2] = ["LOG", "LOG_FORMAT"];

    /// server/README.md's table is [`VARIABLES`] and [`toml_key`], row for
    /// row: every variable, its TOML key, nothing else.
    #[test]
    fn the_readme_table_is_the_variables_table() {
        let readme = include_str!("../README.md");
        let mut documented = Vec::new();
        for row in readme
            .lines()
            .filter(|l| l.starts_with("| `AGENTLANG_REGISTRY_"))
        {
            // `| variable | TOML key | default |`: no cell holds a `|`.
            let cells: Vec<&str> = row.split('|').map(str::trim).collect();
            let name = cells[1].trim_matches('`').trim_start_matches(ENV_PREFIX);
            let key = cells[2].trim_matches('`');
            documented.push(name.to_owned());
            if PROCESS_VARIABLES.contains(&name) {
                assert_eq!(key, "", "{name} has no TOML key");
                continue;
            }
            assert!(
                VARIABLES.iter().any(|(n, _)| *n == name),
                "README documents {name}, which the registry does not read"
            );
            assert_eq!(Some(key.to_owned()), toml_key(name), "{name}'s TOML key");
        }
        for (name, _) in VARIABLES.iter().filter(|(n, _)| *n != "CONFIG") {
            assert!(
                documented.iter().any(|d| d == name),
                "{ENV_PREFIX}{name} is missing from server/README.md"
            );
        }
    }

    /// A TOML document setting `key` (`[section] key` or `key`) to `value`.
    fn toml_setting(key: &str, value: &str) -> String {
        match key.strip_prefix('[').and_then(|k| k.split_once("] ")) {
            Some((section, key)) => format!("[{section}]\n{key} = {value}\n"),
            None => format!("{key} = {value}\n"),
        }
    }

    /// Whether the file's shape knows `key`: any value of the wrong type
    /// is another error than an unknown field.
    fn file_reads(key: &str) -> bool {
        let doc = toml_setting(key, "0");
        match toml::from_str::<FileConfig>(&doc) {
            Ok(_) => true,
            Err(e) => !e.to_string().contains("unknown field"),
        }
    }

    #[test]
    fn every_variables_toml_key_is_read_from_the_file() {
        for (name, _) in VARIABLES {
            if let Some(key) = toml_key(name) {
                assert!(file_reads(&key), "{name}'s TOML key {key} is not read");
            }
        }
        assert!(!file_reads("admin"), "the check can fail");
        assert!(!file_reads("[tlog] key"), "the check can fail");
    }

    /// Every key deploy/registry.example.toml shows, set or commented out,
    /// is one the file is read with.
    #[test]
    fn the_example_file_shows_only_keys_that_are_read() {
        let example = include_str!("../../deploy/registry.example.toml");
        let mut section: Option<String> = None;
        let mut keys = 0;
        for line in example.lines() {
            let line = line.trim_start_matches('#').trim();
            if let Some(name) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
                section = Some(name.to_owned());
                continue;
            }
            let Some((key, _)) = line.split_once(" = ") else {
                continue;
            };
            if !key.bytes().all(|b| b.is_ascii_lowercase() || b == b'_') {
                continue;
            }
            let qualified = match &section {
                Some(s) => format!("[{s}] {key}"),
                None => key.to_owned(),
            };
            assert!(file_reads(&qualified), "the example shows {qualified}");
            keys += 1;
        }
        assert!(keys >= 20, "{keys} keys found");
    }

    #[test]
    fn bind_must_be_host_and_port() {
        for good in ["127.0.0.1:8080", "0.0.0.0:0", "[::]:8080", "localhost:8080"] {
            assert_eq!(check_bind(good), Ok(()), "{good}");
        }
        for bad in [
            "nonsense",
            "127.0.0.1",
            ":8080",
            "host:99999",
            "[zz]:80",
            "a b:80",
        ] {
            assert!(check_bind(bad).is_err(), "{bad}");
        }
        let err =
            Config::from_sources(env_of(&[("AGENTLANG_REGISTRY_BIND", "nonsense")])).unwrap_err();
        assert!(err.to_string().contains("AGENTLANG_REGISTRY_BIND"), "{err}");
    }

    fn env_of(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let map: HashMap<String, String> = pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        move |k| map.get(k).cloned()
    }

    #[test]
    fn defaults_are_embedded_sqlite_and_files_under_data() {
        let config = Config::from_sources(env_of(&[])).unwrap();
        assert_eq!(config.bind, "127.0.0.1:8080");
        assert_eq!(config.data_dir, PathBuf::from("./data"));
        assert_eq!(
            config.effective_database_url(),
            DatabaseUrl::SqlitePath(PathBuf::from("./data/registry.db"))
        );
        assert_eq!(
            config.effective_storage_url(),
            StorageUrl::File(PathBuf::from("./data"))
        );
        assert_eq!(config.registration, RegistrationMode::Open);
        assert!(config.rate_limits.enabled);
    }

    #[test]
    fn environment_wins_over_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("registry.toml");
        std::fs::write(
            &file,
            "bind = \"0.0.0.0:9000\"\nregistration = \"closed\"\nstorage_url = \"s3://bucket/some/prefix/\"\n\
             [rate_limits]\npublish_per_minute = 5\n",
        )
        .unwrap();
        let config = Config::from_sources(env_of(&[
            ("AGENTLANG_REGISTRY_CONFIG", file.to_str().unwrap()),
            ("AGENTLANG_REGISTRY_BIND", "127.0.0.1:0"),
            ("AGENTLANG_REGISTRY_RATE_LIMITS", "off"),
            ("AGENTLANG_REGISTRY_PUBLIC_URL", "https://registry.example/"),
        ]))
        .unwrap();
        assert_eq!(config.bind, "127.0.0.1:0");
        assert_eq!(config.registration, RegistrationMode::Closed);
        assert_eq!(
            config.storage_url,
            Some(StorageUrl::S3 {
                bucket: "bucket".to_owned(),
                prefix: "some/prefix".to_owned()
            })
        );
        assert_eq!(config.rate_limits.publish_per_minute.get(), 5);
        assert!(!config.rate_limits.enabled);
        assert_eq!(
            config.public_url.as_deref(),
            Some("https://registry.example")
        );
    }

    #[test]
    fn bad_values_name_their_variable() {
        let err = Config::from_sources(env_of(&[("AGENTLANG_REGISTRY_DATABASE_URL", "mysql://x")]))
            .unwrap_err();
        assert!(
            err.to_string().starts_with(
                "AGENTLANG_REGISTRY_DATABASE_URL: \"mysql://x\" is not a database URL"
            ),
            "{err}"
        );
        let err = Config::from_sources(env_of(&[("AGENTLANG_REGISTRY_REGISTRATION", "maybe")]))
            .unwrap_err();
        assert!(err.to_string().contains("REGISTRATION"), "{err}");
        let err = Config::from_sources(env_of(&[("AGENTLANG_REGISTRY_JWT_SECRET", "short")]))
            .unwrap_err();
        assert!(
            err.to_string().contains("at least 32 random bytes"),
            "{err}"
        );
        let err = Config::from_sources(env_of(&[("AGENTLANG_REGISTRY_STORAGE_URL", "ftp://x")]))
            .unwrap_err();
        assert!(err.to_string().contains("not a storage URL"), "{err}");
    }

    #[test]
    fn limits_and_trusted_proxies_are_configurable() {
        let config = Config::from_sources(env_of(&[
            ("AGENTLANG_REGISTRY_BODY_IDLE_TIMEOUT_SECS", "5"),
            ("AGENTLANG_REGISTRY_MAX_CONCURRENT_UPLOADS", "3"),
            (
                "AGENTLANG_REGISTRY_TRUSTED_PROXIES",
                "10.0.0.0/8, 127.0.0.1",
            ),
        ]))
        .unwrap();
        assert_eq!(config.limits.body_idle_timeout, Duration::from_secs(5));
        assert_eq!(config.limits.max_concurrent_uploads, 3);
        assert_eq!(config.rate_limits.trusted_proxies.len(), 2);
        assert!(
            config.rate_limits.trusted_proxies[1]
                .contains(&"127.0.0.1".parse::<std::net::IpAddr>().unwrap())
        );
        let err = Config::from_sources(env_of(&[("AGENTLANG_REGISTRY_TRUSTED_PROXIES", "nope")]))
            .unwrap_err();
        assert!(err.to_string().contains("TRUSTED_PROXIES"), "{err}");
        let err = Config::from_sources(env_of(&[("AGENTLANG_REGISTRY_REQUEST_TIMEOUT_SECS", "0")]))
            .unwrap_err();
        assert!(err.to_string().contains("at least 1 second"), "{err}");
        // Defaults: no proxy is trusted, silence is cut off within 30 s.
        let config = Config::from_sources(env_of(&[])).unwrap();
        assert!(config.rate_limits.trusted_proxies.is_empty());
        assert!(config.limits.body_idle_timeout <= Duration::from_secs(30));
    }

    #[test]
    fn the_mcp_namespace_is_reverse_dns_checked_at_start() {
        let config = Config::from_sources(env_of(&[(
            "AGENTLANG_REGISTRY_MCP_NAMESPACE",
            "com.example.registry",
        )]))
        .unwrap();
        assert_eq!(
            config.mcp_namespace.as_deref(),
            Some("com.example.registry")
        );
        assert_eq!(
            config.value_of("MCP_NAMESPACE").as_deref(),
            Some("com.example.registry")
        );
        for bad in ["com/example", "com example", "com..example"] {
            let err = Config::from_sources(env_of(&[("AGENTLANG_REGISTRY_MCP_NAMESPACE", bad)]))
                .unwrap_err();
            assert!(err.to_string().contains("MCP_NAMESPACE"), "{err}");
        }
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("registry.toml");
        std::fs::write(&file, "mcp_namespace = \"bad/one\"\n").unwrap();
        let err = Config::from_sources(env_of(&[(
            "AGENTLANG_REGISTRY_CONFIG",
            file.to_str().unwrap(),
        )]))
        .unwrap_err();
        assert!(err.to_string().contains("mcp_namespace"), "{err}");
    }

    #[test]
    fn oidc_issuers_are_https_or_loopback_http_checked_at_start() {
        let config = Config::from_sources(env_of(&[(
            "AGENTLANG_REGISTRY_OIDC_ISSUERS",
            "https://token.actions.githubusercontent.com, http://127.0.0.1:8123",
        )]))
        .unwrap();
        assert_eq!(
            config.oidc_issuers,
            [
                "https://token.actions.githubusercontent.com",
                "http://127.0.0.1:8123"
            ]
        );
        assert_eq!(
            config.value_of("OIDC_ISSUERS").as_deref(),
            Some("https://token.actions.githubusercontent.com,http://127.0.0.1:8123")
        );
        for bad in [
            "http://issuer.example",
            "https://gitlab.com/",
            "https://issuer.example?x=1",
            "not a url",
        ] {
            let err = Config::from_sources(env_of(&[("AGENTLANG_REGISTRY_OIDC_ISSUERS", bad)]))
                .unwrap_err();
            assert!(err.to_string().contains("OIDC_ISSUERS"), "{err}");
        }
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("registry.toml");
        std::fs::write(
            &file,
            "oidc_issuers = [\"http://ci.example\"]\noidc_audience = \"registry.example\"\n",
        )
        .unwrap();
        let err = Config::from_sources(env_of(&[(
            "AGENTLANG_REGISTRY_CONFIG",
            file.to_str().unwrap(),
        )]))
        .unwrap_err();
        assert!(err.to_string().contains("oidc_issuers"), "{err}");
    }

    #[test]
    fn unknown_file_keys_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("registry.toml");
        std::fs::write(&file, "bnid = \"typo\"\n").unwrap();
        let err = Config::from_sources(env_of(&[(
            "AGENTLANG_REGISTRY_CONFIG",
            file.to_str().unwrap(),
        )]))
        .unwrap_err();
        assert!(matches!(err, ConfigError::ParseFile { .. }), "{err}");
    }
}
