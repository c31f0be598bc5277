//! What reads answer, kept in memory and trusted only at the registry
//! generations it is known to be valid at (see `resolve::IndexCache`,
//! which reads the generation for every request): records, catalog pages
//! and where a version's container is. Every change a record or page shows
//! (a publish, yank, owner, key revocation, protocol, backfill) bumps the
//! generation in its transaction (migration 0023), so a cached answer is
//! never older than the request. Download counts are the one exception:
//! they reach the database in batches every few seconds anyway, so an
//! answer that shows them is kept at most that long.
//!
//! A move of the generation drops only what it changed: the same
//! transaction writes what it changed to the changes journal (migration
//! 0031), the index cache reads that once per move and records it here
//! ([`ChangeHistory`]), and each key says which changes it shows
//! ([`Scoped`]). So a yank of one package leaves every other package's
//! answers cached, on every replica. A move the history cannot account
//! for (the journal pruned past it, a bump without a journal row) drops
//! everything, as every move did before.

use std::{
    collections::{HashMap, HashSet, VecDeque},
    hash::Hash,
    sync::{
        Arc, RwLock,
        atomic::{AtomicBool, AtomicI64, Ordering},
    },
    time::{Duration, Instant},
};

use agentlang_core::{Kind, Version};
use bytes::Bytes;
use store::changes::Change;

use crate::{
    ServiceError, mcp::query::ListQuery, metrics::CacheCounters, search::query::SearchQuery,
};

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

/// What a move of the registry generation changed, as the changes journal
/// says (names normalized).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Changes {
    everything: bool,
    /// Packages whose own facts changed: versions, yanks, owners, signers.
    packages: HashMap<Kind, HashSet<String>>,
    /// Tools whose list of dependent versions changed.
    dependents: HashMap<Kind, HashSet<String>>,
}

impl Changes {
    /// Anything may have changed.
    pub fn everything() -> Self {
        Self {
            everything: true,
            ..Self::default()
        }
    }

    /// The journal's rows of one move.
    pub fn from_journal(rows: impl IntoIterator<Item = Change>) -> Self {
        let mut changes = Self::default();
        for row in rows {
            match row {
                Change::Everything => return Self::everything(),
                Change::Package(kind, name) => {
                    changes.packages.entry(kind).or_default().insert(name);
                }
                Change::Dependents(kind, name) => {
                    changes.dependents.entry(kind).or_default().insert(name);
                }
                // Only answers listing many packages show it, and those
                // are dropped at every move.
                Change::Listings => {}
            }
        }
        changes
    }

    pub fn is_everything(&self) -> bool {
        self.everything
    }

    /// Whether the package's own facts may have changed.
    pub fn package(&self, kind: Kind, normalized: &str) -> bool {
        self.everything
            || self
                .packages
                .get(&kind)
                .is_some_and(|names| names.contains(normalized))
    }

    /// Whether the versions depending on the package may have changed.
    pub fn dependents(&self, kind: Kind, normalized: &str) -> bool {
        self.everything
            || self
                .dependents
                .get(&kind)
                .is_some_and(|names| names.contains(normalized))
    }

    /// Whether any package of `kind` may have changed.
    pub fn any_package(&self, kind: Kind) -> bool {
        self.everything || self.packages.get(&kind).is_some_and(|n| !n.is_empty())
    }

    /// The packages of `kind` the journal named (not meaningful when
    /// [`Changes::is_everything`]).
    pub fn packages_of(&self, kind: Kind) -> impl Iterator<Item = &str> {
        self.packages
            .get(&kind)
            .into_iter()
            .flatten()
            .map(String::as_str)
    }

    /// Every package the journal named, with its kind.
    pub fn packages(&self) -> impl Iterator<Item = (Kind, &str)> {
        self.packages
            .iter()
            .flat_map(|(kind, names)| names.iter().map(|name| (*kind, name.as_str())))
    }
}

