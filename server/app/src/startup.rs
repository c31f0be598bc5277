//! Bringing a [`Registry`] up from [`Settings`], its periodic jobs, and
//! putting it down.

use std::sync::Arc;

use anyhow::Context;
use store::{Blobs, Db, files::create_private_dir};

use crate::{
    Registry,
    accounts::apply_configured_admins,
    admission::{Admission, AdmissionLimits},
    cache,
    downloads::{self, DownloadCounter},
    identity::RegistryIdentity,
    kept_keys::PublishingKeys,
    metrics::Metrics,
    packages,
    passwords::{PasswordWork, decoy_hash},
    publish,
    publish_queue::PublishQueue,
    rate_limits::RateLimits,
    resolve::IndexCache,
    secrets,
    settings::Settings,
    sweep,
    tlog::TransparencyLog,
    tokens::TokenKeys,
    uploads::UploadSlots,
};

impl Registry {
    /// Opens storage (creating it on first start), runs migrations, seeds
    /// the models catalog, loads or makes the registry's keys, brings the
    /// transparency log up to date and applies the configured admins.
    pub async fn open(settings: Settings) -> anyhow::Result<Self> {
        // Settings built in code (not from the environment) are checked too.
        if let Some(secret) = &settings.jwt_secret {
            secrets::check_secret_strength(secret)
                .map_err(|m| anyhow::anyhow!("the JWT secret is refused: {m}"))?;
        }
        // The data folder holds the database, the identity key and the
        // upload spool: private to the registry's user.
        create_private_dir(&settings.data_dir)
            .with_context(|| format!("cannot create {}", settings.data_dir.display()))?;
        let db = Db::connect(
            &settings.database_url,
            settings.limits.database_timeout,
            settings.runtimes,
        )
        .await?;
        db.seed_models()
            .await
            .context("cannot seed the models catalog")?;
        let blobs = Blobs::open(
            &settings.storage_url,
            &settings.s3,
            settings.limits.storage_timeout,
        )?
        .with_hot_cache(settings.blob_cache_mib.saturating_mul(1024 * 1024));
        // Uploads cut off by a crash of this process left their spool files.
        let removed = publish::clean_spool(&settings.data_dir).with_context(|| {
            format!(
                "cannot clean the upload spool in {}",
                settings.data_dir.join(publish::SPOOL_DIR).display()
            )
        })?;
        if removed > 0 {
            tracing::info!(removed, "removed the spool files of interrupted uploads");
        }
        // The decoy hash costs one argon2 run: pay it now, not on a worker
        // during the first sign-in. On a thread that ends with it, so the
        // 19 MiB argon2 keeps per thread are returned at once, not held
        // while a pooled blocking thread idles for its keep-alive.
        let (made, decoy) = tokio::sync::oneshot::channel();
        std::thread::Builder::new()
            .name("password-decoy".into())
            .spawn(move || made.send(decoy_hash().len()))
            .context("cannot start the password decoy's thread")?;
        decoy.await.context("cannot prepare the password decoy")?;

        let secret = match &settings.jwt_secret {
            Some(secret) => secret.clone(),
            // Kept in the database: every replica of it signs alike, and no
            // file holds it.
            None => {
                let fresh = secrets::random_hex().context("no randomness for a secret")?;
                db.server_secret("jwt", &fresh)
                    .await
                    .context("cannot read or store the token signing secret")?
            }
        };
        let public_url = settings.public_url.clone();
        let tokens = TokenKeys::new(secret.as_bytes(), &public_url);
        let recipient_proofs = secrets::ProofKey::derive(secret.as_bytes());
        // Second factor: TOTP secrets are sealed under a key of their own.
        let two_factor_key = secrets::TwoFactorKey::derive(secret.as_bytes());
        tokens
            .self_test()
            .context("the token signer failed its self-test")?;

        let identity = RegistryIdentity::load(&settings.identity, &settings.data_dir)
            .context("cannot load the registry's agent identity")?;

        let retired = packages::retire_unreadable_versions(&db)
            .await
            .context("cannot check stored versions against today's bounds")?;
        if retired > 0 {
            tracing::warn!(
                retired,
                "marked deleted the versions whose text today's bounds refuse"
            );
        }
        let tlog = TransparencyLog::open(&db, &settings.log, &public_url)
            .await
            .context("cannot open the transparency log")?;
        tlog.prepare(&db)
            .await
            .context("cannot bring the transparency log up to date")?;

        // The caches count their lookups, and keep across a move of the
        // generation what it did not change, as the index cache reads it.
        let metrics = Metrics::new()?;
        let index_cache = Arc::new(
            IndexCache::with_freshness_window(settings.freshness_window).counting(&metrics.caches),
        );
        let registry = Self {
            rate_limits: RateLimits::new(&settings.rate_limits),
            passwords: PasswordWork::per_core(),
            uploads: Arc::new(UploadSlots::new(&settings.limits)),
            admission: Admission::new(AdmissionLimits::new(
                settings.limits.max_requests_per_address,
                settings.limits.body_budget_bytes,
            )),
            downloads: DownloadCounter::default(),
            due_records: std::sync::Mutex::default(),
            publish_queue: PublishQueue::start(db.clone())
                .context("cannot start the publish queue's thread")?,
            publishing_keys: PublishingKeys::default(),
            rendered: cache::rendered_cache().tracking(index_cache.changes(), &metrics.caches),
            download_targets: downloads::download_targets()
                .tracking(index_cache.changes(), &metrics.caches),
            metrics,
            index_cache,
            identity: Arc::new(identity),
            moltspeak_sessions: Arc::new(crate::moltspeak::sessions::Sessions::new(
                settings
                    .identity
                    .moltspeak_session_ttl_secs
                    .saturating_mul(1000),
            )),
            moltspeak_ledger: Arc::default(),
            tlog: Arc::new(tlog),
            oidc: Arc::new(crate::oidc::OidcKeys::new(
                settings.oidc_issuers.clone(),
                settings.oidc_audience.clone(),
                &settings.public_url,
            )),
            settings: Arc::new(settings),
            db,
            blobs,
            tokens,
            recipient_proofs,
            two_factor_key,
            public_url,
        };
        apply_configured_admins(&registry)
            .await
            .map_err(|e| anyhow::anyhow!("cannot apply AGENTLANG_REGISTRY_ADMINS: {e}"))?;
        Ok(registry)
    }

