//! Upload slots go to those who send. An upload enters (per account, per
//! address and per process, before its body) and holds a spool file and a
//! reading thread; it takes a verification slot only once its manifest has
//! arrived and checks out, so a client that trickles bytes without ever
//! sending a manifest holds no slot. A quarter of the slots are kept for
//! established publishers (accounts with a version published a day ago or
//! more), which a crowd of new accounts cannot take. How fast the body must
//! arrive is the HTTP layer's (`deadlines`), as every body's time is.

use std::{
    collections::HashMap,
    sync::{Arc, Mutex, MutexGuard, PoisonError},
};

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use crate::{ServiceError, rate_limits::ClientAddr, settings::RequestLimits};

/// Uploads in flight per verification slot: room for those still before
/// their manifest, whose reading threads sleep on the network.
const ENTRIES_PER_SLOT: usize = 2;

/// Who has uploads in flight.
#[derive(Debug, Default)]
struct Counts {
    accounts: HashMap<i64, usize>,
    addresses: HashMap<String, usize>,
}

/// Bounds on uploads in flight (see the module docs).
#[derive(Debug)]
pub struct UploadSlots {
    entries: Arc<Semaphore>,
    open: Arc<Semaphore>,
    reserved: Arc<Semaphore>,
    counts: Arc<Mutex<Counts>>,
    per_account_max: usize,
    per_address_max: usize,
}

/// An upload in flight, before or after its manifest; given back when
/// dropped.
#[derive(Debug)]
pub struct UploadEntry {
    _entry: OwnedSemaphorePermit,
    account_id: i64,
    address: String,
    counts: Arc<Mutex<Counts>>,
}

/// A verification slot, taken once the manifest checked out.
#[derive(Debug)]
pub struct UploadSlot {
    _slot: OwnedSemaphorePermit,
}

fn lock(counts: &Mutex<Counts>) -> MutexGuard<'_, Counts> {
    counts.lock().unwrap_or_else(PoisonError::into_inner)
}

fn busy() -> ServiceError {
    ServiceError::Unavailable(
        "the registry is verifying as many uploads as it can; retry shortly".to_owned(),
    )
}

impl UploadSlots {
    pub fn new(limits: &RequestLimits) -> Self {
        let total = limits.max_concurrent_uploads.max(1);
        let reserved = total / 4;
        Self {
            entries: Arc::new(Semaphore::new(total * ENTRIES_PER_SLOT)),
            open: Arc::new(Semaphore::new(total - reserved)),
            reserved: Arc::new(Semaphore::new(reserved)),
            counts: Arc::default(),
            per_account_max: limits.max_concurrent_uploads_per_account,
            per_address_max: limits.max_concurrent_uploads_per_address,
        }
    }

    /// Lets an upload by `account_id` from `client` in, at once or never:
    /// 429 when the account or the address has its share in flight, 503
    /// when the process has.
    pub fn enter(&self, account_id: i64, client: &ClientAddr) -> Result<UploadEntry, ServiceError> {
        let mut counts = lock(&self.counts);
        let account = counts.accounts.get(&account_id).copied().unwrap_or(0);
        let address = counts.addresses.get(client.as_str()).copied().unwrap_or(0);
        if account >= self.per_account_max || address >= self.per_address_max {
            return Err(ServiceError::RateLimited {
                retry_after_secs: 5,
            });
        }
        let entry = Arc::clone(&self.entries)
            .try_acquire_owned()
            .map_err(|_| busy())?;
        counts.accounts.insert(account_id, account + 1);
        counts
            .addresses
            .insert(client.as_str().to_owned(), address + 1);
        Ok(UploadEntry {
            _entry: entry,
            account_id,
            address: client.as_str().to_owned(),
            counts: Arc::clone(&self.counts),
        })
    }

    /// A verification slot for an upload whose manifest checked out: an
    /// open one, else, for an `established` publisher, a reserved one; 503
    /// when none is free.
    pub fn claim(&self, established: bool) -> Result<UploadSlot, ServiceError> {
        Arc::clone(&self.open)
            .try_acquire_owned()
            .or_else(|e| {
                if established {
                    Arc::clone(&self.reserved).try_acquire_owned()
                } else {
                    Err(e)
                }
            })
            .map(|slot| UploadSlot { _slot: slot })
            .map_err(|_| busy())
    }
}

impl Drop for UploadEntry {
    fn drop(&mut self) {
        let mut counts = lock(&self.counts);
        let Counts {
            accounts,
            addresses,
        } = &mut *counts;
        decrement(accounts, &self.account_id);
        decrement(addresses, &self.address);
    }
}

/// Counts one less for `key`, forgetting it at zero.
fn decrement<K: std::hash::Hash + Eq>(counts: &mut HashMap<K, usize>, key: &K) {
    if let Some(n) = counts.get_mut(key) {
        *n -= 1;
        if *n == 0 {
            counts.remove(key);
        }
    }
}

#[cfg(test)]
mod tests {
    use std::net::{IpAddr, Ipv4Addr};

    use super::*;

    fn client(last: u8) -> ClientAddr {
        ClientAddr::of(IpAddr::V4(Ipv4Addr::new(10, 0, 0, last)))
    }

    fn slots(total: usize) -> UploadSlots {
        UploadSlots::new(&RequestLimits {
            max_concurrent_uploads: total,
            max_concurrent_uploads_per_account: 2,
            max_concurrent_uploads_per_address: 3,
            ..RequestLimits::default()
        })
    }

    #[test]
    fn accounts_and_addresses_have_their_share_of_uploads() {
        let slots = slots(8);
        let _a = slots.enter(1, &client(1)).unwrap();
        let b = slots.enter(1, &client(1)).unwrap();
        // The account's share.
        assert!(matches!(
            slots.enter(1, &client(2)),
            Err(ServiceError::RateLimited { .. })
        ));
        // The address's share, whatever the account.
        let _c = slots.enter(2, &client(1)).unwrap();
        assert!(matches!(
            slots.enter(3, &client(1)),
            Err(ServiceError::RateLimited { .. })
        ));
        drop(b);
        slots.enter(1, &client(2)).unwrap();
    }

    #[test]
    fn a_quarter_of_the_slots_wait_for_established_publishers() {
        let slots = slots(8);
        let open: Vec<UploadSlot> = (0..6).map(|_| slots.claim(false).unwrap()).collect();
        assert!(matches!(
            slots.claim(false),
            Err(ServiceError::Unavailable(_))
        ));
        let reserved: Vec<UploadSlot> = (0..2).map(|_| slots.claim(true).unwrap()).collect();
        assert!(slots.claim(true).is_err());
        drop(open);
        slots.claim(false).unwrap();
        drop(reserved);
    }
}