/// The moves of the registry generation one process has seen, each with
/// what it changed, oldest first and contiguous (each starts where the one
/// before ended): written by the index cache, the one reader of the
/// journal, and read by every [`GenerationCache`] to tell whether an entry
/// is still valid at a newer generation.
#[derive(Debug, Default)]
pub struct ChangeHistory {
    moves: RwLock<VecDeque<Move>>,
}

#[derive(Debug)]
struct Move {
    /// The move covers the generations after `from`, up to `to`.
    from: i64,
    to: i64,
    changes: Arc<Changes>,
}

/// Moves a history keeps: entries last checked before the oldest are
/// dropped when next asked for. Under a change a second, minutes.
const MAX_MOVES: usize = 1_024;

impl ChangeHistory {
    fn moves(&self) -> std::sync::RwLockReadGuard<'_, VecDeque<Move>> {
        self.moves
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Records the move from `from` to `to`. A move that does not start
    /// where the last one ended starts the history again.
    pub fn record(&self, from: i64, to: i64, changes: Arc<Changes>) {
        let mut moves = self
            .moves
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if moves.back().is_some_and(|last| last.to != from) {
            moves.clear();
        }
        if moves.len() >= MAX_MOVES {
            moves.pop_front();
        }
        moves.push_back(Move { from, to, changes });
    }

    /// Whether `shown` holds of what any move in (`after`, `through`]
    /// changed; also when the history does not cover that span, since
    /// then nothing can be told.
    pub fn touched(&self, after: i64, through: i64, shown: impl Fn(&Changes) -> bool) -> bool {
        if through <= after {
            return false;
        }
        let moves = self.moves();
        if moves.back().is_none_or(|last| last.to < through) {
            return true;
        }
        for step in moves.iter().rev().filter(|step| step.from < through) {
            if shown(&step.changes) {
                return true;
            }
            if step.from <= after {
                return false;
            }
        }
        true
    }

    /// What the moves in (`after`, `through`] changed, when the history
    /// covers them.
    fn between(&self, after: i64, through: i64) -> Option<Vec<Arc<Changes>>> {
        let moves = self.moves();
        if moves.back().is_none_or(|last| last.to < through) {
            return None;
        }
        let mut span = Vec::new();
        for step in moves.iter().rev().filter(|step| step.from < through) {
            span.push(Arc::clone(&step.changes));
            if step.from <= after {
                return Some(span);
            }
        }
        None
    }
}

/// What a cached answer shows, in terms of the changes journal.
pub trait Scoped {
    /// Whether `changes` may have changed the answer.
    fn changed_by(&self, changes: &Changes) -> bool;

    /// The cache it is counted under in the metrics.
    fn cache_name(&self) -> &'static str;
}

/// What a rendered answer is of. Names are normalized, so every spelling
/// of a package shares one entry.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum RenderedKey {
    /// `GET /api/v1/{kind}/{name}`.
    PackageRecord(Kind, String),
    /// `GET /api/v1/{kind}/{name}/{version}`.
    VersionRecord(Kind, String, Version),
    /// A package's catalog page as an anonymous visitor sees it, at a
    /// version (`None`: the one that represents the package).
    PackagePage(Kind, String, Option<Version>),
    /// An agent's signed A2A Agent Card, of a version (`None`: the newest
    /// version not yanked).
    AgentCard(String, Option<Version>),
    /// `GET /api/v1/search`.
    Search(SearchQuery),
    /// `GET /.well-known/agent-skills/index.json`.
    SkillsIndex,
    /// `GET /v0.1/servers`.
    McpServers(ListQuery),
    /// `GET /v0.1/servers/{name}/versions` (`version: None`) and
    /// `.../versions/{version}`, by the tool's normalized name.
    McpServer {
        name: String,
        version: Option<String>,
        include_deleted: bool,
    },
}

