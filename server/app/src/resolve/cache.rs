//! What resolution keeps between requests: index entries, model rows,
//! resolutions, rendered answers and index documents, and the shared reads
//! of the registry generation they are valid at.
//!
//! When a read finds a newer generation, one caller reads from the changes
//! journal what the generations since changed (`store::changes`) and drops
//! only that: the changed packages' index entries and documents, and every
//! resolution whose solve looked up one of them (found, rejected or
//! unknown: [`ToolReads`]). Answers over many packages (categories, whole
//! resolve answers) go at every move; models only when everything does.
//! The move is recorded in a [`ChangeHistory`] the other caches
//! (`crate::cache`) check their entries against.

use std::{
    collections::{BTreeMap, HashMap, HashSet},
    sync::{Arc, Mutex},
    time::Instant,
};

use agentlang_core::{
    Kind, PackageName,
    lockfile::LockedTool,
    resolve::{Request, VersionEntry},
};
use store::{Db, interfaces::ProvidingVersion, models::ModelRecord};

use crate::{
    ServiceError,
    cache::{ChangeHistory, Changes},
    metrics::CacheCounters,
    solvers::SolverPool,
};

pub(super) type Entries = Option<Arc<Vec<VersionEntry>>>;

/// A rendered lock, and the versions its request's `exclude_newer` held
/// back (sorted by name and version).
#[derive(Debug, Clone)]
pub struct ResolveAnswer {
    pub body: bytes::Bytes,
    pub held_back: Arc<[agentlang_core::resolve::HeldBack]>,
}
pub(super) type LockTools = BTreeMap<PackageName, LockedTool>;
/// The normalized names of every tool a solve looked up: what its
/// resolution depends on.
pub(super) type ToolReads = HashSet<String>;

/// The generation of caches that have read none yet.
const UNREAD: i64 = i64::MIN;

#[derive(Debug)]
struct CacheState {
    generation: i64,
    /// The whole models catalog (a few dozen rows), read once per
    /// generation.
    models: Option<Arc<HashMap<String, ModelRecord>>>,
    /// Successful resolutions by request, as the lock's `tools:` section,
    /// with the tools each solve looked up. A request is small and its
    /// resolution a pure function of those tools' index entries.
    resolutions: HashMap<Request, Resolved>,
    /// Whole answers by exact request, for the second `rendered_second`
    /// (the lock's `resolved_at`): identical requests within a second get
    /// identical bytes, so they are rendered once.
    rendered: HashMap<RenderKey, ResolveAnswer>,
    rendered_second: i64,
    rendered_bytes: usize,
    /// Index documents (`GET /api/v1/index/..`) with their ETag, by kind and
    /// normalized name, at most [`MAX_INDEX_BYTES`]; the least used go
    /// first. (A map that stopped admitting once full kept the first
    /// packages read after a generation and never the hot ones after.)
    index_bodies: IndexBodies,
    /// The catalog's category filter: every category a live version names.
    categories: Option<Vec<String>>,
    /// Every live tool version that provides an interface: read by the
    /// provider pick of every resolve that names a tool, so once per
    /// generation that changed no tool.
    providing: Option<Arc<Vec<ProvidingVersion>>>,
}

impl Default for CacheState {
    fn default() -> Self {
        Self {
            generation: UNREAD,
            models: None,
            resolutions: HashMap::new(),
            rendered: HashMap::new(),
            rendered_second: 0,
            rendered_bytes: 0,
            index_bodies: index_bodies(),
            categories: None,
            providing: None,
        }
    }
}

#[derive(Debug)]
struct Resolved {
    tools: Arc<LockTools>,
    reads: ToolReads,
}

impl CacheState {
    /// Drops what `changes` may have changed.
    fn drop_changed(&mut self, changes: &Changes) {
        // Over many packages: whole answers (kept for a second anyway) and
        // the categories every live version names.
        self.rendered.clear();
        self.rendered_bytes = 0;
        self.categories = None;
        if changes.is_everything() || changes.any_package(Kind::Tool) {
            self.providing = None;
        }
        if changes.is_everything() {
            self.models = None;
            self.resolutions.clear();
            self.index_bodies.clear();
            return;
        }
        for (kind, name) in changes.packages() {
            self.index_bodies.remove(&(kind, name.to_owned()));
        }
        if changes.any_package(Kind::Tool) {
            self.resolutions.retain(|_, resolved| {
                !changes
                    .packages_of(Kind::Tool)
                    .any(|name| resolved.reads.contains(name))
            });
        }
    }
}

