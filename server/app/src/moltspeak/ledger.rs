//! What MoltSpeak operations remember between messages, in this replica's
//! memory and bounded: task outcomes (for `status` and `cancel`, an hour)
//! and revoked consent tokens (until they would have expired). A leaf: the
//! registry holds one, and only operations read it.

use std::{
    collections::HashMap,
    sync::{Mutex, MutexGuard},
};

/// How long a task's outcome can be asked for.
pub const TASK_TTL_MS: u64 = 3_600_000;
/// Tasks remembered per owner (key or client address).
pub const MAX_TASKS_PER_OWNER: usize = 256;
/// Tasks remembered in total.
pub const MAX_TASKS: usize = 8192;
/// Revoked consent tokens remembered (until their expiry).
pub const MAX_REVOKED: usize = 8192;

/// Why the ledger refused to remember something.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum LedgerError {
    #[error("a task with this task_id exists; choose a new one")]
    TaskExists,
    #[error("too many tasks remembered (at most {MAX_TASKS_PER_OWNER} per sender for an hour)")]
    TooManyTasks,
    #[error("the registry holds too many revocations; retry later")]
    TooManyRevocations,
}

/// A finished task's outcome.
#[derive(Debug, Clone)]
pub struct TaskRecord {
    pub task_type: String,
    pub status: &'static str,
    /// Unix ms.
    pub finished: u64,
}

#[derive(Default)]
struct State {
    /// (owner, task_id) → outcome.
    tasks: HashMap<(String, String), TaskRecord>,
    /// Tasks per owner, so the per-owner bound is not a scan.
    owned: HashMap<String, usize>,
    /// Token signature part → the token's expiry.
    revoked: HashMap<String, u64>,
}

impl State {
    fn forget_finished_before(&mut self, cutoff: u64) {
        let owned = &mut self.owned;
        self.tasks.retain(|(owner, _), t| {
            let keep = t.finished > cutoff;
            if !keep && let Some(n) = owned.get_mut(owner) {
                *n -= 1;
            }
            keep
        });
        owned.retain(|_, n| *n > 0);
    }
}

/// Task outcomes and revoked tokens.
#[derive(Default)]
pub struct Ledger(Mutex<State>);

impl std::fmt::Debug for Ledger {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Ledger")
    }
}

impl Ledger {
    fn lock(&self) -> MutexGuard<'_, State> {
        // A panic mid-update leaves plain maps: still usable.
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Remembers `owner`'s finished task under `task_id`, new to them.
    pub fn record_task(
        &self,
        owner: &str,
        task_id: &str,
        record: TaskRecord,
    ) -> Result<(), LedgerError> {
        let mut state = self.lock();
        state.forget_finished_before(record.finished.saturating_sub(TASK_TTL_MS));
        let key = (owner.to_owned(), task_id.to_owned());
        if state.tasks.contains_key(&key) {
            return Err(LedgerError::TaskExists);
        }
        let owned = state.owned.get(owner).copied().unwrap_or(0);
        if owned >= MAX_TASKS_PER_OWNER || state.tasks.len() >= MAX_TASKS {
            return Err(LedgerError::TooManyTasks);
        }
        *state.owned.entry(owner.to_owned()).or_default() += 1;
        state.tasks.insert(key, record);
        Ok(())
    }

    /// `owner`'s task `task_id`, if it finished within the last hour.
    pub fn task(&self, owner: &str, task_id: &str, now: u64) -> Option<TaskRecord> {
        self.lock()
            .tasks
            .get(&(owner.to_owned(), task_id.to_owned()))
            .filter(|t| t.finished.saturating_add(TASK_TTL_MS) > now)
            .cloned()
    }

    /// Remembers a revoked token (by its signature part) until `expires`.
    pub fn revoke(&self, signature_part: &str, expires: u64, now: u64) -> Result<(), LedgerError> {
        let mut state = self.lock();
        state.revoked.retain(|_, e| *e > now);
        if state.revoked.len() >= MAX_REVOKED {
            return Err(LedgerError::TooManyRevocations);
        }
        state.revoked.insert(signature_part.to_owned(), expires);
        Ok(())
    }

    /// Whether `token` was revoked.
    pub fn is_revoked(&self, token: &str) -> bool {
        let part = token.rsplit('.').next().unwrap_or_default();
        self.lock().revoked.contains_key(part)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn done(at: u64) -> TaskRecord {
        TaskRecord {
            task_type: "search".into(),
            status: "completed",
            finished: at,
        }
    }

    #[test]
    fn tasks_are_bounded_per_owner_and_forgotten_after_an_hour() {
        let ledger = Ledger::default();
        for i in 0..MAX_TASKS_PER_OWNER {
            ledger
                .record_task("a", &i.to_string(), done(1_000))
                .unwrap();
        }
        assert_eq!(
            ledger.record_task("a", "one-more", done(1_000)),
            Err(LedgerError::TooManyTasks)
        );
        assert_eq!(
            ledger.record_task("a", "0", done(1_000)),
            Err(LedgerError::TaskExists)
        );
        ledger.record_task("b", "0", done(1_000)).unwrap();
        assert!(ledger.task("a", "0", 2_000).is_some());
        let later = 1_000 + TASK_TTL_MS + 1;
        assert!(ledger.task("a", "0", later).is_none());
        ledger.record_task("a", "fresh", done(later)).unwrap();
        assert_eq!(ledger.lock().owned.get("a"), Some(&1));
    }
}
