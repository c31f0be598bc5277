//! Accounts' signing keys as publishes check them, kept briefly.

use std::{
    collections::HashMap,
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

use store::keys::SigningKeyRecord;

/// How long a publish may use an account's keys as read before.
const KEYS_KEPT: Duration = Duration::from_secs(30);

/// Accounts whose keys are kept; past it the map is cleared.
const KEYS_ACCOUNTS: usize = 10_000;

/// Accounts' signing keys as publishes check them, kept for
/// [`KEYS_KEPT`]: a burst of publishes by one account reads them once, not
/// once each. A kept list can be stale in two ways, and neither lets a
/// revoked key publish: a key registered since (on another replica) is
/// missing, so a publish signed with it reads the list again
/// ([`crate::keys::publishing_keys`]); a key revoked since on another replica still
/// looks usable, and the publish's transaction, which reads the key again,
/// refuses it. A change on this replica forgets the account's list at once.
#[derive(Debug, Default)]
pub struct PublishingKeys {
    accounts: Mutex<HashMap<i64, KeptKeys>>,
}

/// When an account's keys were read, and what they were.
type KeptKeys = (Instant, Arc<Vec<SigningKeyRecord>>);

impl PublishingKeys {
    fn accounts(&self) -> std::sync::MutexGuard<'_, HashMap<i64, KeptKeys>> {
        self.accounts
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    pub(crate) fn kept(&self, account_id: i64) -> Option<Arc<Vec<SigningKeyRecord>>> {
        let accounts = self.accounts();
        let (read, keys) = accounts.get(&account_id)?;
        (read.elapsed() < KEYS_KEPT).then(|| Arc::clone(keys))
    }

    pub(crate) fn keep(&self, account_id: i64, read: Instant, keys: Arc<Vec<SigningKeyRecord>>) {
        let mut accounts = self.accounts();
        if accounts.len() >= KEYS_ACCOUNTS {
            accounts.clear();
        }
        accounts.insert(account_id, (read, keys));
    }

    pub(crate) fn forget(&self, account_id: i64) {
        self.accounts().remove(&account_id);
    }
}