type IndexBodies =
    quick_cache::unsync::Cache<(Kind, String), (bytes::Bytes, String), IndexBodyWeight>;

fn index_bodies() -> IndexBodies {
    // The estimate sizes the table up front: about 2 KiB a document.
    IndexBodies::with_weighter(
        MAX_INDEX_BYTES / 2048,
        MAX_INDEX_BYTES as u64,
        IndexBodyWeight,
    )
}

/// An index document's bytes, with its ETag and name.
#[derive(Debug, Clone, Copy)]
struct IndexBodyWeight;

impl quick_cache::Weighter<(Kind, String), (bytes::Bytes, String)> for IndexBodyWeight {
    fn weight(&self, key: &(Kind, String), (body, etag): &(bytes::Bytes, String)) -> u64 {
        (body.len() + etag.len() + key.1.len()) as u64
    }
}

/// Index entries at one generation: normalized tool name to its versions;
/// `None` remembers an unknown name (creating a package publishes a
/// version, which bumps the generation). Apart from [`CacheState`], under
/// a lock readers share: every solve looks each of its packages up here,
/// and behind the one lock of everything else (held by handlers hashing
/// request bodies and resolutions) solver threads slept on it under a load
/// of warm first-time resolves (`deploy/bench/RESULTS.md`, Decisions).
#[derive(Debug)]
struct ToolCache {
    generation: i64,
    entries: HashMap<String, Entries>,
    /// What `entries` holds, by [`tool_bytes`].
    bytes: usize,
}

impl Default for ToolCache {
    fn default() -> Self {
        Self {
            generation: UNREAD,
            entries: HashMap::new(),
            bytes: 0,
        }
    }
}

impl ToolCache {
    /// Takes out what `changes` may have changed, to be dropped once the
    /// lock is released.
    fn take_changed(&mut self, changes: &Changes) -> HashMap<String, Entries> {
        if changes.is_everything() {
            self.bytes = 0;
            return std::mem::take(&mut self.entries);
        }
        let taken: HashMap<String, Entries> = changes
            .packages_of(Kind::Tool)
            .filter_map(|name| self.entries.remove_entry(name))
            .collect();
        for (name, entries) in &taken {
            self.bytes = self.bytes.saturating_sub(tool_bytes(name, entries));
        }
        taken
    }

    /// Adds a package's entries; past [`MAX_CACHED_TOOL_BYTES`] the map is
    /// emptied first (a catalog larger than that reads more from the
    /// database, and holds no more memory).
    fn put(&mut self, normalized: String, entries: Entries) {
        let bytes = tool_bytes(&normalized, &entries);
        if let Some(old) = self.entries.remove(&normalized) {
            self.bytes = self.bytes.saturating_sub(tool_bytes(&normalized, &old));
        }
        if self.bytes + bytes > MAX_CACHED_TOOL_BYTES {
            self.entries.clear();
            self.bytes = 0;
        }
        self.bytes += bytes;
        self.entries.insert(normalized, entries);
    }
}

/// About what a package's cached entries take in memory: each version's
/// entry and text, and each dependency's name and requirement. An
/// estimate from sizes, not the allocator's count, but proportional to it.
fn tool_bytes(normalized: &str, entries: &Entries) -> usize {
    const MAP_SLOT: usize = 64;
    const REQUIREMENT: usize = 96;
    let versions = entries.as_deref().map_or(0, |versions| {
        versions
            .iter()
            .map(|v| {
                let semver = v.version.semver();
                std::mem::size_of::<VersionEntry>()
                    + semver.pre.len()
                    + semver.build.len()
                    + v.dependencies
                        .keys()
                        .map(|name| MAP_SLOT + REQUIREMENT + name.as_str().len())
                        .sum::<usize>()
            })
            .sum()
    });
    MAP_SLOT + normalized.len() + versions
}

/// An exact resolve request over HTTP: the answer is a function of this, the
/// generation and the second.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct RenderKey {
    /// The request's media type, normalized (`application/json`, ...).
    pub content_type: &'static str,
    pub json_answer: bool,
    pub body: bytes::Bytes,
}