impl Scoped for RenderedKey {
    fn changed_by(&self, changes: &Changes) -> bool {
        match self {
            Self::PackageRecord(kind, name) | Self::VersionRecord(kind, name, _) => {
                changes.package(*kind, name)
            }
            // A tool's page lists the versions that use it; an agent's
            // checks its protocols against the protocol packages.
            Self::PackagePage(kind, name, _) => {
                changes.package(*kind, name)
                    || changes.dependents(*kind, name)
                    || (*kind == Kind::Agent && changes.any_package(Kind::Protocol))
            }
            // What a card says is its version's; which version the newest
            // is, the package's.
            Self::AgentCard(name, _) => changes.package(Kind::Agent, name),
            // Results show many packages.
            Self::Search(_) => true,
            Self::SkillsIndex => changes.any_package(Kind::Skill),
            // MCP servers are tools: a list shows many of them.
            Self::McpServers(_) => changes.any_package(Kind::Tool),
            Self::McpServer { name, .. } => changes.package(Kind::Tool, name),
        }
    }

    fn cache_name(&self) -> &'static str {
        match self {
            Self::PackageRecord(..) => "package_records",
            Self::VersionRecord(..) => "version_records",
            Self::PackagePage(..) => "package_pages",
            Self::AgentCard(..) => "agent_cards",
            Self::Search(_) => "searches",
            Self::SkillsIndex => "skills_index",
            Self::McpServers(_) | Self::McpServer { .. } => "mcp_servers",
        }
    }
}

/// Where a version's container is (`downloads::DownloadTargets`): only the
/// package's own changes (a deletion) move it.
impl Scoped for (Kind, String, Version) {
    fn changed_by(&self, changes: &Changes) -> bool {
        changes.package(self.0, &self.1)
    }

    fn cache_name(&self) -> &'static str {
        "download_targets"
    }
}

#[derive(Clone)]
struct Entry<V> {
    /// The newest generation the entry is known to be valid at: where it
    /// was computed, then every newer one checked against the history.
    checked: Arc<AtomicI64>,
    at: Instant,
    value: V,
    /// Set by the one request that renders the entry again once it is past
    /// its age; the others keep being answered with it meanwhile.
    refreshing: Arc<AtomicBool>,
}

impl<V> Entry<V> {
    fn new(generation: i64, value: V) -> Self {
        Self {
            checked: Arc::new(AtomicI64::new(generation)),
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

/// Values computed at a registry generation, each served while nothing it
/// shows has changed (with a [`ChangeHistory`]; without one, while the
/// generation stands) and, with a maximum age, no longer than that.
/// Bounded by weight; the least useful entries go first (quick_cache's
/// policy).
pub struct GenerationCache<K, V> {
    /// The newest generation seen.
    generation: AtomicI64,
    max_age: Option<Duration>,
    entries: quick_cache::sync::Cache<K, Entry<V>, ByWeight>,
    /// What each move changed; `None`: a newer generation empties the cache.
    history: Option<Arc<ChangeHistory>>,
    counters: CacheCounters,
}

impl<K, V> std::fmt::Debug for GenerationCache<K, V> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GenerationCache")
            .field("generation", &self.generation.load(Ordering::Relaxed))
            .finish_non_exhaustive()
    }
}

impl<K: Eq + Hash + Clone + Scoped, V: Weight + Clone> GenerationCache<K, V> {
    /// Room for `capacity` of weight, about `items` entries.
    pub fn new(items: usize, capacity: u64, max_age: Option<Duration>) -> Self {
        Self {
            generation: AtomicI64::new(i64::MIN),
            max_age,
            entries: quick_cache::sync::Cache::with_weighter(items, capacity, ByWeight),
            history: None,
            counters: CacheCounters::default(),
        }
    }

    /// Keeps entries across the moves `history` records that do not change
    /// them, and counts lookups into `counters`.
    #[must_use]
    pub fn tracking(mut self, history: Arc<ChangeHistory>, counters: &CacheCounters) -> Self {
        self.history = Some(history);
        self.counters = counters.clone();
        self
    }