    /// Starts the periodic jobs on the current (actix or tokio local)
    /// runtime: the blob sweep, the download-count flush, the backfill of
    /// versions stored before their facts were, the stored answers,
    /// the log's sequencer and its start-up audit. Abort the handles to stop them.
    pub fn start_background(self: &Arc<Self>) -> Vec<tokio::task::JoinHandle<()>> {
        let interval = self.settings.sweep_interval;
        let sweeper = (!interval.is_zero())
            .then(|| tokio::task::spawn_local(sweep::sweep_periodically(self.clone(), interval)));
        sweeper
            .into_iter()
            .chain([
                tokio::task::spawn_local(packages::flush_downloads_periodically(self.clone())),
                tokio::task::spawn_local(packages::backfill_extras(self.clone())),
                tokio::task::spawn_local(crate::stored_answers::keep_stored_answers(self.clone())),
                tokio::task::spawn_local(sequence(self.clone())),
                tokio::task::spawn_local(audit(self.clone())),
            ])
            .collect()
    }

    /// Writes what is kept in memory and closes the database's pools: the
    /// last step of a stopping server.
    pub async fn close(&self) {
        if let Err(e) = self.downloads.flush(&self.db).await {
            tracing::warn!(error = %e, "download counts not written at shutdown");
        }
        self.db.close().await;
    }
}

/// The log's sequencer, until the task is stopped.
async fn sequence(registry: Arc<Registry>) {
    crate::tlog::run_forever(&registry.tlog, &registry.db).await;
}

/// The log's audit, once.
async fn audit(registry: Arc<Registry>) {
    registry.tlog.audit_and_report(&registry.db).await;
}
