//! Upload slots: how many uploads may be in flight, per process and per
//! account.

use std::{
    collections::HashMap,
    sync::{Arc, Mutex},
};

use crate::ServiceError;

/// Bounds on uploads in flight: so many per process (each holds a blocking
/// thread, a spool file and the reader's memory) and so many per account.
#[derive(Debug)]
pub struct UploadSlots {
    total: Arc<tokio::sync::Semaphore>,
    per_account: Arc<Mutex<HashMap<i64, usize>>>,
    per_account_max: usize,
}

/// A claimed upload slot, given back when dropped.
#[derive(Debug)]
pub struct UploadSlot {
    _total: tokio::sync::OwnedSemaphorePermit,
    account_id: i64,
    per_account: Arc<Mutex<HashMap<i64, usize>>>,
}

impl Drop for UploadSlot {
    fn drop(&mut self) {
        let mut counts = self
            .per_account
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(n) = counts.get_mut(&self.account_id) {
            *n -= 1;
            if *n == 0 {
                counts.remove(&self.account_id);
            }
        }
    }
}

impl UploadSlots {
    pub fn new(total: usize, per_account: usize) -> Self {
        Self {
            total: Arc::new(tokio::sync::Semaphore::new(total)),
            per_account: Arc::default(),
            per_account_max: per_account,
        }
    }

    /// A slot for an upload by `account_id`, at once or never: 429 when the
    /// account has its share in flight, 503 when the process has.
    pub fn claim(&self, account_id: i64) -> Result<UploadSlot, ServiceError> {
        let mut counts = self
            .per_account
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let mine = counts.get(&account_id).copied().unwrap_or(0);
        if mine >= self.per_account_max {
            return Err(ServiceError::RateLimited {
                retry_after_secs: 5,
            });
        }
        let permit = Arc::clone(&self.total).try_acquire_owned().map_err(|_| {
            ServiceError::Unavailable(
                "the registry is verifying as many uploads as it can; retry shortly".to_owned(),
            )
        })?;
        counts.insert(account_id, mine + 1);
        Ok(UploadSlot {
            _total: permit,
            account_id,
            per_account: Arc::clone(&self.per_account),
        })
    }
}
