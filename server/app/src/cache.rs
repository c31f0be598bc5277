//! What reads answer, kept in memory and trusted only at the registry
//! generation it was computed at (see `service::resolve::IndexCache`, which
//! reads the generation for every request): records, catalog pages and
//! where a version's container is. Every change a record or page shows
//! (a publish, yank, owner, key revocation, protocol, backfill) bumps the
//! generation in its transaction (migration 0023), so a cached answer is
//! never older than the request. Download counts are the one exception:
//! they reach the database in batches every few seconds anyway, so an
//! answer that shows them is kept at most that long.

use std::{
    hash::Hash,
    sync::{
        Arc,
        atomic::{AtomicBool, AtomicI64, Ordering},
    },
    time::{Duration, Instant},
};

use bytes::Bytes;

use crate::{ServiceError, search::query::SearchQuery};

/// Bytes of rendered answers one process keeps.
const RENDERED_BYTES: u64 = 32 * 1024 * 1024;

/// How often counted downloads are written
/// ([`crate::packages::DownloadCounter`]).
pub const DOWNLOAD_FLUSH_INTERVAL: Duration = Duration::from_secs(5);

/// How long an answer that shows download counts is served: as long as
/// counts wait in memory before they are written.
pub const RENDERED_MAX_AGE: Duration = DOWNLOAD_FLUSH_INTERVAL;

/// An answer as sent: the body and its strong `ETag`.
#[derive(Debug, Clone)]
pub struct Rendered {
    pub body: Bytes,
    pub etag: String,
}

impl Rendered {
    pub fn new(body: Bytes) -> Self {
        let etag = etag_of(&body);
        Self { body, etag }
    }

    /// A value serialized as JSON.
    pub fn json(value: &impl serde::Serialize) -> Result<Self, ServiceError> {
        Ok(Self::new(Bytes::from(
            serde_json::to_vec(value).map_err(ServiceError::internal)?,
        )))
    }
}

/// What a rendered answer is of. Names are normalized, so every spelling
/// of a package shares one entry.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum RenderedKey {
    /// `GET /api/v1/{kind}/{name}`.
    PackageRecord(agentlang_core::Kind, String),
    /// `GET /api/v1/{kind}/{name}/{version}`.
    VersionRecord(agentlang_core::Kind, String, agentlang_core::Version),
    /// A catalog page as an anonymous visitor sees it, by its path.
    Page(String),
    /// `GET /api/v1/search`.
    Search(SearchQuery),
}

#[derive(Clone)]
struct Entry<V> {
    generation: i64,
    at: Instant,
    value: V,
    /// Set by the one request that renders the entry again once it is past
    /// its age; the others keep being answered with it meanwhile.
    refreshing: Arc<AtomicBool>,
}

impl<V> Entry<V> {
    fn new(generation: i64, value: V) -> Self {
        Self {
            generation,
            at: Instant::now(),
            value,
            refreshing: Arc::default(),
        }
    }
}

/// Weighs an entry by what it holds (at least 1, so nothing is free).
pub trait Weight {
    fn weight(&self) -> u64;
}

impl Weight for Rendered {
    fn weight(&self) -> u64 {
        (self.body.len() + self.etag.len() + 64) as u64
    }
}

#[derive(Clone)]
struct ByWeight;

impl<K, V: Weight> quick_cache::Weighter<K, Entry<V>> for ByWeight {
    fn weight(&self, _key: &K, entry: &Entry<V>) -> u64 {
        entry.value.weight().max(1)
    }
}

/// Values computed at a registry generation, each served while the
/// generation stands and, with a maximum age, no longer than that. Bounded
/// by weight; the least useful entries go first (quick_cache's policy).
pub struct GenerationCache<K, V> {
    /// The newest generation seen: a newer one empties the cache.
    generation: AtomicI64,
    max_age: Option<Duration>,
    entries: quick_cache::sync::Cache<K, Entry<V>, ByWeight>,
}

impl<K, V> std::fmt::Debug for GenerationCache<K, V> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GenerationCache")
            .field("generation", &self.generation.load(Ordering::Relaxed))
            .finish_non_exhaustive()
    }
}

impl<K: Eq + Hash + Clone, V: Weight + Clone> GenerationCache<K, V> {
    /// Room for `capacity` of weight, about `items` entries.
    pub fn new(items: usize, capacity: u64, max_age: Option<Duration>) -> Self {
        Self {
            generation: AtomicI64::new(i64::MIN),
            max_age,
            entries: quick_cache::sync::Cache::with_weighter(items, capacity, ByWeight),
        }
    }

    /// Moves to `generation` if it is newer, dropping everything older.
    fn observe(&self, generation: i64) {
        let seen = self.generation.fetch_max(generation, Ordering::AcqRel);
        if seen < generation {
            self.entries.clear();
        }
    }

    /// The value computed at `generation`, if still young enough.
    pub fn get(&self, generation: i64, key: &K) -> Option<V> {
        self.observe(generation);
        let entry = self.entries.get(key)?;
        let fresh = self.max_age.is_none_or(|age| entry.at.elapsed() < age);
        (entry.generation == generation && fresh).then_some(entry.value)
    }

    /// Forgets everything (what the entries show changed in a way the
    /// generation does not track: download counts).
    pub fn clear(&self) {
        self.entries.clear();
    }

    /// Keeps `value`, computed at `generation`, unless a newer generation
    /// has been seen since.
    pub fn put(&self, generation: i64, key: K, value: V) {
        self.observe(generation);
        if self.generation.load(Ordering::Acquire) == generation {
            self.entries.insert(key, Entry::new(generation, value));
        }
    }

