//! What the rules are configured with: the parts of the operator's
//! configuration the registry's rules read. Reading the configuration
//! (a TOML file, then `AGENTLANG_REGISTRY_*` variables) is the binary's; it
//! hands the result to [`Registry::open`](crate::Registry::open) as a
//! [`Settings`].

use std::{num::NonZeroU32, path::PathBuf, time::Duration};

use ipnet::IpNet;
use serde::Deserialize;
pub use store::{DatabaseUrl, S3Settings, StorageUrl};

/// Who may create accounts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RegistrationMode {
    /// Anyone may `POST /api/v1/accounts`: the embedded default.
    Open,
    /// Account creation is refused with 403.
    Closed,
}

/// Requests per minute allowed to one client before 429. The limiters keep
/// their state in each replica's memory, so behind a proxy with N replicas a
/// client may get up to N times these numbers; they are a guard against
/// floods, not a quota.
#[derive(Debug, Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RateLimitSettings {
    pub enabled: bool,
    /// Publishes per account (all its tokens together), and per client
    /// address.
    pub publish_per_minute: NonZeroU32,
    /// Account creations, token creations and sign-ins per client address.
    pub credentials_per_minute: NonZeroU32,
    /// Password checks per username tried (existing or not) from one
    /// client address: never per username alone, which would let anyone
    /// lock its holder out.
    pub logins_per_username_per_minute: NonZeroU32,
    /// Requests without a valid token per client address: API reads,
    /// catalog pages, downloads.
    pub anonymous_reads_per_minute: NonZeroU32,
    /// Requests per account with a live token (all its tokens together).
    pub authenticated_per_minute: NonZeroU32,
    /// Resolutions and searches per account or client address, on top of
    /// the budgets above.
    pub expensive_per_minute: NonZeroU32,
    /// Agent-protocol messages (`POST /clowl`, each MoltSpeak message, each
    /// item of a batch) per client address.
    pub agent_messages_per_minute: NonZeroU32,
    /// Proxies whose `X-Forwarded-For` names the client: addresses or
    /// networks (`10.0.0.0/8`). Empty (the default): the peer address is the
    /// client, whatever the headers say.
    #[serde(deserialize_with = "networks")]
    pub trusted_proxies: Vec<IpNet>,
}

impl Default for RateLimitSettings {
    fn default() -> Self {
        let n = |n| NonZeroU32::new(n).expect("non-zero");
        Self {
            enabled: true,
            publish_per_minute: n(60),
            credentials_per_minute: n(30),
            logins_per_username_per_minute: n(10),
            anonymous_reads_per_minute: n(1200),
            authenticated_per_minute: n(6000),
            expensive_per_minute: n(120),
            agent_messages_per_minute: n(600),
            trusted_proxies: Vec::new(),
        }
    }
}

impl RateLimitSettings {
    /// Every budget at `per_minute`, limits on: for tests and benchmarks
    /// that want limits out of their way, or one number to hit.
    pub fn all_at(per_minute: NonZeroU32) -> Self {
        Self {
            enabled: true,
            publish_per_minute: per_minute,
            credentials_per_minute: per_minute,
            logins_per_username_per_minute: per_minute,
            anonymous_reads_per_minute: per_minute,
            authenticated_per_minute: per_minute,
            expensive_per_minute: per_minute,
            agent_messages_per_minute: per_minute,
            trusted_proxies: Vec::new(),
        }
    }
}

/// An address (`127.0.0.1`, `::1`) or a network (`10.0.0.0/8`).
pub fn parse_network(text: &str) -> Result<IpNet, String> {
    let text = text.trim();
    text.parse::<IpNet>()
        .or_else(|_| text.parse::<std::net::IpAddr>().map(IpNet::from))
        .map_err(|_| format!("{text:?} is not an IP address or network"))
}

fn networks<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<IpNet>, D::Error> {
    Vec::<String>::deserialize(d)?
        .iter()
        .map(|s| parse_network(s).map_err(serde::de::Error::custom))
        .collect()
}

/// How long a request may take and how much work the registry takes on at
/// once: what one slow or hostile client can hold.
#[derive(Debug, Clone)]
pub struct RequestLimits {
    /// A request body that sends nothing for this long is cut off (408).
    pub body_idle_timeout: Duration,
    /// The whole body of an upload must arrive within this (408).
    pub upload_timeout: Duration,
    /// Every request but an upload, its body included, is answered within
    /// this (a slow body 408, slow work 503).
    pub request_timeout: Duration,
    /// Uploads verified at once by this process; more get 503.
    pub max_concurrent_uploads: usize,
    /// Uploads one account may have in flight at once; more get 429.
    pub max_concurrent_uploads_per_account: usize,
    /// Uploads one address may have in flight at once, before their
    /// manifest as after; more get 429.
    pub max_concurrent_uploads_per_address: usize,
    /// Requests one address may have in flight at once; more get 429.
    pub max_requests_per_address: usize,
    /// Bytes of request bodies all requests in flight may hold in memory
    /// (uploads, spooled to disk, are not counted); past it, 503.
    pub body_budget_bytes: usize,
    /// The slowest an upload may arrive, on average since it started, once
    /// `upload_rate_grace` has passed (408): uploads hold a spool file and
    /// a reading thread, and those go to clients that send.
    pub upload_min_bytes_per_sec: u64,
    /// Before the rate counts: connection set-up and a slow start.
    pub upload_rate_grace: Duration,
    /// How long a request waits for a database connection before 503.
    pub database_timeout: Duration,
    /// How long one object-storage call may take (retries included).
    pub storage_timeout: Duration,
}

