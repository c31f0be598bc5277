//! What every handler shares. Nothing here must agree across replicas except
//! through `db` and `blobs`; the rate limiters are per replica by design.

use std::sync::Arc;

use crate::{
    auth::TokenKeys, blobs::Blobs, config::Config, db::Db, metrics::Metrics,
    rate_limit::RateLimits, service::resolve::IndexCache,
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
    /// Index entries for resolution, checked against the database's
    /// generation on every use.
    pub index_cache: IndexCache,
}
