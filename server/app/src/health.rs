//! Whether the registry can serve: its database and its blob store both
//! answer, each within a bound.

use std::time::Duration;

use crate::{Registry, ServiceError};

/// How long each backend has to answer a readiness check.
pub const READINESS_TIMEOUT: Duration = Duration::from_secs(2);

/// Which backends answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Readiness {
    pub database: bool,
    pub storage: bool,
}

impl Readiness {
    /// `Unavailable` naming what does not answer; `Ok` when both do.
    pub fn check(self) -> Result<(), ServiceError> {
        let detail = match (self.database, self.storage) {
            (true, true) => return Ok(()),
            (false, true) => "the database is unreachable",
            (true, false) => "blob storage is unreachable",
            (false, false) => "the database and blob storage are unreachable",
        };
        Err(ServiceError::Unavailable(detail.to_owned()))
    }
}

/// Asks both backends at once, each for at most [`READINESS_TIMEOUT`].
pub async fn readiness(registry: &Registry) -> Readiness {
    let (database, storage) = futures_util::join!(
        tokio::time::timeout(READINESS_TIMEOUT, registry.db.ping()),
        tokio::time::timeout(READINESS_TIMEOUT, registry.blobs.check()),
    );
    let database = match database {
        Ok(Ok(())) => true,
        Ok(Err(e)) => {
            tracing::warn!(error = %e, "readiness: database unreachable");
            false
        }
        Err(_) => {
            tracing::warn!("readiness: the database did not answer in time");
            false
        }
    };
    let storage = match storage {
        Ok(Ok(())) => true,
        Ok(Err(e)) => {
            tracing::warn!(error = %e, "readiness: blob storage unreachable");
            false
        }
        Err(_) => {
            tracing::warn!("readiness: blob storage did not answer in time");
            false
        }
    };
    Readiness { database, storage }
}
