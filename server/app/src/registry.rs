//! [`Registry`]: the handle every rule takes. It owns the storage, the
//! keys, the caches and the bounded queues of work. It is made of parts
//! that know nothing of it (so no rule's file and this one import each
//! other); `startup` brings one up from [`Settings`].

use std::{
    collections::BTreeMap,
    future::Future,
    sync::{Arc, Mutex, MutexGuard, PoisonError},
};

use store::{Blobs, Db, stored_answers::PackageRef};

use crate::{
    ServiceError,
    admission::Admission,
    cache::{Rendered, RenderedCache, RenderedKey},
    downloads::{DownloadCounter, DownloadTargets},
    identity::RegistryIdentity,
    kept_keys::PublishingKeys,
    metrics::Metrics,
    moltspeak::sessions::Sessions as MoltSpeakSessions,
    passwords::PasswordWork,
    publish_queue::PublishQueue,
    rate_limits::RateLimits,
    resolve::IndexCache,
    settings::Settings,
    tlog::TransparencyLog,
    tokens::TokenKeys,
    uploads::UploadSlots,
};

/// The registry: what every rule shares. Nothing here must agree across
/// replicas except through the database and the blob store; the rate
/// limiters and caches are per replica by design.
#[derive(Debug)]
pub struct Registry {
    pub(crate) settings: Arc<Settings>,
    pub(crate) db: Db,
    pub(crate) blobs: Blobs,
    pub(crate) tokens: TokenKeys,
    /// What prompt recipients' registration challenges are MACed with.
    pub(crate) recipient_proofs: crate::secrets::ProofKey,
    /// Second factor: what TOTP secrets are sealed with at rest.
    pub(crate) two_factor_key: crate::secrets::TwoFactorKey,
    pub(crate) rate_limits: RateLimits,
    pub(crate) metrics: Metrics,
    /// The registry's public URL without a trailing slash (the JWT issuer).
    pub(crate) public_url: String,
    /// Who the registry is in CLowl and MoltSpeak; shared by all replicas
    /// through configuration.
    pub(crate) identity: Arc<RegistryIdentity>,
    /// MoltSpeak challenges and verified sessions, in this replica's memory.
    pub(crate) moltspeak_sessions: Arc<MoltSpeakSessions>,
    /// MoltSpeak task outcomes and revoked consent tokens, in this
    /// replica's memory.
    pub(crate) moltspeak_ledger: Arc<crate::moltspeak::ledger::Ledger>,
    /// Index entries for resolution, checked against the database's
    /// generation on every use.
    pub(crate) index_cache: Arc<IndexCache>,
    /// Records and catalog pages as last rendered, at a generation.
    pub(crate) rendered: RenderedCache,
    /// Where each version's container is, at a generation.
    pub(crate) download_targets: DownloadTargets,
    /// Slots for password hashing and checking.
    pub(crate) passwords: PasswordWork,
    /// Slots for uploads being verified.
    pub(crate) uploads: Arc<UploadSlots>,
    /// What requests in flight hold: per address, and their bodies' bytes.
    pub(crate) admission: Admission,
    /// Where publishes commit, in batches.
    pub(crate) publish_queue: PublishQueue,
    /// Signing keys as publishes check them, kept briefly.
    pub(crate) publishing_keys: PublishingKeys,
    /// Download counts not yet written to the database.
    pub(crate) downloads: DownloadCounter,
    /// Packages whose stored records a download flush deleted, by id, for
    /// `crate::stored_answers` to render again (see [`Registry::add_records_due`]).
    pub(crate) due_records: Mutex<BTreeMap<i64, PackageRef>>,
    /// The transparency log: its key, and the tree and checkpoint this
    /// replica serves.
    pub(crate) tlog: Arc<TransparencyLog>,
    /// Trusted publishing: the configured OIDC issuers and their keys.
    pub(crate) oidc: Arc<crate::oidc::OidcKeys>,
}

/// Most packages kept due for their records at once: past it, a flush's
/// are left to the reads that miss them, which render them, so a keeper
/// that keeps failing does not grow the map with every flush.
const MAX_RECORDS_DUE: usize = 4096;

impl Registry {
    /// The packages due for their records (`crate::stored_answers`).
    pub(crate) fn records_due(&self) -> MutexGuard<'_, BTreeMap<i64, PackageRef>> {
        self.due_records
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// Adds `packages` to those due for their records, up to
    /// [`MAX_RECORDS_DUE`].
    pub(crate) fn add_records_due(&self, packages: impl IntoIterator<Item = PackageRef>) {
        let mut due = self.records_due();
        for package in packages {
            if due.len() >= MAX_RECORDS_DUE && !due.contains_key(&package.id) {
                break;
            }
            due.insert(package.id, package);
        }
    }

    /// The settings the registry was opened with.
    pub fn settings(&self) -> &Settings {
        &self.settings
    }

    /// The registry's public URL.
    pub fn public_url(&self) -> &str {
        &self.public_url
    }

    /// The rate-limit budgets every request and attempt spends.
    pub fn rate_limits(&self) -> &RateLimits {
        &self.rate_limits
    }

    /// What requests in flight may hold (the HTTP layer admits each).
    pub fn admission(&self) -> &Admission {
        &self.admission
    }

    /// The registry's counters, for `/metrics` and the HTTP layer's own.
    pub fn metrics(&self) -> &Metrics {
        &self.metrics
    }

    /// `/metrics`: every series, the database pools' read now.
    pub fn metrics_text(&self) -> Result<String, prometheus::Error> {
        self.metrics.render(self.db.pool_stats())
    }

    /// How API tokens are signed and verified.
    pub fn tokens(&self) -> &TokenKeys {
        &self.tokens
    }

    /// An answer as rendered at the current registry generation: from
    /// memory when this generation rendered it (and, for answers that show
    /// download counts, within [`crate::cache::RENDERED_MAX_AGE`]), else
    /// `render`'s, kept for the next caller. A cache may make a hot answer
    /// faster; every caller still pays the generation read that proves it
    /// current.
    pub async fn rendered<F, E>(
        &self,
        key: RenderedKey,
        render: impl FnOnce() -> F,
    ) -> Result<Rendered, E>
    where
        F: Future<Output = Result<Rendered, E>>,
        E: From<ServiceError>,
    {
        let generation = self.index_cache.current_generation(&self.db).await?;
        self.rendered.get_or_compute(generation, key, render).await
    }
}
