//! What resolution keeps between requests: index entries, model rows,
//! resolutions and rendered answers, each valid for one registry
//! generation, and the shared reads of that generation.

use std::{
    collections::{BTreeMap, HashMap},
    sync::{Arc, Mutex},
    time::Instant,
};

use agentlang_core::{
    Kind, PackageName,
    lockfile::LockedTool,
    resolve::{Request, VersionEntry},
};
use store::{Db, models::ModelRecord};

use crate::{ServiceError, solvers::SolverPool};

pub(super) type Entries = Option<Arc<Vec<VersionEntry>>>;
pub(super) type LockTools = BTreeMap<PackageName, LockedTool>;

#[derive(Debug, Default)]
struct CacheState {
    generation: i64,
    /// The whole models catalog (a few dozen rows), read once per
    /// generation.
    models: Option<Arc<HashMap<String, ModelRecord>>>,
    /// Successful resolutions by request, as the lock's `tools:` section.
    /// A request is small and its resolution a pure function of the index
    /// at this generation.
    resolutions: HashMap<Request, Arc<LockTools>>,
    /// Whole answers by exact request, for the second `rendered_second`
    /// (the lock's `resolved_at`): identical requests within a second get
    /// identical bytes, so they are rendered once.
    rendered: HashMap<RenderKey, bytes::Bytes>,
    rendered_second: i64,
    rendered_bytes: usize,
    /// Index documents (`GET /api/v1/index/..`) with their ETag, by kind and
    /// normalized name.
    index_bodies: HashMap<(Kind, String), (bytes::Bytes, String)>,
    index_bytes: usize,
    /// The catalog's category filter: every category a live version names.
    categories: Option<Vec<String>>,
}

/// Index entries at one generation: normalized tool name to its versions;
/// `None` remembers an unknown name (creating a package publishes a
/// version, which bumps the generation). Apart from [`CacheState`], under
/// a lock readers share: every solve looks each of its packages up here,
/// and behind the one lock of everything else (held by handlers hashing
/// request bodies and resolutions) solver threads slept on it under a load
/// of warm first-time resolves (`deploy/bench/RESULTS.md`, Decisions).
#[derive(Debug, Default)]
struct ToolCache {
    generation: i64,
    entries: HashMap<String, Entries>,
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

/// Index entries, model rows and resolutions, valid for one registry
/// generation.
#[derive(Debug)]
pub struct IndexCache {
    state: Mutex<CacheState>,
    tools: std::sync::RwLock<ToolCache>,
    generation_reads: GenerationReads,
    /// The newest generation any read has returned.
    newest: std::sync::atomic::AtomicI64,
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

/// Cached packages stop growing here; past it the map is cleared (a
/// registry with more tools than this simply reads more from the database).
const MAX_CACHED_PACKAGES: usize = 50_000;

/// Cached resolutions per generation; past it the map is cleared. A
/// resolution of a typical agent holds tens of tools: a few MiB in all.
const MAX_CACHED_RESOLUTIONS: usize = 4_096;

/// Bytes of rendered answers kept for one second; past it none are added.
const MAX_RENDERED_BYTES: usize = 8 * 1024 * 1024;

/// Bytes of index documents kept per generation; past it none are added.
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
            solvers: SolverPool::new(
                SOLVERS_PER_CORE
                    * std::thread::available_parallelism().map_or(1, std::num::NonZero::get),
            ),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, CacheState> {
        // A panic while holding the lock leaves plain maps behind; reuse them.
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The database's current generation, after forgetting everything read
    /// at another one.
    pub async fn current_generation(&self, db: &Db) -> Result<i64, ServiceError> {
        let generation = self.generation_reads.read(db).await?;
        self.newest
            .fetch_max(generation, std::sync::atomic::Ordering::Relaxed);
        let mut state = self.lock();
        if state.generation != generation {
            // Under the state's lock, so both move to a generation together;
            // the old entries are dropped after both locks are released.
            let stale_tools = {
                let mut tools = self.tools_mut();
                tools.generation = generation;
                std::mem::take(&mut tools.entries)
            };
            state.models = None;
            state.resolutions.clear();
            state.rendered.clear();
            state.rendered_bytes = 0;
            state.index_bodies.clear();
            state.index_bytes = 0;
            state.categories = None;
            state.generation = generation;
            drop(state);
            drop(stale_tools);
        }
        Ok(generation)
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

    /// A package's index document and ETag at this generation.
    pub fn index_body(
        &self,
        generation: i64,
        kind: Kind,
        normalized: &str,
    ) -> Option<(bytes::Bytes, String)> {
        let state = self.lock();
        if state.generation != generation {
            return None;
        }
        state
            .index_bodies
            .get(&(kind, normalized.to_owned()))
            .cloned()
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
        let size = body.len() + etag.len() + normalized.len();
        if state.generation == generation && state.index_bytes + size <= MAX_INDEX_BYTES {
            state.index_bytes += size;
            state.index_bodies.insert((kind, normalized), (body, etag));
        }
    }

    /// The answer rendered for `key` at this generation and second.
    pub fn rendered(&self, generation: i64, second: i64, key: &RenderKey) -> Option<bytes::Bytes> {
        let state = self.lock();
        if state.generation != generation || state.rendered_second != second {
            return None;
        }
        state.rendered.get(key).cloned()
    }

    pub fn put_rendered(&self, generation: i64, second: i64, key: RenderKey, answer: bytes::Bytes) {
        let mut state = self.lock();
        if state.generation != generation || second < state.rendered_second {
            return;
        }
        if state.rendered_second != second {
            state.rendered.clear();
            state.rendered_bytes = 0;
            state.rendered_second = second;
        }
        let size = key.body.len() + answer.len();
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
            if tools.entries.len() >= MAX_CACHED_PACKAGES {
                tools.entries.clear();
            }
            tools.entries.insert(normalized, entries);
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
        if state.generation != generation {
            return None;
        }
        state.resolutions.get(request).cloned()
    }

    pub(super) fn put_resolution(
        &self,
        generation: i64,
        request: Request,
        resolution: Arc<LockTools>,
    ) {
        let mut state = self.lock();
        if state.generation == generation {
            if state.resolutions.len() >= MAX_CACHED_RESOLUTIONS {
                state.resolutions.clear();
            }
            state.resolutions.insert(request, resolution);
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
        let Db::Sqlite(pool) = db else {
            unreachable!("the test opens SQLite")
        };
        sqlx::query("UPDATE registry_generation SET generation = generation + 1 WHERE id = 1")
            .execute(pool)
            .await
            .unwrap();
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