/// Index entries, model rows and resolutions at the registry generation
/// last moved to, and what each move changed.
#[derive(Debug)]
pub struct IndexCache {
    state: Mutex<CacheState>,
    tools: std::sync::RwLock<ToolCache>,
    generation_reads: GenerationReads,
    /// The newest generation any read has returned.
    newest: std::sync::atomic::AtomicI64,
    /// Held by the one caller moving the caches to a newer generation (a
    /// read of the journal): one query per move, not one per caller.
    moving: tokio::sync::Mutex<()>,
    /// The moves so far, for every other cache ([`crate::cache`]).
    history: Arc<ChangeHistory>,
    counters: CacheCounters,
    /// [`SOLVERS_PER_CORE`] threads per core: solvers run in arrival order,
    /// each to its end, rather than all at once sharing the cores, where
    /// every request in flight would take as long as the slowest (see
    /// [`solve`]).
    pub(super) solvers: SolverPool,
}

/// Solver threads per core. When solves took a semaphore's slots instead,
/// two per core rather than one raised the rate of warm first-time
/// resolves; with the threads, two measured at least as well as one
/// (`deploy/bench/RESULTS.md`, Decisions).
const SOLVERS_PER_CORE: usize = 2;

/// Bytes of cached index entries ([`tool_bytes`]); past it the map is
/// cleared. Bounded in bytes, not packages: at 100,000 tools of 20
/// versions, 50,000 cached packages took most of 800 MiB after 1,000
/// first-time resolves (`deploy/bench/RESULTS.md`, Decisions).
const MAX_CACHED_TOOL_BYTES: usize = 64 * 1024 * 1024;

/// Cached resolutions per generation; past it the map is cleared. A
/// resolution of a typical agent holds tens of tools: a few MiB in all.
const MAX_CACHED_RESOLUTIONS: usize = 4_096;

/// Bytes of rendered answers kept for one second; past it none are added.
const MAX_RENDERED_BYTES: usize = 8 * 1024 * 1024;

/// Bytes of index documents kept; past it the least used go first.
const MAX_INDEX_BYTES: usize = 32 * 1024 * 1024;

/// Strict: every generation read a caller uses started after it arrived
/// (see [`GenerationReads`]).
impl Default for IndexCache {
    fn default() -> Self {
        Self::with_freshness_window(std::time::Duration::ZERO)
    }
}

impl IndexCache {
    /// Callers may use a generation read that started up to `window` before
    /// they arrived (never before this process's last write).
    pub fn with_freshness_window(window: std::time::Duration) -> Self {
        Self {
            state: Mutex::default(),
            tools: std::sync::RwLock::default(),
            generation_reads: GenerationReads::new(window),
            newest: std::sync::atomic::AtomicI64::new(0),
            moving: tokio::sync::Mutex::new(()),
            history: Arc::default(),
            counters: CacheCounters::default(),
            solvers: SolverPool::new(
                SOLVERS_PER_CORE
                    * std::thread::available_parallelism().map_or(1, std::num::NonZero::get),
            ),
        }
    }

    /// Counts lookups into `counters` (the registry's metrics).
    #[must_use]
    pub fn counting(mut self, counters: &CacheCounters) -> Self {
        self.counters = counters.clone();
        self
    }

