//! A value per tokio runtime, for what must stay on the runtime that made
//! it: a database connection's socket is registered with the reactor of the
//! runtime that opened it, and only that runtime's thread learns that an
//! answer has arrived.
//!
//! actix runs each worker on a single-threaded runtime of its own, beside
//! the main thread's and the publish queue's. Shared by all of them, one
//! PostgreSQL pool handed a worker connections that other threads had
//! opened: each query then waited for a second thread to wake (or to finish
//! what it was doing) and pass the answer on. Under first-time resolves the
//! cores idled several times as much on PostgreSQL as on SQLite, whose
//! connections each have a thread of their own (`deploy/bench/RESULTS.md`,
//! Decisions).

use std::sync::{Mutex, OnceLock, PoisonError};

use tokio::runtime::{Handle, Id};

/// Runtimes with a value of their own; later ones share the first's,
/// which is correct, only slower. A server has one per worker thread, plus
/// the main thread's and the publish queue's.
const SLOTS: usize = 64;

/// Values made on each runtime's first use and kept for the life of the
/// owner. Code outside any runtime (which cannot do IO) gets the first
/// value made.
pub(crate) struct PerRuntime<T> {
    /// Filled in order and never emptied, so a lookup stops at the first
    /// empty slot.
    slots: [OnceLock<(Option<Id>, T)>; SLOTS],
    /// Held only while a slot is filled.
    filling: Mutex<()>,
}

impl<T> PerRuntime<T> {
    pub(crate) fn new() -> Self {
        Self {
            slots: std::array::from_fn(|_| OnceLock::new()),
            filling: Mutex::new(()),
        }
    }

    /// This runtime's value, made by `make` on its first use.
    pub(crate) fn get_or_init(&self, make: impl FnOnce() -> T) -> &T {
        let id = Handle::try_current().ok().map(|handle| handle.id());
        if let Some(value) = self.find(id) {
            return value;
        }
        let _filling = self.filling.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(value) = self.find(id) {
            return value;
        }
        match self.slots.iter().find(|slot| slot.get().is_none()) {
            Some(slot) => &slot.get_or_init(|| (id, make())).1,
            None => {
                static WARNED: std::sync::Once = std::sync::Once::new();
                WARNED.call_once(|| {
                    tracing::warn!(
                        "more than {SLOTS} runtimes query the database; the rest share the first's connections"
                    );
                });
                &self.slots[0].get().expect("every slot is filled").1
            }
        }
    }

    fn find(&self, id: Option<Id>) -> Option<&T> {
        let mut made = self.slots.iter().map_while(OnceLock::get);
        match id {
            None => made.next(),
            Some(_) => made.find(|(key, _)| *key == id),
        }
        .map(|(_, value)| value)
    }

    /// Every value made so far.
    pub(crate) fn all(&self) -> impl Iterator<Item = &T> {
        self.slots
            .iter()
            .map_while(OnceLock::get)
            .map(|(_, value)| value)
    }
}

impl<T> Default for PerRuntime<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T> std::fmt::Debug for PerRuntime<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PerRuntime")
            .field("runtimes", &self.all().count())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn runtime() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap()
    }

    #[test]
    fn each_runtime_gets_its_own_value_and_keeps_it() {
        let values = PerRuntime::new();
        let (a, b) = (runtime(), runtime());
        let made = std::sync::atomic::AtomicUsize::new(0);
        let make = || made.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let first_a = *a.block_on(async { values.get_or_init(make) });
        let first_b = *b.block_on(async { values.get_or_init(make) });
        assert_ne!(first_a, first_b);
        assert_eq!(*a.block_on(async { values.get_or_init(make) }), first_a);
        assert_eq!(*b.block_on(async { values.get_or_init(make) }), first_b);
        // Outside any runtime: the first runtime's.
        assert_eq!(*values.get_or_init(make), first_a);
        assert_eq!(values.all().count(), 2);
        let none_yet = PerRuntime::new();
        assert_eq!(*none_yet.get_or_init(|| 7), 7);
        assert_eq!(*a.block_on(async { none_yet.get_or_init(|| 8) }), 8);
    }

    #[test]
    fn a_thread_inside_a_runtime_s_block_on_uses_that_runtime_s_value() {
        // What a solver thread does for a mid-solve database read.
        let values = PerRuntime::new();
        let rt = runtime();
        let mine = *rt.block_on(async { values.get_or_init(|| 1) });
        let handle = rt.handle().clone();
        let theirs = std::thread::scope(|s| {
            s.spawn(|| *handle.block_on(async { values.get_or_init(|| 2) }))
                .join()
                .unwrap()
        });
        assert_eq!(theirs, mine);
    }

    #[test]
    fn runtimes_past_the_slots_share_the_first_value() {
        let values = PerRuntime::new();
        for i in 0..SLOTS {
            assert_eq!(*runtime().block_on(async { values.get_or_init(|| i) }), i);
        }
        assert_eq!(
            *runtime().block_on(async { values.get_or_init(|| SLOTS) }),
            0
        );
        assert_eq!(values.all().count(), SLOTS);
    }
}
