//! Resolution over HTTP: requirements (from an agent.yaml or JSON) in, an
//! `agent.lock` out.
//!
//! The core resolver is synchronous, so the reachable part of the index is
//! prefetched first (breadth-first over dependency names) and the solver
//! runs on a blocking thread with a deadline. Version metadata never changes
//! except the yanked flag and new versions, so index entries and model rows
//! are cached in-process and trusted only while the registry-wide generation
//! (one row, bumped by the database in the same transaction as every
//! publish, yank and model write) is the one they were read at. Replicas
//! therefore never serve a resolution older than the database.

use std::{
    collections::{BTreeMap, HashMap, HashSet, VecDeque},
    sync::{Arc, Mutex},
    time::Instant,
};

use agentlang_core::{
    Kind, PackageName, Version,
    agent::parse_agent,
    lockfile::{LockedModel, Lockfile, ModelId, Price, ResolvedAt, Sha256Hash},
    resolve::{Cancel, PackageSource, Request, ResolveError, SourceError, VersionEntry, resolve},
};
use semver::VersionReq;

use crate::{
    db::{
        index::PackageIndex,
        models::{ModelName, ModelRecord},
    },
    error::{ApiError, FieldError},
    state::AppState,
};

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
}

type Entries = Option<Arc<Vec<VersionEntry>>>;

#[derive(Debug, Default)]
struct CacheState {
    generation: i64,
    /// Normalized tool name to its versions; `None` remembers an unknown
    /// name (creating a package publishes a version, which bumps the
    /// generation).
    tools: HashMap<String, Entries>,
    models: HashMap<String, Option<ModelRecord>>,
}

/// Index entries and model rows, valid for one registry generation.
#[derive(Debug, Default)]
pub struct IndexCache {
    state: Mutex<CacheState>,
}

/// Cached entries stop growing here; past it the cache is cleared (a
/// registry with more tools than this simply reads more from the database).
const MAX_CACHED_PACKAGES: usize = 50_000;

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

    /// Forgets everything read before `generation`.
    fn observe(&self, generation: i64) {
        let mut state = self.lock();
        if state.generation != generation {
            state.tools.clear();
            state.models.clear();
            state.generation = generation;
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

    fn model(&self, name: &str) -> Option<Option<ModelRecord>> {
        self.lock().models.get(name).cloned()
    }

    fn put_model(&self, generation: i64, name: String, model: Option<ModelRecord>) {
        let mut state = self.lock();
        if state.generation == generation && state.models.len() < MAX_CACHED_PACKAGES {
            state.models.insert(name, model);
        }
    }
}

/// The prefetched, reachable part of the index.
struct Prefetched(HashMap<String, Entries>);

impl PackageSource for Prefetched {
    fn versions(&self, name: &PackageName) -> Result<Option<Vec<VersionEntry>>, SourceError> {
        Ok(self
            .0
            .get(&name.normalized())
            .cloned()
            .flatten()
            .map(|entries| entries.as_ref().clone()))
    }
}

fn corrupt(what: &str, e: impl std::fmt::Display) -> ApiError {
    ApiError::internal(anyhow::anyhow!("the index holds an invalid {what}: {e}"))
}

fn entries_of(index: PackageIndex) -> Result<Vec<VersionEntry>, ApiError> {
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
                .collect::<Result<_, ApiError>>()?;
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

/// Reads every tool reachable from `roots`, from the cache where it holds
/// them and from the database otherwise.
async fn prefetch(
    state: &AppState,
    generation: i64,
    roots: impl Iterator<Item = PackageName>,
) -> Result<Prefetched, ApiError> {
    let cache = &state.index_cache;
    let mut found: HashMap<String, Entries> = HashMap::new();
    let mut seen: HashSet<String> = HashSet::new();
    let mut queue: VecDeque<PackageName> = roots.collect();
    while let Some(name) = queue.pop_front() {
        let normalized = name.normalized();
        if !seen.insert(normalized.clone()) {
            continue;
        }
        let entries = match cache.tool(&normalized) {
            Some(entries) => entries,
            None => {
                let entries = match state.db.package_index(Kind::Tool, &name).await? {
                    Some(index) => Some(Arc::new(entries_of(index)?)),
                    None => None,
                };
                cache.put_tool(generation, normalized.clone(), entries.clone());
                entries
            }
        };
        if let Some(entries) = &entries {
            for entry in entries.iter() {
                queue.extend(entry.dependencies.keys().cloned());
            }
        }
        found.insert(normalized, entries);
    }
    Ok(Prefetched(found))
}

/// The lock's `models:` entries from the models catalog; every unknown
/// model is a field error.
async fn lock_models(
    state: &AppState,
    generation: i64,
    names: &[String],
) -> Result<BTreeMap<ModelId, LockedModel>, ApiError> {
    let mut models = BTreeMap::new();
    let mut errors = Vec::new();
    for (i, raw) in names.iter().enumerate() {
        let field = format!("models.{raw}");
        let (Ok(name), Ok(id)) = (ModelName::parse(raw), ModelId::new(raw.as_str())) else {
            errors.push(FieldError::new(
                format!("models[{i}]"),
                format!("{raw:?} is not a model name"),
            ));
            continue;
        };
        let record = match state.index_cache.model(raw) {
            Some(record) => record,
            None => {
                let record = state.db.find_model(&name).await?;
                state
                    .index_cache
                    .put_model(generation, raw.clone(), record.clone());
                record
            }
        };
        let Some(record) = record else {
            errors.push(FieldError::new(
                field,
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
    let generation = state.db.registry_generation().await?;
    state.index_cache.observe(generation);

    let models = lock_models(state, generation, &input.models).await?;
    let source = prefetch(state, generation, input.tools.keys().cloned()).await?;
    let request = Request {
        requirements: input.tools,
        pins: input
            .lock
            .as_ref()
            .map(Lockfile::tool_pins)
            .unwrap_or_default(),
    };
    let timeout = state.config.resolve_timeout;
    let cancel = Cancel::with_deadline(Instant::now() + timeout);
    let resolution = tokio::task::spawn_blocking(move || resolve(&source, &request, &cancel))
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
        })?;
    state.metrics.resolves.inc();

    let resolved_at = ResolvedAt::from_unix(crate::db::now()).map_err(ApiError::internal)?;
    let mut lock = Lockfile::new(resolved_at, Some(state.public_url.clone()));
    lock.tools = resolution.into_lock_tools();
    lock.models = models;
    if let Some(previous) = input.lock {
        lock.agents = previous.agents;
        lock.files = previous.files;
    }
    Ok(lock)
}
