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
    /// Normalized tool name to its versions; `None` remembers an unknown
    /// name (creating a package publishes a version, which bumps the
    /// generation).
    tools: HashMap<String, Entries>,
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
#[derive(Debug, Default)]
pub struct IndexCache {
    state: Mutex<CacheState>,
    generation_reads: GenerationReads,
}

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

impl IndexCache {
    pub fn new() -> Self {
        Self::default()
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
        let mut state = self.lock();
        if state.generation != generation {
            state.tools.clear();
            state.models = None;
            state.resolutions.clear();
            state.rendered.clear();
            state.rendered_bytes = 0;
            state.index_bodies.clear();
            state.index_bytes = 0;
            state.categories = None;
            state.generation = generation;
        }
        Ok(generation)
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

    fn tool(&self, normalized: &str) -> Option<Entries> {
        self.lock().tools.get(normalized).cloned()
    }

    fn put_tool(&self, generation: i64, normalized: String, entries: Entries) {
        let mut state = self.lock();
        // Data read at a newer generation is never labelled with an older
        // one here: only the current generation's map takes entries.
        if state.generation == generation {
            if state.tools.len() >= MAX_CACHED_PACKAGES {
                state.tools.clear();
            }
            state.tools.insert(normalized, entries);
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
/// ever answering one with a value read before it asked.
///
/// Reads run one at a time, numbered in the order they start. A caller that
/// arrives while read `n` is in flight cannot use it (it may have read the
/// row before the caller's view of the world), so it waits for the next
/// read, `n + 1`, which every caller that arrived during `n` shares: the
/// first of them to wake starts it, and its result wakes them all at once.
/// Under load one database round trip serves a whole queue of requests;
/// alone, a request costs one round trip.
#[derive(Debug)]
struct GenerationReads {
    rounds: Mutex<Rounds>,
    /// The newest finished read, published to every waiting caller.
    finished: tokio::sync::watch::Sender<Finished>,
}

#[derive(Debug, Default)]
struct Rounds {
    /// How many reads have started.
    started: u64,
    /// Whether one is in flight.
    reading: bool,
}

#[derive(Debug, Clone, Copy, Default)]
struct Finished {
    /// The read's number (0: none yet) and the generation it saw.
    round: u64,
    generation: i64,
    /// Bumped when a read ends without a value (an error, or its caller
    /// gone), so waiters wake and one of them reads instead.
    abandoned: u64,
}

impl Default for GenerationReads {
    fn default() -> Self {
        Self {
            rounds: Mutex::default(),
            finished: tokio::sync::watch::Sender::new(Finished::default()),
        }
    }
}

/// Marks the read in flight as over when its future ends or is dropped.
struct Reading<'a>(&'a GenerationReads, Option<(u64, i64)>);

impl Drop for Reading<'_> {
    fn drop(&mut self) {
        self.0.rounds().reading = false;
        match self.1 {
            Some((round, generation)) => self.0.finished.send_modify(|f| {
                f.round = round;
                f.generation = generation;
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
        // Any read numbered above what has started so far starts after now.
        let wanted = self.rounds().started + 1;
        loop {
            let newest = *finished.borrow_and_update();
            if newest.round >= wanted {
                return Ok(newest.generation);
            }
            let round = {
                let mut rounds = self.rounds();
                (!rounds.reading).then(|| {
                    rounds.reading = true;
                    rounds.started += 1;
                    rounds.started
                })
            };
            let Some(round) = round else {
                // A read is in flight; its end (or abandonment) wakes us.
                if finished.changed().await.is_err() {
                    return Err(ApiError::internal(anyhow::anyhow!(
                        "the generation reader is gone"
                    )));
                }
                continue;
            };
            let mut reading = Reading(self, None);
            let generation = db.registry_generation().await?;
            reading.1 = Some((round, generation));
            return Ok(generation);
        }
    }
}

/// The index as the solver sees it: the cache, and on a miss the database,
/// read from the solver's blocking thread.
struct IndexSource {
    db: Db,
    cache: Arc<IndexCache>,
    generation: i64,
    runtime: tokio::runtime::Handle,
}

impl PackageSource for IndexSource {
    fn versions(&self, name: &PackageName) -> Result<Option<Vec<VersionEntry>>, SourceError> {
        let normalized = name.normalized();
        let entries = match self.cache.tool(&normalized) {
            Some(entries) => entries,
            None => {
                let index = self
                    .runtime
                    .block_on(self.db.package_index(Kind::Tool, name))
                    .map_err(SourceError::new)?;
                let entries = match index {
                    Some(index) => Some(Arc::new(entries_of(index).map_err(SourceError::new)?)),
                    None => None,
                };
                self.cache
                    .put_tool(self.generation, normalized, entries.clone());
                entries
            }
        };
        Ok(entries.map(|entries| entries.as_ref().clone()))
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
    resolve_lock_at(state, generation, crate::common::now(), input).await
}

/// [`resolve_lock`] at a generation the caller read, with `resolved_at`
/// given in Unix seconds.
pub async fn resolve_lock_at(
    state: &AppState,
    generation: i64,
    resolved_at: i64,
    input: ResolveInput,
) -> Result<Lockfile, ApiError> {
    input.check_limits()?;
    // One deadline for the whole resolution, the models' read included.
    let timeout = state.config.resolve_timeout;
    let deadline = Instant::now() + timeout;
    let timed_out =
        || ApiError::ResolveTimeout(u64::try_from(timeout.as_millis()).unwrap_or(u64::MAX));
    let models = tokio::time::timeout_at(
        deadline.into(),
        lock_models(state, generation, &input.models),
    )
    .await
    .map_err(|_| timed_out())??;
    let request = Request {
        requirements: input.tools,
        pins: input
            .lock
            .as_ref()
            .map(Lockfile::tool_pins)
            .unwrap_or_default(),
    };
    let tools = match state.index_cache.resolution(generation, &request) {
        Some(tools) => tools,
        None => {
            let tools = Arc::new(
                solve(state, generation, &request, deadline)
                    .await?
                    .into_lock_tools(),
            );
            state
                .index_cache
                .put_resolution(generation, request, Arc::clone(&tools));
            tools
        }
    };
    state.metrics.resolves.inc();

    let resolved_at = ResolvedAt::from_unix(resolved_at).map_err(ApiError::internal)?;
    let mut lock = Lockfile::new(resolved_at, Some(state.public_url.clone()));
    lock.tools = LockTools::clone(&tools);
    lock.models = models;
    if let Some(previous) = input.lock {
        lock.agents = previous.agents;
        lock.files = previous.files;
    }
    Ok(lock)
}

/// Levels of a dependency graph read ahead of the solver; a deeper graph's
/// rest is read by the solver as it goes.
const MAX_PREFETCH_LEVELS: usize = 32;

/// Reads into the cache every index the resolution can need, before the
/// solver runs: one batched read per level of the dependency graph (the
/// requested and pinned tools, then every tool their versions depend on,
/// and so on), instead of one read per package from inside the solver.
/// Packages the cache holds are not read again, only walked through.
async fn prefetch(
    state: &AppState,
    generation: i64,
    request: &Request,
    deadline: Instant,
) -> Result<(), ApiError> {
    let cache = &state.index_cache;
    let mut seen = HashSet::new();
    let mut level: Vec<PackageName> = request
        .requirements
        .keys()
        .chain(request.pins.keys())
        .cloned()
        .collect();
    for _ in 0..MAX_PREFETCH_LEVELS {
        let mut next = Vec::new();
        let mut to_read = Vec::new();
        for name in level {
            if !seen.insert(name.normalized()) {
                continue;
            }
            match cache.tool(&name.normalized()) {
                Some(entries) => next.extend(dependencies_of(entries.as_deref())),
                None => to_read.push(name),
            }
        }
        if !to_read.is_empty() {
            let indexes = tokio::time::timeout_at(
                deadline.into(),
                state.db.package_indexes(Kind::Tool, &to_read),
            )
            .await
            .map_err(|_| {
                let timeout = state.config.resolve_timeout;
                ApiError::ResolveTimeout(u64::try_from(timeout.as_millis()).unwrap_or(u64::MAX))
            })??;
            state.metrics.index_reads.inc();
            let mut found: HashMap<String, PackageIndex> = indexes
                .into_iter()
                .map(|index| (index.package.normalized_name.clone(), index))
                .collect();
            for name in to_read {
                let normalized = name.normalized();
                let entries = match found.remove(&normalized) {
                    Some(index) => Some(Arc::new(entries_of(index).map_err(ApiError::internal)?)),
                    None => None,
                };
                next.extend(dependencies_of(entries.as_deref()));
                cache.put_tool(generation, normalized, entries);
            }
        }
        if next.is_empty() {
            break;
        }
        level = next;
    }
    Ok(())
}

/// Every tool any of the versions depends on.
fn dependencies_of(entries: Option<&Vec<VersionEntry>>) -> impl Iterator<Item = PackageName> + '_ {
    entries
        .into_iter()
        .flatten()
        .flat_map(|entry| entry.dependencies.keys().cloned())
}

/// Runs the solver on a blocking thread under the configured deadline,
/// after reading ahead what it will need ([`prefetch`]).
async fn solve(
    state: &AppState,
    generation: i64,
    request: &Request,
    deadline: Instant,
) -> Result<Resolution, ApiError> {
    prefetch(state, generation, request, deadline).await?;
    let source = IndexSource {
        db: state.db.clone(),
        cache: Arc::clone(&state.index_cache),
        generation,
        runtime: tokio::runtime::Handle::current(),
    };
    let timeout = state.config.resolve_timeout;
    let cancel = Cancel::with_deadline(deadline);
    let request = request.clone();
    tokio::task::spawn_blocking(move || resolve(&source, &request, &cancel))
        .await
        .map_err(ApiError::internal)?
        .map_err(|e| match e {
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
                    format!("no tool named {name} is published on this registry (required by {required_by})"),
                )])
            }
            ResolveError::Cancelled => {
                ApiError::ResolveTimeout(u64::try_from(timeout.as_millis()).unwrap_or(u64::MAX))
            }
            other => ApiError::internal(other),
        })
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
    async fn shared_generation_reads_are_never_older_than_the_caller() {
        let dir = tempfile::tempdir().unwrap();
        let db = Db::connect(
            &DatabaseUrl::SqlitePath(dir.path().join("r.db")),
            std::time::Duration::from_secs(5),
        )
        .await
        .unwrap();
        let reads = Arc::new(GenerationReads::default());
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
