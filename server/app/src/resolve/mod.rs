//! Resolution over HTTP: requirements (from an agent.yaml or JSON) in, an
//! `agent.lock` out.
//!
//! Version metadata never changes except the yanked flag and new versions,
//! so index entries, model rows and whole resolutions are cached in-process
//! and trusted only while the registry-wide generation (one row, bumped by
//! the database in the same transaction as every publish, yank and model
//! write) is the one they were read at. The generation is read for every
//! request, by a read that began after the request arrived (concurrent
//! requests share one: [`GenerationReads`]), so replicas never serve a
//! resolution older than the database.
//!
//! The core resolver is synchronous; it runs on a blocking thread with a
//! deadline and asks for each package it reaches, from the cache or, on a
//! miss, from the database (blocking that thread, not an async worker). It
//! reads only what the solver visits, not the whole reachable closure.

use std::{
    collections::{BTreeMap, HashMap, HashSet},
    sync::{Arc, Mutex},
    time::Instant,
};

use agentlang_core::{
    Kind, PackageName, Version,
    agent::parse_agent,
    lockfile::{LockedModel, LockedTool, Lockfile, ModelId, Price, ResolvedAt, Sha256Hash},
    resolve::{
        Cancel, PackageSource, Request, Resolution, ResolveError, SourceError, VersionEntry,
        resolve,
    },
};
use semver::VersionReq;

use crate::{
    db::{
        Db,
        index::PackageIndex,
        models::{ModelName, ModelRecord},
    },
    error::{ApiError, FieldError},
    service::solvers::SolverPool,
    state::AppState,
};

/// The most tools one resolution may name.
pub const MAX_RESOLVE_TOOLS: usize = 256;
/// The most models one resolution may name.
pub const MAX_RESOLVE_MODELS: usize = 32;
/// The most entries each section of a given lock (`tools`, `agents`,
/// `models`, `files`) may hold.
pub const MAX_LOCK_ENTRIES: usize = 1024;

/// A field error when `count` items exceed `limit`, naming both.
pub fn check_count(field: &str, count: usize, limit: usize) -> Result<(), ApiError> {
    if count > limit {
        Err(ApiError::Validation(vec![FieldError::new(
            field,
            format!("holds {count} entries; at most {limit} are allowed"),
        )]))
    } else {
        Ok(())
    }
}

/// What to resolve.
#[derive(Debug, Clone, Default)]
pub struct ResolveInput {
    /// Tool name to requirement; `None` means the newest release.
    pub tools: BTreeMap<PackageName, Option<VersionReq>>,
    /// Model names for the lock's `models:` section.
    pub models: Vec<String>,
    /// An existing lock whose tool versions are kept while they satisfy
    /// their requirements (even when yanked since).
    pub lock: Option<Lockfile>,
}

impl ResolveInput {
    /// From an agent.yaml: its registry tools and its models.
    pub fn from_agent_yaml(bytes: &[u8]) -> Result<Self, ApiError> {
        let spec = parse_agent(bytes).map_err(|diags| {
            ApiError::Validation(
                diags
                    .iter()
                    .map(|d| FieldError::new(d.path.clone(), d.message.clone()))
                    .collect(),
            )
        })?;
        Ok(Self {
            tools: spec.tool_requirements(),
            models: spec.model_names().map(str::to_owned).collect(),
            lock: None,
        })
    }

    /// Every collection within its limit: what one request may make the
    /// resolver and the database do.
    pub fn check_limits(&self) -> Result<(), ApiError> {
        check_count("tools", self.tools.len(), MAX_RESOLVE_TOOLS)?;
        check_count("models", self.models.len(), MAX_RESOLVE_MODELS)?;
        if let Some(lock) = &self.lock {
            check_lock_limits(lock)?;
        }
        Ok(())
    }
}

/// Every section of a lock within [`MAX_LOCK_ENTRIES`].
pub fn check_lock_limits(lock: &Lockfile) -> Result<(), ApiError> {
    check_count("lock.tools", lock.tools.len(), MAX_LOCK_ENTRIES)?;
    check_count("lock.agents", lock.agents.len(), MAX_LOCK_ENTRIES)?;
    check_count("lock.models", lock.models.len(), MAX_LOCK_ENTRIES)?;
    check_count("lock.files", lock.files.len(), MAX_LOCK_ENTRIES)
}