impl Default for RequestLimits {
    fn default() -> Self {
        Self {
            body_idle_timeout: Duration::from_secs(30),
            upload_timeout: Duration::from_secs(600),
            request_timeout: Duration::from_secs(30),
            max_concurrent_uploads: 32,
            max_concurrent_uploads_per_account: 4,
            max_concurrent_uploads_per_address: 4,
            max_requests_per_address: 64,
            body_budget_bytes: 128 * 1024 * 1024,
            // 64 kbit/s: below any publisher's link, far above a trickle.
            upload_min_bytes_per_sec: 8 * 1024,
            upload_rate_grace: Duration::from_secs(10),
            database_timeout: Duration::from_secs(5),
            storage_timeout: Duration::from_secs(30),
        }
    }
}

/// The registry's own agent identity for CLowl and MoltSpeak: its agent id,
/// organization and Ed25519 signing key. Every replica must present the same
/// identity, so the key can be given (inline PEM or a file) instead of being
/// generated into the data folder.
#[derive(Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct IdentitySettings {
    /// `from.agent` / `from` of every protocol answer.
    pub agent_id: String,
    /// `from.org` of MoltSpeak answers.
    pub org: String,
    /// A PKCS#8 PEM Ed25519 private key (`BEGIN PRIVATE KEY`).
    pub key_pem: Option<String>,
    /// A file holding such a key. Without `key_pem` or `key_file`, the key
    /// is `<data_dir>/moltspeak-identity.pem`, generated on first start
    /// (mode 0600).
    pub key_file: Option<PathBuf>,
    /// How long a verified MoltSpeak session lives, in seconds.
    pub moltspeak_session_ttl_secs: u64,
}

impl std::fmt::Debug for IdentitySettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The private key never reaches a log line.
        f.debug_struct("IdentitySettings")
            .field("agent_id", &self.agent_id)
            .field("org", &self.org)
            .field("key_pem", &self.key_pem.as_ref().map(|_| "<redacted>"))
            .field("key_file", &self.key_file)
            .field(
                "moltspeak_session_ttl_secs",
                &self.moltspeak_session_ttl_secs,
            )
            .finish()
    }
}

impl Default for IdentitySettings {
    fn default() -> Self {
        Self {
            agent_id: "agentlang-registry".to_owned(),
            org: "agentlang".to_owned(),
            key_pem: None,
            key_file: None,
            moltspeak_session_ttl_secs: 3600,
        }
    }
}

/// The transparency log's signing key, name and witnesses. Every replica
/// must sign with the same key (a replica whose key did not sign the
/// stored checkpoints refuses to start); without one configured, the key is
/// generated once and kept in the database, like the JWT secret.
#[derive(Clone, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct LogSettings {
    /// A PKCS#8 PEM Ed25519 private key (`BEGIN PRIVATE KEY`).
    pub key_pem: Option<String>,
    /// A file holding such a key.
    pub key_file: Option<PathBuf>,
    /// The checkpoints' origin line (and the key's name); defaults to the
    /// public URL's `host[:port]` followed by `/log`.
    pub origin: Option<String>,
    /// Witnesses whose cosignatures `POST /log/witness` accepts: verifier
    /// keys in the signed-note form `<name>+<id>+<base64(0x04 || key)>`.
    pub witnesses: Vec<String>,
}

impl std::fmt::Debug for LogSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LogSettings")
            .field("key_pem", &self.key_pem.as_ref().map(|_| "<redacted>"))
            .field("key_file", &self.key_file)
            .field("origin", &self.origin)
            .field("witnesses", &self.witnesses)
            .finish()
    }
}

/// Everything [`Registry::open`](crate::Registry::open) needs, resolved:
/// where the registry keeps its data, and every knob of its rules.
#[derive(Debug, Clone)]
pub struct Settings {
    /// The URL clients reach the registry at: the JWT issuer, the log's
    /// origin, links.
    pub public_url: String,
    /// Holds the upload spool and the identity key (and, by default, the
    /// SQLite file and the filesystem blobs).
    pub data_dir: PathBuf,
    pub database_url: DatabaseUrl,
    pub storage_url: StorageUrl,
    pub s3: S3Settings,
    /// Tokio runtimes that will query the database: PostgreSQL's
    /// connections are split between them.
    pub runtimes: usize,
    /// Largest upload, in bytes.
    pub max_upload_bytes: usize,
    pub registration: RegistrationMode,
    pub rate_limits: RateLimitSettings,
    /// HS256 secret for API tokens; `None`: generated once and kept in the
    /// database.
    pub jwt_secret: Option<String>,
    /// Usernames of existing accounts to make admins at start-up
    /// (`accounts::apply_configured_admins`).
    pub admins: Vec<String>,
    pub identity: IdentitySettings,
    pub log: LogSettings,
    pub sweep_interval: Duration,
    pub sweep_grace: Duration,
    pub resolve_timeout: Duration,
    pub download_redirect: Duration,
    pub blob_cache_mib: u64,
    pub freshness_window: Duration,
    pub limits: RequestLimits,
    /// The namespace of the MCP server names `/v0.1/servers` lists
    /// (`<namespace>/<tool name>`, reverse DNS, checked by
    /// `agentlang_core::mcp::check_namespace`); `None`: the public URL's
    /// host reversed (`mcp::namespace`).
    pub mcp_namespace: Option<String>,
    /// Trusted publishing: the configured OpenID Connect issuers.
    pub oidc_issuers: Vec<String>,
    /// The `aud` ID tokens must carry; `None`: the public URL's host[:port].
    pub oidc_audience: Option<String>,
}