    /// The moves of the generation this cache has made, each with what it
    /// changed: what the other caches keep their entries by.
    pub fn changes(&self) -> Arc<ChangeHistory> {
        Arc::clone(&self.history)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, CacheState> {
        // A panic while holding the lock leaves plain maps behind; reuse them.
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The database's current generation, with the caches moved to it if
    /// it is newer than theirs. A caller holding an older read than the
    /// caches' gets it back unchanged (its lookups miss; nothing it
    /// computes is kept).
    pub async fn current_generation(&self, db: &Db) -> Result<i64, ServiceError> {
        let generation = self.generation_reads.read(db).await?;
        self.newest
            .fetch_max(generation, std::sync::atomic::Ordering::Relaxed);
        if self.lock().generation < generation {
            // Boxed, as a miss is (see `GenerationCache::get_or_compute`):
            // rare, and its journal read would size every request's future.
            Box::pin(self.move_to(db, generation)).await?;
        }
        Ok(generation)
    }

    /// Moves to `generation`, dropping what the generations since the
    /// current one changed, as the journal says (everything, when it cannot
    /// tell or nothing was read before). The first caller reads the
    /// journal; the rest wait for it and find the move made.
    async fn move_to(&self, db: &Db, generation: i64) -> Result<(), ServiceError> {
        let _moving = self.moving.lock().await;
        let from = self.lock().generation;
        if from >= generation {
            return Ok(());
        }
        let changes = if from == UNREAD {
            Changes::everything()
        } else {
            Changes::from_journal(db.changes_between(from, generation).await?)
        };
        let changes = Arc::new(changes);
        self.history.record(from, generation, Arc::clone(&changes));
        let mut state = self.lock();
        // Under the state's lock, so both move to a generation together;
        // what is dropped is freed after both locks are released.
        let stale_tools = {
            let mut tools = self.tools_mut();
            tools.generation = generation;
            tools.take_changed(&changes)
        };
        state.drop_changed(&changes);
        state.generation = generation;
        drop(state);
        drop(stale_tools);
        Ok(())
    }

    /// The newest generation read so far, without reading it again: for
    /// caches of facts that never change once written, which only a
    /// deletion could make wrong (see `service::packages::find_download`).
    pub fn newest_generation(&self) -> i64 {
        self.newest.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// The categories in use at this generation, when read before.
    pub fn categories(&self, generation: i64) -> Option<Vec<String>> {
        let state = self.lock();
        (state.generation == generation)
            .then(|| state.categories.clone())
            .flatten()
    }

    pub fn put_categories(&self, generation: i64, categories: Vec<String>) {
        let mut state = self.lock();
        if state.generation == generation {
            state.categories = Some(categories);
        }
    }

    /// The tool versions providing interfaces at this generation, when
    /// read before.
    pub fn providing(&self, generation: i64) -> Option<Arc<Vec<ProvidingVersion>>> {
        let state = self.lock();
        (state.generation == generation)
            .then(|| state.providing.clone())
            .flatten()
    }

    pub fn put_providing(&self, generation: i64, providing: Arc<Vec<ProvidingVersion>>) {
        let mut state = self.lock();
        if state.generation == generation {
            state.providing = Some(providing);
        }
    }

    /// A package's index document and ETag at this generation.
    pub fn index_body(
        &self,
        generation: i64,
        kind: Kind,
        normalized: &str,
    ) -> Option<(bytes::Bytes, String)> {
        let state = self.lock();
        let found = (state.generation == generation)
            .then(|| state.index_bodies.get(&(kind, normalized.to_owned())))
            .flatten()
            .cloned();
        drop(state);
        self.counters.count("index_documents", found.is_some());
        found
    }

    pub fn put_index_body(
        &self,
        generation: i64,
        kind: Kind,
        normalized: String,
        body: bytes::Bytes,
        etag: String,
    ) {
        let mut state = self.lock();
        if state.generation == generation {
            state.index_bodies.insert((kind, normalized), (body, etag));
        }
    }

    /// The answer rendered for `key` at this generation and second.
    pub fn rendered(&self, generation: i64, second: i64, key: &RenderKey) -> Option<ResolveAnswer> {
        let state = self.lock();
        if state.generation != generation || state.rendered_second != second {
            return None;
        }
        state.rendered.get(key).cloned()
    }

    pub fn put_rendered(
        &self,
        generation: i64,
        second: i64,
        key: RenderKey,
        answer: ResolveAnswer,
    ) {
        let mut state = self.lock();
        if state.generation != generation || second < state.rendered_second {
            return;
        }
        if state.rendered_second != second {
            state.rendered.clear();
            state.rendered_bytes = 0;
            state.rendered_second = second;
        }
        let size = key.body.len() + answer.body.len();
        if state.rendered_bytes + size <= MAX_RENDERED_BYTES {
            state.rendered_bytes += size;
            state.rendered.insert(key, answer);
        }
    }

    fn tools_read(&self) -> std::sync::RwLockReadGuard<'_, ToolCache> {
        self.tools
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn tools_mut(&self) -> std::sync::RwLockWriteGuard<'_, ToolCache> {
        self.tools
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    pub(super) fn tool(&self, normalized: &str) -> Option<Entries> {
        self.tools_read().entries.get(normalized).cloned()
    }

    /// What the cache holds of each of `names`, read under one lock; names
    /// it does not hold are left out.
    pub(super) fn tools<'n>(
        &self,
        names: impl Iterator<Item = &'n str>,
    ) -> HashMap<&'n str, Entries> {
        let tools = self.tools_read();
        names
            .filter_map(|name| Some((name, tools.entries.get(name)?.clone())))
            .collect()
    }

    pub(super) fn put_tool(&self, generation: i64, normalized: String, entries: Entries) {
        let mut tools = self.tools_mut();
        // Data read at a newer generation is never labelled with an older
        // one here: only the current generation's map takes entries.
        if tools.generation == generation {
            tools.put(normalized, entries);
        }
    }

    pub(super) fn models(&self) -> Option<Arc<HashMap<String, ModelRecord>>> {
        self.lock().models.clone()
    }

    pub(super) fn put_models(&self, generation: i64, models: Arc<HashMap<String, ModelRecord>>) {
        let mut state = self.lock();
        if state.generation == generation {
            state.models = Some(models);
        }
    }

    pub(super) fn resolution(&self, generation: i64, request: &Request) -> Option<Arc<LockTools>> {
        let state = self.lock();
        let found = (state.generation == generation)
            .then(|| state.resolutions.get(request))
            .flatten()
            .map(|resolved| Arc::clone(&resolved.tools));
        drop(state);
        self.counters.count("resolutions", found.is_some());
        found
    }

    /// Keeps a resolution made at `generation` by a solve that looked up
    /// `reads`.
    pub(super) fn put_resolution(
        &self,
        generation: i64,
        request: Request,
        resolution: Arc<LockTools>,
        reads: ToolReads,
    ) {
        let mut state = self.lock();
        if state.generation == generation {
            if state.resolutions.len() >= MAX_CACHED_RESOLUTIONS {
                state.resolutions.clear();
            }
            state.resolutions.insert(
                request,
                Resolved {
                    tools: resolution,
                    reads,
                },
            );
        }
    }
}

/// Reads of the registry generation, shared by concurrent callers without
/// ever answering one with a value older than it may see.
///
/// A caller may use a read that started no earlier than its `since`: the
/// moment it arrived, less the configured freshness window, and never
/// before this process's last write (`db::last_local_write`), so a replica
/// always shows its own changes to its next request. Reads run one at a
/// time. A caller that finds a usable read finished, or in flight, takes
/// its value; otherwise it starts the next one, which every caller waiting
/// meanwhile shares. Under load one database round trip serves a whole
/// queue of requests; alone, a request costs one round trip.
///
/// With a window of zero a caller waits for a read that started after it
/// arrived: strict, but under load every request then waits one and a half
/// round trips, which in a saturated event loop is most of its time. A
/// millisecond lets most requests take the read just finished; a change
/// made through another replica then shows within that millisecond.
#[derive(Debug)]
struct GenerationReads {
    rounds: Mutex<Rounds>,
    /// The connection the reads use.
    connection: store::index::GenerationConnection,
    /// How long before a caller's arrival a usable read may have started.
    window: std::time::Duration,
    /// The newest finished read, published to every waiting caller.
    finished: tokio::sync::watch::Sender<Finished>,
}

#[derive(Debug, Default)]
struct Rounds {
    /// Whether a read is in flight, and since when.
    reading: Option<Instant>,
}

#[derive(Debug, Clone, Copy, Default)]
struct Finished {
    /// The newest read's start and the generation it saw (`None`: none yet).
    read: Option<(Instant, i64)>,
    /// Bumped when a read ends without a value (an error, or its caller
    /// gone), so waiters wake and one of them reads instead.
    abandoned: u64,
}

impl GenerationReads {
    fn new(window: std::time::Duration) -> Self {
        Self {
            rounds: Mutex::default(),
            connection: store::index::GenerationConnection::default(),
            window,
            finished: tokio::sync::watch::Sender::new(Finished::default()),
        }
    }
}

/// Marks the read in flight as over when its future ends or is dropped.
struct Reading<'a>(&'a GenerationReads, Option<(Instant, i64)>);