    /// Moves to `generation` if it is newer, dropping what the move
    /// changed (everything, when that cannot be told). What is dropped here
    /// is computed again by one request while the others wait; an entry
    /// kept late by a computation that began before the move is caught when
    /// read ([`Self::valid`]).
    fn observe(&self, generation: i64) {
        let seen = self.generation.fetch_max(generation, Ordering::AcqRel);
        if seen >= generation {
            return;
        }
        let span = self
            .history
            .as_ref()
            .and_then(|history| history.between(seen, generation));
        let Some(span) = span else {
            self.entries.clear();
            return;
        };
        self.entries.retain(|key, entry| {
            if span.iter().any(|changes| key.changed_by(changes)) {
                return false;
            }
            // Valid at `seen` and untouched since: valid now.
            if entry.checked.load(Ordering::Acquire) >= seen {
                entry.checked.fetch_max(generation, Ordering::AcqRel);
            }
            true
        });
    }

    /// Whether `entry` may answer a request at `generation`: it is valid
    /// there or at a newer generation (never older than the request).
    fn valid(&self, key: &K, entry: &Entry<V>, generation: i64) -> bool {
        let checked = entry.checked.load(Ordering::Acquire);
        if generation <= checked {
            return true;
        }
        let Some(history) = &self.history else {
            return false;
        };
        if history.touched(checked, generation, |changes| key.changed_by(changes)) {
            return false;
        }
        entry.checked.fetch_max(generation, Ordering::AcqRel);
        true
    }

