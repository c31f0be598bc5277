//! What every handler shares. Nothing here must agree across replicas except
//! through `db` and `blobs`; the rate limiters are per replica by design.

use std::sync::Arc;

use crate::{
    blobs::Blobs,
    config::Config,
    db::Db,
    identity::RegistryIdentity,
    metrics::Metrics,
    rate_limit::RateLimits,
    service::tokens::TokenKeys,
    service::{
        cache::RenderedCache,
        credentials::PasswordWork,
        keys::PublishingKeys,
        packages::{DownloadCounter, DownloadTargets},
        publish::UploadSlots,
        publish_queue::PublishQueue,
        resolve::IndexCache,
        tlog::TransparencyLog,
    },
};

#[derive(Debug)]
pub struct AppState {
    pub config: Arc<Config>,
    pub db: Db,
    pub blobs: Blobs,
    pub tokens: TokenKeys,
    pub rate_limits: RateLimits,
    pub metrics: Metrics,
    /// The registry's public URL without a trailing slash (the JWT issuer).
    pub public_url: String,
    /// Who the registry is in CLowl and MoltSpeak; shared by all replicas
    /// through configuration.
    pub identity: Arc<RegistryIdentity>,
    /// Index entries for resolution, checked against the database's
    /// generation on every use.
    pub index_cache: Arc<IndexCache>,
    /// Records and catalog pages as last rendered, at a generation.
    pub rendered: RenderedCache,
    /// Where each version's container is, at a generation.
    pub download_targets: DownloadTargets,
    /// Slots for password hashing and checking.
    pub passwords: PasswordWork,
    /// Slots for uploads being verified.
    pub uploads: UploadSlots,
    /// Where publishes commit, in batches.
    pub publish_queue: PublishQueue,
    /// Signing keys as publishes check them, kept briefly.
    pub publishing_keys: PublishingKeys,
    /// Download counts not yet written to the database.
    pub downloads: DownloadCounter,
    /// The transparency log: its key, and the tree and checkpoint this
    /// replica serves.
    pub tlog: Arc<TransparencyLog>,
}