    /// The value for `key` at `generation`, computed by `compute` when there
    /// is none, without a stampede: while one request computes a missing
    /// entry the others wait for it (on an error the next one tries), and
    /// an entry past its age is computed again by one request while the
    /// rest are still answered with it (what ages is only the download
    /// counts it shows). An entry of another generation is never served.
    pub async fn get_or_compute<E, F>(
        &self,
        generation: i64,
        key: K,
        compute: impl FnOnce() -> F,
    ) -> Result<V, E>
    where
        F: Future<Output = Result<V, E>>,
    {
        self.observe(generation);
        // Boxed: a computation's database reads are futures of kilobytes,
        // and inline they would size (and be copied with) every request's
        // future, the hits' too.
        let compute = || Box::pin(compute());
        match self.entries.get_value_or_guard_async(&key).await {
            Ok(entry) if entry.generation == generation => {
                let fresh = self.max_age.is_none_or(|age| entry.at.elapsed() < age);
                if fresh || entry.refreshing.swap(true, Ordering::AcqRel) {
                    return Ok(entry.value);
                }
                match compute().await {
                    Ok(value) => {
                        self.put(generation, key, value.clone());
                        Ok(value)
                    }
                    Err(e) => {
                        entry.refreshing.store(false, Ordering::Release);
                        Err(e)
                    }
                }
            }
            // Kept at another generation between the clear and now: this
            // request's own answer, not kept.
            Ok(_) => compute().await,
            Err(guard) => {
                let value = compute().await?;
                if self.generation.load(Ordering::Acquire) == generation {
                    // Fails only when the entry was cleared meanwhile.
                    let _ = guard.insert(Entry::new(generation, value.clone()));
                }
                Ok(value)
            }
        }
    }
}

/// Rendered records and pages.
pub type RenderedCache = GenerationCache<RenderedKey, Rendered>;

pub fn rendered_cache() -> RenderedCache {
    GenerationCache::new(4_096, RENDERED_BYTES, Some(RENDERED_MAX_AGE))
}

/// The strong `ETag` of a body: its quoted SHA-256.
pub fn etag_of(body: &[u8]) -> String {
    use sha2::{Digest, Sha256};
    format!("\"{}\"", hex::encode(Sha256::digest(body)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn body(text: &str) -> Rendered {
        Rendered::new(Bytes::from(text.to_owned()))
    }

    fn key(name: &str) -> RenderedKey {
        RenderedKey::Page(name.to_owned())
    }

    #[test]
    fn an_entry_is_served_only_at_its_generation() {
        let cache = GenerationCache::new(16, 1 << 20, None);
        cache.put(3, key("a"), body("at 3"));
        assert_eq!(cache.get(3, &key("a")).unwrap().body, "at 3");
        // A newer generation empties the cache...
        assert!(cache.get(4, &key("a")).is_none());
        // ...and a value computed at an older one is not kept.
        cache.put(3, key("a"), body("late"));
        assert!(cache.get(4, &key("a")).is_none());
        assert!(cache.get(3, &key("a")).is_none());
        cache.put(4, key("a"), body("at 4"));
        assert_eq!(cache.get(4, &key("a")).unwrap().body, "at 4");
    }

    #[test]
    fn an_entry_past_its_age_is_not_served() {
        let cache = GenerationCache::new(16, 1 << 20, Some(Duration::ZERO));
        cache.put(1, key("a"), body("x"));
        assert!(cache.get(1, &key("a")).is_none());
    }

    #[test]
    fn the_cache_holds_no_more_than_its_weight() {
        let cache = GenerationCache::new(16, 10_000, None);
        for i in 0..100 {
            cache.put(1, key(&i.to_string()), body(&"x".repeat(1_000)));
        }
        let kept = (0..100)
            .filter(|i| cache.get(1, &key(&i.to_string())).is_some())
            .count();
        assert!((1..=10).contains(&kept), "{kept} entries of 1,064 each");
    }

    #[tokio::test]
    async fn one_request_computes_while_the_others_wait_or_get_the_aged_entry() {
        let cache = Arc::new(GenerationCache::new(
            16,
            1 << 20,
            Some(Duration::from_millis(50)),
        ));
        let computed = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let get = |text: &'static str| {
            let (cache, computed) = (Arc::clone(&cache), Arc::clone(&computed));
            tokio::spawn(async move {
                cache
                    .get_or_compute(1, key("a"), || async {
                        computed.fetch_add(1, Ordering::SeqCst);
                        tokio::time::sleep(Duration::from_millis(20)).await;
                        Ok::<_, ()>(body(text))
                    })
                    .await
                    .unwrap()
                    .body
            })
        };
        let first: Vec<_> = (0..8).map(|_| get("one")).collect();
        for answer in first {
            assert_eq!(answer.await.unwrap(), "one");
        }
        assert_eq!(computed.load(Ordering::SeqCst), 1, "a stampede");
        // Past its age: one request computes it again, the rest are
        // answered with the aged entry without waiting.
        tokio::time::sleep(Duration::from_millis(60)).await;
        let second: Vec<_> = (0..8).map(|_| get("two")).collect();
        let mut answers = Vec::new();
        for answer in second {
            answers.push(answer.await.unwrap());
        }
        assert_eq!(computed.load(Ordering::SeqCst), 2);
        assert!(answers.contains(&Bytes::from("two")) && answers.contains(&Bytes::from("one")));
        assert_eq!(cache.get(1, &key("a")).unwrap().body, "two");
    }

    #[test]
    fn the_etag_is_the_quoted_sha256_of_the_body() {
        assert_eq!(
            body("hello").etag,
            "\"2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824\""
        );
    }
}