    /// The value computed at `generation` (or kept valid since), if still
    /// young enough.
    pub fn get(&self, generation: i64, key: &K) -> Option<V> {
        self.observe(generation);
        let found = self.entries.get(key).filter(|entry| {
            let fresh = self.max_age.is_none_or(|age| entry.at.elapsed() < age);
            fresh && self.valid(key, entry, generation)
        });
        self.counters.count(key.cache_name(), found.is_some());
        found.map(|entry| entry.value)
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
    /// counts it shows). An entry a change since has touched is never
    /// served.
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
        let name = key.cache_name();
        let mut dropped_stale = false;
        loop {
            match self.entries.get_value_or_guard_async(&key).await {
                Ok(entry) if self.valid(&key, &entry, generation) => {
                    let fresh = self.max_age.is_none_or(|age| entry.at.elapsed() < age);
                    if fresh || entry.refreshing.swap(true, Ordering::AcqRel) {
                        self.counters.count(name, true);
                        return Ok(entry.value);
                    }
                    self.counters.count(name, false);
                    return match compute().await {
                        Ok(value) => {
                            self.put(generation, key, value.clone());
                            Ok(value)
                        }
                        Err(e) => {
                            entry.refreshing.store(false, Ordering::Release);
                            Err(e)
                        }
                    };
                }
                // Kept by a computation that began before a change it
                // shows: dropped (unless replaced meanwhile), so that one
                // request computes it again while the others wait.
                Ok(stale) if !dropped_stale => {
                    self.entries
                        .remove_if(&key, |e| Arc::ptr_eq(&e.checked, &stale.checked));
                    dropped_stale = true;
                }
                // Stale again at once: this request's own answer, not kept.
                Ok(_) => {
                    self.counters.count(name, false);
                    return compute().await;
                }
                Err(guard) => {
                    self.counters.count(name, false);
                    let value = compute().await?;
                    if self.generation.load(Ordering::Acquire) == generation {
                        // Fails only when the entry was cleared meanwhile.
                        let _ = guard.insert(Entry::new(generation, value.clone()));
                    }
                    return Ok(value);
                }
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
        RenderedKey::PackageRecord(Kind::Tool, name.to_owned())
    }

    fn tool_changed(name: &str) -> Arc<Changes> {
        Arc::new(Changes::from_journal([Change::Package(
            Kind::Tool,
            name.to_owned(),
        )]))
    }

    fn tracking(history: &Arc<ChangeHistory>) -> RenderedCache {
        GenerationCache::new(16, 1 << 20, None)
            .tracking(Arc::clone(history), &CacheCounters::default())
    }

    #[test]
    fn a_move_drops_only_what_it_changed() {
        let history = Arc::new(ChangeHistory::default());
        let cache = tracking(&history);
        history.record(0, 1, Arc::new(Changes::everything()));
        cache.put(1, key("a"), body("a at 1"));
        cache.put(1, key("b"), body("b at 1"));
        let search = RenderedKey::Search(SearchQuery::parse(None, None, None, None, None).unwrap());
        cache.put(1, search.clone(), body("many at 1"));
        let page = |kind, name: &str| RenderedKey::PackagePage(kind, name.to_owned(), None);
        cache.put(1, page(Kind::Tool, "b"), body("b's page"));
        cache.put(1, page(Kind::Tool, "c"), body("c's page"));
        cache.put(1, page(Kind::Agent, "d"), body("d's page"));

        history.record(1, 2, tool_changed("a"));
        assert!(cache.get(2, &key("a")).is_none());
        assert_eq!(cache.get(2, &key("b")).unwrap().body, "b at 1");
        assert_eq!(
            cache.get(2, &page(Kind::Tool, "b")).unwrap().body,
            "b's page"
        );
        // Search results list many packages: any move drops them.
        assert!(cache.get(2, &search).is_none());

        // A publish that depends on c changes c's page (its dependents),
        // not c's record; a protocol package changes every agent's page.
        history.record(
            2,
            3,
            Arc::new(Changes::from_journal([
                Change::Dependents(Kind::Tool, "c".to_owned()),
                Change::Package(Kind::Protocol, "p".to_owned()),
            ])),
        );
        assert!(cache.get(3, &page(Kind::Tool, "c")).is_none());
        assert!(cache.get(3, &page(Kind::Agent, "d")).is_none());
        assert_eq!(cache.get(3, &key("b")).unwrap().body, "b at 1");
        assert_eq!(
            cache.get(3, &page(Kind::Tool, "b")).unwrap().body,
            "b's page"
        );

        // What the journal cannot tell drops everything.
        history.record(3, 4, Arc::new(Changes::everything()));
        assert!(cache.get(4, &key("b")).is_none());
    }

    #[test]
    fn an_entry_kept_late_is_checked_when_read() {
        let history = Arc::new(ChangeHistory::default());
        let cache = tracking(&history);
        history.record(0, 1, Arc::new(Changes::everything()));
        history.record(1, 2, tool_changed("a"));
        history.record(2, 3, tool_changed("c"));
        // Computed at 1 and kept after the cache moved past 1: what
        // `get_or_compute` does when a move lands while it computes.
        let late = Entry::new(1, body("a at 1"));
        assert!(!cache.valid(&key("a"), &late, 3));
        let untouched = Entry::new(1, body("b at 1"));
        assert!(cache.valid(&key("b"), &untouched, 3));
        assert_eq!(untouched.checked.load(Ordering::Relaxed), 3);
        // Checked before a move that changed everything.
        let ancient = Entry::new(-5, body("b long ago"));
        assert!(!cache.valid(&key("b"), &ancient, 3));
        // A move the history has not recorded yet: not served.
        assert!(!cache.valid(&key("b"), &untouched, 4));
    }

    #[test]
    fn a_history_that_skips_a_move_starts_again() {
        let history = ChangeHistory::default();
        history.record(1, 2, tool_changed("a"));
        history.record(2, 4, tool_changed("b"));
        let about = |name: &'static str| move |c: &Changes| c.package(Kind::Tool, name);
        assert!(history.touched(1, 4, about("a")));
        assert!(!history.touched(2, 4, about("a")));
        assert!(!history.touched(1, 2, about("b")));
        assert!(
            history.touched(3, 4, about("b")),
            "4 came in one move from 2"
        );
        // Not contiguous: what happened between 4 and 7 is unknown.
        history.record(7, 8, tool_changed("c"));
        assert!(history.touched(2, 8, about("a")));
        assert!(!history.touched(7, 8, about("a")));
        assert!(history.touched(6, 8, about("a")));
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