type Entries = Option<Arc<Vec<VersionEntry>>>;
type LockTools = BTreeMap<PackageName, LockedTool>;

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
/// request bodies and resolutions) solver threads slept about once per
/// five warm first-time resolves (`perf record -e sched:sched_switch`).
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
    solvers: SolverPool,
}

/// Solver threads per core. When solves took a semaphore's slots instead,
/// two per core rather than one took warm first-time resolves from about
/// 1,670 to 1,880 a second; with the threads, two measured at least as
/// well as one (`deploy/bench/RESULTS.md`).
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
    pub async fn current_generation(&self, db: &Db) -> Result<i64, ApiError> {
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

    fn tool(&self, normalized: &str) -> Option<Entries> {
        self.tools_read().entries.get(normalized).cloned()
    }

    /// What the cache holds of each of `names`, read under one lock; names
    /// it does not hold are left out.
    fn tools<'n>(&self, names: impl Iterator<Item = &'n str>) -> HashMap<&'n str, Entries> {
        let tools = self.tools_read();
        names
            .filter_map(|name| Some((name, tools.entries.get(name)?.clone())))
            .collect()
    }

    fn put_tool(&self, generation: i64, normalized: String, entries: Entries) {
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

    fn models(&self) -> Option<Arc<HashMap<String, ModelRecord>>> {
        self.lock().models.clone()
    }

    fn put_models(&self, generation: i64, models: Arc<HashMap<String, ModelRecord>>) {
        let mut state = self.lock();
        if state.generation == generation {
            state.models = Some(models);
        }
    }

    fn resolution(&self, generation: i64, request: &Request) -> Option<Arc<LockTools>> {
        let state = self.lock();
        if state.generation != generation {
            return None;
        }
        state.resolutions.get(request).cloned()
    }

    fn put_resolution(&self, generation: i64, request: Request, resolution: Arc<LockTools>) {
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
    connection: crate::db::index::GenerationConnection,
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
            connection: crate::db::index::GenerationConnection::default(),
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

    async fn read(&self, db: &Db) -> Result<i64, ApiError> {
        let mut finished = self.finished.subscribe();
        let arrived = Instant::now();
        let since = arrived
            .checked_sub(self.window)
            .unwrap_or(arrived)
            .max(crate::db::last_local_write());
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
                    return Err(ApiError::internal(anyhow::anyhow!(
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

/// The index as the solver sees it: the cache, and on a miss the database,
/// read from the solver's thread. A stand-in thread takes the solver's
/// place at the queue while it waits for the database, so a solver never
/// holds a turn that others wait for while it is not using it.
/// With `cache_only`, a miss ends the resolution instead, with [`NotCached`]
/// (see [`solve`]).
struct IndexSource {
    db: Db,
    cache: Arc<IndexCache>,
    generation: i64,
    runtime: tokio::runtime::Handle,
    cache_only: bool,
}

#[derive(Debug, thiserror::Error)]
#[error("not in the index cache")]
struct NotCached;

impl IndexSource {
    fn read(&self, name: &PackageName) -> Result<Entries, SourceError> {
        let index = self
            .cache
            .solvers
            .while_blocked(|| {
                self.runtime
                    .block_on(self.db.package_index(Kind::Tool, name))
            })
            .map_err(SourceError::new)?;
        match index {
            Some(index) => Ok(Some(Arc::new(entries_of(index).map_err(SourceError::new)?))),
            None => Ok(None),
        }
    }
}

impl PackageSource for IndexSource {
    fn versions(&self, name: &PackageName) -> Result<Entries, SourceError> {
        let normalized = name.normalized();
        let entries = match self.cache.tool(&normalized) {
            Some(entries) => entries,
            None if self.cache_only => return Err(SourceError::new(NotCached)),
            None => {
                let entries = self.read(name)?;
                self.cache
                    .put_tool(self.generation, normalized, entries.clone());
                entries
            }
        };
        Ok(entries)
    }
}

#[derive(Debug, thiserror::Error)]
#[error("the index holds an invalid {what}: {message}")]
struct CorruptIndex {
    what: &'static str,
    message: String,
}

fn corrupt(what: &'static str, e: impl std::fmt::Display) -> CorruptIndex {
    CorruptIndex {
        what,
        message: e.to_string(),
    }
}

fn entries_of(index: PackageIndex) -> Result<Vec<VersionEntry>, CorruptIndex> {
    index
        .versions
        .into_iter()
        .map(|v| {
            let dependencies = v
                .dependencies
                .iter()
                .map(|(name, req)| {
                    Ok((
                        PackageName::new(name.as_str()).map_err(|e| corrupt("name", e))?,
                        req.parse::<VersionReq>()
                            .map_err(|e| corrupt("requirement", e))?,
                    ))
                })
                .collect::<Result<_, CorruptIndex>>()?;
            Ok(VersionEntry {
                version: Version::parse(&v.version).map_err(|e| corrupt("version", e))?,
                yanked: v.yanked,
                hash: Sha256Hash::parse(&format!("sha256:{}", v.sha256))
                    .map_err(|e| corrupt("hash", e))?,
                dependencies,
            })
        })
        .collect()
}

/// The lock's `models:` entries from the models catalog, read in one query
/// (or from the cache); every unknown model is a field error.
async fn lock_models(
    state: &AppState,
    generation: i64,
    names: &[String],
) -> Result<BTreeMap<ModelId, LockedModel>, ApiError> {
    if names.is_empty() {
        return Ok(BTreeMap::new());
    }
    let catalog = match state.index_cache.models() {
        Some(catalog) => catalog,
        None => {
            let catalog: Arc<HashMap<String, ModelRecord>> = Arc::new(
                state
                    .db
                    .list_models()
                    .await?
                    .into_iter()
                    .map(|m| (m.name.clone(), m))
                    .collect(),
            );
            state
                .index_cache
                .put_models(generation, Arc::clone(&catalog));
            catalog
        }
    };
    let mut models = BTreeMap::new();
    let mut errors = Vec::new();
    for (i, raw) in names.iter().enumerate() {
        let (Ok(_), Ok(id)) = (ModelName::parse(raw), ModelId::new(raw.as_str())) else {
            errors.push(FieldError::new(
                format!("models[{i}]"),
                format!("{raw:?} is not a model name"),
            ));
            continue;
        };
        let Some(record) = catalog.get(raw.as_str()) else {
            errors.push(FieldError::new(
                format!("models.{raw}"),
                format!("{raw} is not in this registry's models catalog"),
            ));
            continue;
        };
        let price = |p: Option<f64>| p.and_then(|p| Price::new(p).ok());
        models.insert(
            id,
            LockedModel {
                context_window: u64::try_from(record.context_window).unwrap_or(0),
                supports_tools: record.supports_tools,
                input_1m_price: price(record.input_price_per_mtok),
                output_1m_price: price(record.output_price_per_mtok),
            },
        );
    }
    if errors.is_empty() {
        Ok(models)
    } else {
        Err(ApiError::Validation(errors))
    }
}

/// Resolves `input` into an `agent.lock` naming this registry. Tools and
/// files of a given lock are carried over where still valid.
pub async fn resolve_lock(state: &AppState, input: ResolveInput) -> Result<Lockfile, ApiError> {
    let generation = state.index_cache.current_generation(&state.db).await?;
    resolve_lock_at(
        state,
        generation,
        crate::common::now(),
        input,
        Lockfile::clone,
    )
    .await
}

/// [`resolve_lock`] at a generation the caller read, with `resolved_at`
/// given in Unix seconds, answering what `render` makes of the lock. A
/// fresh resolution's tools are cached after `render` has read them, so
/// they are moved there rather than copied.
pub async fn resolve_lock_at<R>(
    state: &AppState,
    generation: i64,
    resolved_at: i64,
    input: ResolveInput,
    render: impl FnOnce(&Lockfile) -> R,
) -> Result<R, ApiError> {
    input.check_limits()?;
    // One deadline for the whole resolution, the models' read included.
    let deadline = Instant::now() + state.config.resolve_timeout;
    let models = tokio::time::timeout_at(
        deadline.into(),
        lock_models(state, generation, &input.models),
    )
    .await
    .map_err(|_| timed_out(state))??;
    let request = Request {
        requirements: input.tools,
        pins: input
            .lock
            .as_ref()
            .map(Lockfile::tool_pins)
            .unwrap_or_default(),
    };
    let (tools, fresh) = match state.index_cache.resolution(generation, &request) {
        Some(tools) => (LockTools::clone(&tools), None),
        None => (
            solve(state, generation, &request, deadline).await?,
            Some(request),
        ),
    };
    state.metrics.resolves.inc();

    let resolved_at = ResolvedAt::from_unix(resolved_at).map_err(ApiError::internal)?;
    let mut lock = Lockfile::new(resolved_at, Some(state.public_url.clone()));
    lock.tools = tools;
    lock.models = models;
    if let Some(previous) = input.lock {
        lock.agents = previous.agents;
        lock.files = previous.files;
    }
    let rendered = render(&lock);
    if let Some(request) = fresh {
        state.index_cache.put_resolution(
            generation,
            request,
            Arc::new(std::mem::take(&mut lock.tools)),
        );
    }
    Ok(rendered)
}

/// Levels of a dependency graph read ahead of the solver; a deeper graph's
/// rest is read by the solver as it goes.
const MAX_PREFETCH_LEVELS: usize = 32;

/// Reads into the cache, before the solver runs, the indexes its first
/// attempt will need: one batched read per level of the dependency graph.
/// The first level is the requested and pinned tools; each next level is
/// what the version the solver tries first for each tool (the pinned one,
/// else the newest usable one that meets every requirement seen for it)
/// depends on. Every other version's dependencies are left out: a tool
/// has tens of versions, and following them all would read most of the
/// catalog for one agent (on a cold cache, every early request would pay
/// for a whole-cache fill). What backtracking reaches beyond this, the
/// solver reads itself. Packages the cache holds are walked, not read.
async fn prefetch(
    state: &AppState,
    generation: i64,
    request: &Request,
    deadline: Instant,
) -> Result<(), ApiError> {
    let cache = &state.index_cache;
    let mut seen = HashSet::new();
    // Normalized name to the name and what is asked of it at this level.
    let mut level: HashMap<String, (PackageName, Wanted)> = HashMap::new();
    for (name, requirement) in &request.requirements {
        level
            .entry(name.normalized())
            .or_insert_with(|| (name.clone(), Wanted::default()))
            .1
            .requirements
            .extend(requirement.clone());
    }
    for (name, version) in &request.pins {
        level
            .entry(name.normalized())
            .or_insert_with(|| (name.clone(), Wanted::default()))
            .1
            .pin = Some(version.clone());
    }
    for _ in 0..MAX_PREFETCH_LEVELS {
        level.retain(|normalized, _| seen.insert(normalized.clone()));
        if level.is_empty() {
            break;
        }
        // One look at the cache for the whole level, under one lock.
        let mut entries: HashMap<&str, Entries> = cache.tools(level.keys().map(String::as_str));
        let to_read: Vec<PackageName> = level
            .iter()
            .filter(|(normalized, _)| !entries.contains_key(normalized.as_str()))
            .map(|(_, (name, _))| name.clone())
            .collect();
        if !to_read.is_empty() {
            let indexes = tokio::time::timeout_at(
                deadline.into(),
                state.db.package_indexes(Kind::Tool, &to_read),
            )
            .await
            .map_err(|_| timed_out(state))??;
            state.metrics.index_reads.inc();
            let mut found: HashMap<String, PackageIndex> = indexes
                .into_iter()
                .map(|index| (index.package.normalized_name.clone(), index))
                .collect();
            for name in to_read {
                let normalized = name.normalized();
                let read = match found.remove(&normalized) {
                    Some(index) => Some(Arc::new(entries_of(index).map_err(ApiError::internal)?)),
                    None => None,
                };
                if let Some((key, _)) = level.get_key_value(&normalized) {
                    entries.insert(key.as_str(), read.clone());
                }
                cache.put_tool(generation, normalized, read);
            }
        }
        let mut next: HashMap<String, (PackageName, Wanted)> = HashMap::new();
        for (normalized, (_, wanted)) in &level {
            let Some(Some(entries)) = entries.get(normalized.as_str()) else {
                continue;
            };
            let Some(first) = wanted.first_choice(entries) else {
                continue;
            };
            for (dependency, requirement) in &first.dependencies {
                next.entry(dependency.normalized())
                    .or_insert_with(|| (dependency.clone(), Wanted::default()))
                    .1
                    .requirements
                    .push(requirement.clone());
            }
        }
        level = next;
    }
    Ok(())
}

/// What a resolution asks of one tool, as far as the read-ahead knows.
#[derive(Debug, Default)]
struct Wanted {
    requirements: Vec<VersionReq>,
    pin: Option<Version>,
}

impl Wanted {
    /// The version the solver will most likely try first: the pinned one
    /// when it is published, else the newest unyanked version meeting every
    /// requirement (releases only, unless a requirement names a
    /// prerelease: `VersionReq::matches` decides), else the newest meeting
    /// any (the solver will backtrack from there).
    fn first_choice<'a>(&self, entries: &'a [VersionEntry]) -> Option<&'a VersionEntry> {
        if let Some(pin) = &self.pin
            && let Some(pinned) = entries.iter().find(|e| &e.version == pin)
        {
            return Some(pinned);
        }
        let usable = |all: bool| {
            entries
                .iter()
                .filter(|e| !e.yanked)
                .filter(|e| {
                    let v = e.version.semver();
                    if self.requirements.is_empty() {
                        v.pre.is_empty()
                    } else if all {
                        self.requirements.iter().all(|r| r.matches(v))
                    } else {
                        self.requirements.iter().any(|r| r.matches(v))
                    }
                })
                .max_by(|a, b| a.version.cmp(&b.version))
        };
        usable(true).or_else(|| usable(false))
    }
}

/// Runs the solver on a solver thread under the configured deadline.
/// First over the cache alone: on a warm replica most requests find every
/// package they need there, and the read-ahead walk ([`prefetch`]) would
/// only repeat part of the solver's work. At the first package the cache
/// lacks, that attempt stops; then what the solver will need is read ahead
/// and it runs again, reading whatever else backtracking reaches itself.
/// Solves queue for a few threads per core, in arrival order: the solver
/// is CPU work, and run all at once a request's time would be its own work
/// times the number in flight; queued, it is the work ahead of it plus its
/// own, which keeps the slow end of the distribution near the middle.
async fn solve(
    state: &AppState,
    generation: i64,
    request: &Request,
    deadline: Instant,
) -> Result<LockTools, ApiError> {
    let solved = match run_solver(state, generation, request, deadline, true).await? {
        Err(ResolveError::Source { source, .. }) if source.is::<NotCached>() => {
            prefetch(state, generation, request, deadline).await?;
            run_solver(state, generation, request, deadline, false).await?
        }
        solved => solved,
    };
    solved.map_err(|e| match e {
        ResolveError::Unsatisfiable {
            explanation,
            conflicts,
        } => ApiError::Unsatisfiable {
            explanation,
            conflicts: serde_json::to_value(conflicts).unwrap_or_default(),
        },
        ResolveError::UnknownPackage { name, required_by } => {
            ApiError::Validation(vec![FieldError::new(
                format!("tools.{name}"),
                format!(
                    "no tool named {name} is published on this registry (required by {required_by})"
                ),
            )])
        }
        ResolveError::Cancelled => timed_out(state),
        other => ApiError::internal(other),
    })
}

/// One run of the solver on a solver thread, over the cache alone
/// (`cache_only`) or reading misses from the database. The resolution
/// becomes the lock's tools there too, while it is in that core's cache
/// and off the async workers.
async fn run_solver(
    state: &AppState,
    generation: i64,
    request: &Request,
    deadline: Instant,
    cache_only: bool,
) -> Result<Result<LockTools, ResolveError>, ApiError> {
    let source = IndexSource {
        db: state.db.clone(),
        cache: Arc::clone(&state.index_cache),
        generation,
        runtime: tokio::runtime::Handle::current(),
        cache_only,
    };
    let cancel = Cancel::with_deadline(deadline);
    let request = request.clone();
    state
        .index_cache
        .solvers
        .run(deadline.into(), move || {
            resolve(&source, &request, &cancel).map(Resolution::into_lock_tools)
        })
        .await
        .map_err(ApiError::internal)?
        .ok_or_else(|| timed_out(state))
}

/// The answer when a resolution runs past the configured deadline.
fn timed_out(state: &AppState) -> ApiError {
    let timeout = state.config.resolve_timeout;
    ApiError::ResolveTimeout(u64::try_from(timeout.as_millis()).unwrap_or(u64::MAX))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::DatabaseUrl;

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
        crate::db::note_local_write();
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