impl Drop for Reading<'_> {
    fn drop(&mut self) {
        self.0.rounds().reading = None;
        match self.1 {
            Some(read) => self.0.finished.send_modify(|f| {
                // Never replaced by an older read.
                if f.read.is_none_or(|(started, _)| started <= read.0) {
                    f.read = Some(read);
                }
            }),
            None => self.0.finished.send_modify(|f| f.abandoned += 1),
        }
    }
}

impl GenerationReads {
    fn rounds(&self) -> std::sync::MutexGuard<'_, Rounds> {
        self.rounds
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    async fn read(&self, db: &Db) -> Result<i64, ServiceError> {
        let mut finished = self.finished.subscribe();
        let arrived = Instant::now();
        let since = arrived
            .checked_sub(self.window)
            .unwrap_or(arrived)
            .max(store::last_local_write());
        loop {
            if let Some((started, generation)) = finished.borrow_and_update().read
                && started >= since
            {
                return Ok(generation);
            }
            let start = {
                let mut rounds = self.rounds();
                match rounds.reading {
                    // In flight: wait for it, then take it if it started
                    // late enough, or start the next one.
                    Some(_) => None,
                    None => {
                        let now = Instant::now();
                        rounds.reading = Some(now);
                        Some(now)
                    }
                }
            };
            let Some(start) = start else {
                if finished.changed().await.is_err() {
                    return Err(ServiceError::internal(anyhow::anyhow!(
                        "the generation reader is gone"
                    )));
                }
                continue;
            };
            let mut reading = Reading(self, None);
            // Boxed, as a miss is (see `GenerationCache::get_or_compute`).
            let generation = Box::pin(db.registry_generation_on(&self.connection)).await?;
            reading.1 = Some((start, generation));
            return Ok(generation);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use store::DatabaseUrl;

    async fn bump(db: &Db) {
        let Db::Sqlite { pool, .. } = db else {
            unreachable!("the test opens SQLite")
        };
        sqlx::query("UPDATE registry_generation SET generation = generation + 1 WHERE id = 1")
            .execute(pool)
            .await
            .unwrap();
    }

    /// Another replica's change as its trigger writes it: a bump and the
    /// journal's rows (none: a bump the journal does not account for).
    async fn change(db: &Db, rows: &[(&str, &str)]) {
        bump(db).await;
        let Db::Sqlite { pool, .. } = db else {
            unreachable!("the test opens SQLite")
        };
        for (scope, name) in rows {
            sqlx::query(
                "INSERT INTO registry_changes (generation, scope, kind, normalized_name)
                 SELECT generation, $1, 'tool', $2 FROM registry_generation WHERE id = 1",
            )
            .bind(scope)
            .bind(name)
            .execute(pool)
            .await
            .unwrap();
        }
    }

    fn request(tool: &str) -> Request {
        Request {
            requirements: [(PackageName::new(tool).unwrap(), None)].into(),
            pins: BTreeMap::new(),
            exclude_newer: None,
        }
    }

    /// A full cache still takes the package read now: the hot packages of
    /// a large catalog are cached however many others were read first.
    #[test]
    fn index_documents_past_the_bound_replace_the_least_used() {
        let cache = IndexCache::default();
        let at = cache.lock().generation;
        let mib = bytes::Bytes::from(vec![b'x'; 1 << 20]);
        let documents = MAX_INDEX_BYTES / (1 << 20) + 8;
        for i in 0..documents {
            let name = format!("tool{i}");
            cache.put_index_body(at, Kind::Tool, name.clone(), mib.clone(), name);
        }
        let last = format!("tool{}", documents - 1);
        assert!(cache.index_body(at, Kind::Tool, &last).is_some());
        let state = cache.lock();
        assert!(state.index_bodies.weight() <= MAX_INDEX_BYTES as u64);
        assert!(state.index_bodies.len() < documents);
    }

    #[tokio::test]
    async fn a_move_drops_what_the_journal_names_and_what_read_it() {
        let dir = tempfile::tempdir().unwrap();
        let db = Db::connect(
            &DatabaseUrl::SqlitePath(dir.path().join("j.db")),
            std::time::Duration::from_secs(5),
            1,
        )
        .await
        .unwrap();
        let cache = IndexCache::default();
        let at = cache.current_generation(&db).await.unwrap();
        for tool in ["a", "b", "c"] {
            cache.put_tool(at, tool.to_owned(), None);
            let body = bytes::Bytes::from(format!("index of {tool}"));
            cache.put_index_body(at, Kind::Tool, tool.to_owned(), body, tool.to_owned());
        }
        let tools = Arc::new(LockTools::new());
        // `a`'s solve looked `c` up too (a version it rejected, say).
        let reads = |names: &[&str]| names.iter().map(|n| (*n).to_owned()).collect();
        cache.put_resolution(at, request("a"), Arc::clone(&tools), reads(&["a", "c"]));
        cache.put_resolution(at, request("b"), Arc::clone(&tools), reads(&["b"]));
        cache.put_categories(at, vec!["Research".to_owned()]);

        change(&db, &[("package", "c"), ("dependents", "b")]).await;
        let next = cache.current_generation(&db).await.unwrap();
        assert_eq!(next, at + 1);
        assert!(cache.tool("c").is_none());
        assert!(cache.index_body(next, Kind::Tool, "c").is_none());
        assert!(cache.resolution(next, &request("a")).is_none());
        // Untouched by `c`, and `b`'s dependents are not its index.
        assert!(cache.tool("a").is_some() && cache.tool("b").is_some());
        assert!(cache.index_body(next, Kind::Tool, "b").is_some());
        assert!(cache.resolution(next, &request("b")).is_some());
        // Over many packages: gone at any move.
        assert!(cache.categories(next).is_none());
        let history = cache.changes();
        assert!(history.touched(at, next, |c| c.package(Kind::Tool, "c")));
        assert!(!history.touched(at, next, |c| c.package(Kind::Tool, "b")));

        // A bump the journal has no row for: everything goes.
        change(&db, &[]).await;
        let last = cache.current_generation(&db).await.unwrap();
        assert!(cache.tool("a").is_none());
        assert!(cache.index_body(last, Kind::Tool, "b").is_none());
        assert!(cache.resolution(last, &request("b")).is_none());
        assert!(history.touched(next, last, |c| c.package(Kind::Tool, "b")));
    }

    #[tokio::test]
    async fn a_window_shares_a_recent_read_but_never_one_from_before_a_local_write() {
        let dir = tempfile::tempdir().unwrap();
        let db = Db::connect(
            &DatabaseUrl::SqlitePath(dir.path().join("w.db")),
            std::time::Duration::from_secs(5),
            1,
        )
        .await
        .unwrap();
        // No other test of this binary writes through `db` (the last-write
        // mark is per process).
        let reads = GenerationReads::new(std::time::Duration::from_secs(5));
        let first = reads.read(&db).await.unwrap();
        // Another replica's write (not through this process's writers):
        // within the window, the read just made still answers.
        bump(&db).await;
        assert_eq!(reads.read(&db).await.unwrap(), first);
        // This process's own write: the next caller reads again.
        store::note_local_write();
        assert_eq!(reads.read(&db).await.unwrap(), first + 1);
    }

    #[tokio::test]
    async fn shared_generation_reads_are_never_older_than_the_caller() {
        let dir = tempfile::tempdir().unwrap();
        let db = Db::connect(
            &DatabaseUrl::SqlitePath(dir.path().join("r.db")),
            std::time::Duration::from_secs(5),
            1,
        )
        .await
        .unwrap();
        let reads = Arc::new(GenerationReads::new(std::time::Duration::ZERO));
        let first = reads.read(&db).await.unwrap();
        bump(&db).await;
        // A read asked for after a write sees it.
        assert_eq!(reads.read(&db).await.unwrap(), first + 1);

        // Many callers at once: every one sees the latest write before it
        // asked, and none waits forever.
        bump(&db).await;
        let calls: Vec<_> = (0..64)
            .map(|_| {
                let (reads, db) = (Arc::clone(&reads), db.clone());
                tokio::spawn(async move { reads.read(&db).await.unwrap() })
            })
            .collect();
        for call in calls {
            assert_eq!(call.await.unwrap(), first + 2);
        }

        // A caller that gives up mid-read does not stall the next ones.
        for _ in 0..20 {
            let abandoned = reads.read(&db);
            drop(tokio::time::timeout(std::time::Duration::ZERO, abandoned).await);
        }
        bump(&db).await;
        assert_eq!(reads.read(&db).await.unwrap(), first + 3);
    }
}
