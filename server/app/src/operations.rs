//! The operator's commands, run against the configured storage without a
//! server: migrate, sweep, make or unmake admins.

use std::time::Duration;

use agentlang_core::Username;
use store::{
    Blobs, DatabaseUrl, Db, DbError, S3Settings, StorageUrl, accounts::AccountRecord,
    blobs::BlobError,
};

use crate::{ServiceError, accounts, sweep};

/// The configured database (and, for a sweep, blob store), opened for one
/// command on the current thread.
#[derive(Debug)]
pub struct Storage {
    db: Db,
}

impl Storage {
    /// Opens the database, which applies the migrations it lacks.
    pub async fn open(url: &DatabaseUrl, timeout: Duration) -> Result<Self, DbError> {
        // An operator's command runs on the main thread alone.
        Ok(Self {
            db: Db::connect(url, timeout, 1).await?,
        })
    }

    /// One sweep of the blobs nothing references, older than `grace`.
    pub async fn sweep(
        &self,
        storage: &StorageUrl,
        s3: &S3Settings,
        timeout: Duration,
        grace: Duration,
    ) -> anyhow::Result<sweep::SweepReport> {
        let blobs = Blobs::open(storage, s3, timeout)
            .map_err(|e: BlobError| anyhow::anyhow!("cannot open the blob store: {e}"))?;
        sweep::sweep_unreferenced(&self.db, &blobs, grace).await
    }

    /// Makes `username` an admin, or no longer one.
    pub async fn set_admin(
        &self,
        username: &Username,
        is_admin: bool,
    ) -> Result<AccountRecord, ServiceError> {
        accounts::set_admin(&self.db, username, is_admin).await
    }
}
