//! Resolution over HTTP: requirements (from an agent.yaml or JSON) in, an
//! `agent.lock` out.
//!
//! Version metadata never changes except the yanked flag and new versions,
//! so index entries, model rows and whole resolutions are cached in-process
//! and trusted only while nothing they were read from has changed: the
//! registry-wide generation (one row, bumped by the database in the same
//! transaction as every publish, yank and model write) is read for every
//! request, by a read that began after the request arrived (concurrent
//! requests share one: [`GenerationReads`]), and a newer one drops what
//! the changes journal says it changed (a resolution goes when any tool
//! its solve looked up did), so replicas never serve a resolution older
//! than the database.
//!
//! The core resolver is synchronous; it runs on a blocking thread with a
//! deadline and asks for each package it reaches, from the cache or, on a
//! miss, from the database (blocking that thread, not an async worker). It
//! reads only what the solver visits, not the whole reachable closure.

use std::{
    collections::{BTreeMap, HashMap, HashSet},
    sync::Arc,
    time::Instant,
};

use agentlang_core::{
    Kind, PackageName, Version,
    agent::parse_agent,
    lockfile::{LockedModel, LockedSkill, Lockfile, ModelId, Price, ResolvedAt},
    resolve::{
        Cancel, HeldBack, PackageSource, Request, ResolveError, SourceError, VersionEntry,
        pick_skill, resolve,
    },
};
use semver::VersionReq;

mod cache;

use cache::{Entries, LockTools, ToolReads};
pub use cache::{IndexCache, RenderKey, ResolveAnswer};

use crate::{FieldError, Registry, ServiceError, rate_limits::ClientAddr};
use store::{
    Db,
    index::PackageIndex,
    models::{ModelName, ModelRecord},
};

/// The most tools one resolution may name.
pub const MAX_RESOLVE_TOOLS: usize = 256;
/// The most skills one resolution may name (as many as a lock may pin).
pub const MAX_RESOLVE_SKILLS: usize = agentlang_core::lockfile::MAX_LOCKED_SKILLS;
/// The most models one resolution may name.
pub const MAX_RESOLVE_MODELS: usize = 32;
/// The most entries each section of a given lock (`tools`, `agents`,
/// `models`, `skills`, `files`) may hold.
pub const MAX_LOCK_ENTRIES: usize = 1024;

/// A field error when `count` items exceed `limit`, naming both.
pub fn check_count(field: &str, count: usize, limit: usize) -> Result<(), ServiceError> {
    if count > limit {
        Err(ServiceError::Validation(vec![FieldError::new(
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
    /// Skill package name to requirement.
    pub skills: BTreeMap<PackageName, VersionReq>,
    /// Model names for the lock's `models:` section.
    pub models: Vec<String>,
    /// An existing lock whose tool versions are kept while they satisfy
    /// their requirements (even when yanked since).
    pub lock: Option<Lockfile>,
    /// Unix seconds: versions published later are not chosen, except the
    /// lock's pins (`agentlang lock --min-release-age`).
    pub exclude_newer: Option<i64>,
}

impl ResolveInput {
    /// From a JSON request's fields: every tool name and requirement and
    /// the lock checked, each problem a field error (`tools.<name>`).
    pub fn from_request(
        raw_tools: BTreeMap<String, Option<String>>,
        raw_skills: BTreeMap<String, String>,
        models: Vec<String>,
        lock: Option<serde_json::Value>,
        exclude_newer: Option<String>,
    ) -> Result<Self, ServiceError> {
        // Counted before each entry is checked, so a request of 100,000
        // names costs one comparison, not 100,000 field errors.
        check_count("tools", raw_tools.len(), MAX_RESOLVE_TOOLS)?;
        check_count("skills", raw_skills.len(), MAX_RESOLVE_SKILLS)?;
        check_count("models", models.len(), MAX_RESOLVE_MODELS)?;
        let mut errors = Vec::new();
        let mut tools = BTreeMap::new();
        for (name, requirement) in raw_tools {
            let field = format!("tools.{name}");
            let parsed_name = PackageName::new(name.as_str())
                .map_err(|e| errors.push(FieldError::new(field.clone(), e.to_string())))
                .ok();
            let parsed_req = match requirement {
                None => Some(None),
                Some(req) => agentlang_core::names::parse_requirement(&req)
                    .map(Some)
                    .map_err(|e| errors.push(FieldError::new(field.clone(), e.to_string())))
                    .ok(),
            };
            if let (Some(name), Some(req)) = (parsed_name, parsed_req) {
                tools.insert(name, req);
            }
        }
        let mut skills = BTreeMap::new();
        for (name, requirement) in raw_skills {
            let field = format!("skills.{name}");
            let parsed = PackageName::new(name.as_str())
                .map_err(|e| e.to_string())
                .and_then(|name| {
                    agentlang_core::names::parse_requirement(&requirement)
                        .map(|req| (name, req))
                        .map_err(|e| e.to_string())
                });
            match parsed {
                Ok((name, req)) => {
                    skills.insert(name, req);
                }
                Err(e) => errors.push(FieldError::new(field, e)),
            }
        }
        let lock = match lock {
            None => None,
            Some(value) => serde_json::from_value::<Lockfile>(value)
                .map_err(|e| errors.push(FieldError::new("lock", e.to_string())))
                .ok(),
        };
        let exclude_newer = match exclude_newer {
            None => None,
            Some(text) => ResolvedAt::parse(&text)
                .map(|t| t.unix_timestamp())
                .map_err(|e| errors.push(FieldError::new("exclude_newer", e.to_string())))
                .ok(),
        };
        if !errors.is_empty() {
            return Err(ServiceError::Validation(errors));
        }
        Ok(Self {
            tools,
            skills,
            models,
            lock,
            exclude_newer,
        })
    }

    /// From an agent.yaml: its registry tools and its models.
    pub fn from_agent_yaml(bytes: &[u8]) -> Result<Self, ServiceError> {
        let spec = parse_agent(bytes).map_err(|diags| {
            ServiceError::Validation(
                diags
                    .iter()
                    .map(|d| FieldError::new(d.path.clone(), d.message.clone()))
                    .collect(),
            )
        })?;
        Ok(Self {
            tools: spec.tool_requirements(),
            skills: spec.skill_requirements(),
            models: spec.model_names().map(str::to_owned).collect(),
            lock: None,
            exclude_newer: None,
        })
    }

    /// Every collection within its limit: what one request may make the
    /// resolver and the database do.
    pub fn check_limits(&self) -> Result<(), ServiceError> {
        check_count("tools", self.tools.len(), MAX_RESOLVE_TOOLS)?;
        check_count("skills", self.skills.len(), MAX_RESOLVE_SKILLS)?;
        check_count("models", self.models.len(), MAX_RESOLVE_MODELS)?;
        if let Some(lock) = &self.lock {
            check_lock_limits(lock)?;
        }
        Ok(())
    }
}

/// Every section of a lock within [`MAX_LOCK_ENTRIES`].
pub fn check_lock_limits(lock: &Lockfile) -> Result<(), ServiceError> {
    check_count("lock.tools", lock.tools.len(), MAX_LOCK_ENTRIES)?;
    check_count("lock.agents", lock.agents.len(), MAX_LOCK_ENTRIES)?;
    check_count("lock.models", lock.models.len(), MAX_LOCK_ENTRIES)?;
    check_count("lock.skills", lock.skills.len(), MAX_LOCK_ENTRIES)?;
    check_count("lock.interfaces", lock.interfaces.len(), MAX_LOCK_ENTRIES)?;
    check_count("lock.files", lock.files.len(), MAX_LOCK_ENTRIES)
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
    /// Every tool the solver looked up, found or not, in the answer or
    /// only in a version it rejected: what the resolution depends on, so a
    /// change to any of them drops it from the cache.
    reads: std::cell::RefCell<ToolReads>,
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
        self.reads.borrow_mut().insert(normalized.clone());
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

/// What the solver may choose from: every listed version but the
/// quarantined ones (which not even a lock's pin keeps).
fn entries_of(index: PackageIndex) -> Result<Vec<VersionEntry>, CorruptIndex> {
    index
        .versions
        .into_iter()
        .filter(|v| !v.quarantined)
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
                version: v.version.clone(),
                yanked: v.yanked,
                hash: v.sha256,
                dependencies,
                published_at: v.published_at,
                log_index: v.log_index.and_then(|i| u64::try_from(i).ok()),
            })
        })
        .collect()
}

/// The lock's `models:` entries from the models catalog, read in one query
/// (or from the cache); every unknown model is a field error.
async fn lock_models(
    registry: &Registry,
    generation: i64,
    names: &[String],
) -> Result<BTreeMap<ModelId, LockedModel>, ServiceError> {
    if names.is_empty() {
        return Ok(BTreeMap::new());
    }
    let catalog = match registry.index_cache.models() {
        Some(catalog) => catalog,
        None => {
            let catalog: Arc<HashMap<String, ModelRecord>> = Arc::new(
                registry
                    .db
                    .list_models()
                    .await?
                    .into_iter()
                    .map(|m| (m.name.clone(), m))
                    .collect(),
            );
            registry
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
        Err(ServiceError::Validation(errors))
    }
}

/// The lock's `skills:`: each skill picked alone ([`pick_skill`]: the
/// existing lock's pin while it fits, else the newest unyanked match),
/// from one batched read of their indexes. An unknown skill or one no
/// version of which fits is a field error (`skills.<name>`). With
/// `exclude_newer`, also the fitting versions held back as too young.
async fn lock_skills(
    registry: &Registry,
    skills: &BTreeMap<PackageName, VersionReq>,
    previous: Option<&Lockfile>,
    exclude_newer: Option<i64>,
) -> Result<(BTreeMap<PackageName, LockedSkill>, Vec<HeldBack>), ServiceError> {
    if skills.is_empty() {
        return Ok((BTreeMap::new(), Vec::new()));
    }
    let mut held_back = Vec::new();
    let names: Vec<PackageName> = skills.keys().cloned().collect();
    let mut indexes: HashMap<String, PackageIndex> = registry
        .db
        .package_indexes(Kind::Skill, &names)
        .await?
        .into_iter()
        .map(|index| (index.package.normalized_name.clone(), index))
        .collect();
    let pins = previous.map(Lockfile::skill_pins).unwrap_or_default();
    let mut locked = BTreeMap::new();
    let mut errors = Vec::new();
    for (name, requirement) in skills {
        let field = format!("skills.{name}");
        let Some(index) = indexes.remove(&name.normalized()) else {
            errors.push(FieldError::new(
                field,
                format!("no skill named {name} is published on this registry"),
            ));
            continue;
        };
        let entries = entries_of(index).map_err(ServiceError::internal)?;
        let pin = pins
            .iter()
            .find(|(n, _)| n.normalized() == name.normalized())
            .map(|(_, v)| v);
        held_back.extend(
            entries
                .iter()
                .filter(|e| !e.yanked && !e.old_enough(exclude_newer) && Some(&e.version) != pin)
                .filter(|e| requirement.matches(e.version.semver()))
                .map(|e| HeldBack {
                    name: name.clone(),
                    version: e.version.clone(),
                    published_at: e.published_at,
                }),
        );
        match pick_skill(requirement, pin, &entries, exclude_newer) {
            Some(entry) => {
                locked.insert(
                    name.clone(),
                    LockedSkill {
                        version: entry.version.clone(),
                        hash: entry.hash,
                        requirement: requirement.clone(),
                        log_index: entry.log_index,
                    },
                );
            }
            None => {
                let live: Vec<String> = entries
                    .iter()
                    .filter(|e| !e.yanked && e.old_enough(exclude_newer))
                    .map(|e| e.version.to_string())
                    .collect();
                errors.push(FieldError::new(
                    field,
                    format!(
                        "no published version of skill {name} satisfies {requirement} ({}: {})",
                        if exclude_newer.is_some() {
                            "unyanked and old enough"
                        } else {
                            "unyanked"
                        },
                        if live.is_empty() {
                            "none".to_owned()
                        } else {
                            live.join(", ")
                        }
                    ),
                ));
            }
        }
    }
    if errors.is_empty() {
        Ok((locked, held_back))
    } else {
        Err(ServiceError::Validation(errors))
    }
}

/// Resolves `input` into an `agent.lock` naming this registry. Tools and
/// files of a given lock are carried over where still valid.
pub async fn resolve_lock(
    registry: &Registry,
    client: &ClientAddr,
    input: ResolveInput,
) -> Result<Lockfile, ServiceError> {
    let generation = registry
        .index_cache
        .current_generation(&registry.db)
        .await?;
    resolve_lock_at(
        registry,
        client,
        generation,
        store::now(),
        input,
        |lock, _| lock.clone(),
    )
    .await
}

/// [`resolve_lock`] at a generation the caller read, with `resolved_at`
/// given in Unix seconds, answering what `render` makes of the lock and
/// the versions held back as too young (sorted by name and version). A
/// fresh resolution's tools are cached after `render` has read them, so
/// they are moved there rather than copied. `client` solves within its
/// share of the solver threads.
pub async fn resolve_lock_at<R>(
    registry: &Registry,
    client: &ClientAddr,
    generation: i64,
    resolved_at: i64,
    input: ResolveInput,
    render: impl FnOnce(&Lockfile, &[HeldBack]) -> R,
) -> Result<R, ServiceError> {
    input.check_limits()?;
    // One deadline for the whole resolution, the models' read included.
    let deadline = Instant::now() + registry.settings.resolve_timeout;
    let models = tokio::time::timeout_at(
        deadline.into(),
        lock_models(registry, generation, &input.models),
    )
    .await
    .map_err(|_| timed_out(registry))??;
    let (skills, mut held_back) = tokio::time::timeout_at(
        deadline.into(),
        lock_skills(
            registry,
            &input.skills,
            input.lock.as_ref(),
            input.exclude_newer,
        ),
    )
    .await
    .map_err(|_| timed_out(registry))??;
    // Interfaces first: each becomes a requirement on its provider, at
    // exactly the version picked (docs/resolution.md, Interfaces).
    let picks = tokio::time::timeout_at(
        deadline.into(),
        crate::interfaces::pick(
            registry,
            generation,
            &input.tools,
            input.lock.as_ref(),
            input.exclude_newer,
        ),
    )
    .await
    .map_err(|_| timed_out(registry))??;
    let mut requirements = input.tools.clone();
    for (interface, pick) in &picks.interfaces {
        requirements.remove(interface);
        let exact = VersionReq::parse(&format!("={}", pick.version.semver()))
            .map_err(ServiceError::internal)?;
        requirements.insert(pick.tool.clone(), Some(exact));
    }
    let request = Request {
        requirements,
        pins: input
            .lock
            .as_ref()
            .map(Lockfile::tool_pins)
            .unwrap_or_default(),
        exclude_newer: input.exclude_newer,
    };
    // A cutoff moves with the clock, so such a request is never asked
    // twice: neither looked up nor kept.
    let cached = match request.exclude_newer {
        None => registry.index_cache.resolution(generation, &request),
        Some(_) => None,
    };
    let (tools, fresh) = match cached {
        Some(tools) => (LockTools::clone(&tools), None),
        None => {
            let ((tools, tools_held_back), reads) =
                solve(registry, client, generation, &request, deadline).await?;
            held_back.extend(tools_held_back);
            let keep = request.exclude_newer.is_none();
            (tools, keep.then_some((request, reads)))
        }
    };
    held_back
        .sort_by(|a, b| (a.name.normalized(), &a.version).cmp(&(b.name.normalized(), &b.version)));
    registry.metrics.resolves.inc();

    let resolved_at = ResolvedAt::from_unix(resolved_at).map_err(ServiceError::internal)?;
    let mut lock = Lockfile::new(resolved_at, Some(registry.public_url.clone()));
    lock.tools = tools;
    // A provider is locked with the agent's requirement on the interface,
    // not the exact version it was resolved at (unless the agent also
    // requires it by name).
    for (interface, pick) in picks.interfaces {
        let direct = input
            .tools
            .keys()
            .any(|n| n.normalized() == pick.tool.normalized());
        if !direct && let Some(tool) = lock.tools.get_mut(&pick.tool) {
            tool.requirement = Some(
                input
                    .tools
                    .get(&interface)
                    .cloned()
                    .flatten()
                    .unwrap_or(VersionReq::STAR),
            );
        }
        lock.interfaces.insert(interface, pick.tool);
    }
    lock.models = models;
    lock.skills = skills;
    if let Some(previous) = input.lock {
        lock.agents = previous.agents;
        lock.files = previous.files;
    }
    let rendered = render(&lock, &held_back);
    if let Some((request, reads)) = fresh {
        registry.index_cache.put_resolution(
            generation,
            request,
            Arc::new(std::mem::take(&mut lock.tools)),
            reads,
        );
    }
    Ok(rendered)
}

/// `POST /api/v1/resolve` as sent: the lock rendered in the form the
/// request asked for (`key.json_answer`: JSON, else YAML), answered from
/// memory when the same request was answered at this generation and
/// second. `parse` reads the request's body into its input only when it
/// must be resolved.
pub async fn resolve_answer(
    registry: &Registry,
    client: &ClientAddr,
    key: RenderKey,
    parse: impl FnOnce(&[u8]) -> Result<ResolveInput, ServiceError>,
) -> Result<ResolveAnswer, ServiceError> {
    let generation = registry
        .index_cache
        .current_generation(&registry.db)
        .await?;
    let now = store::now();
    if let Some(answer) = registry.index_cache.rendered(generation, now, &key) {
        registry.metrics.resolves.inc();
        return Ok(answer);
    }
    let input = parse(&key.body)?;
    let json_answer = key.json_answer;
    let answer = resolve_lock_at(
        registry,
        client,
        generation,
        now,
        input,
        |lock, held_back| {
            let body = if json_answer {
                serde_json::to_vec(lock).map_err(ServiceError::internal)
            } else {
                lock.to_yaml()
                    .map(String::into_bytes)
                    .map_err(ServiceError::internal)
            };
            body.map(|body| ResolveAnswer {
                body: body.into(),
                held_back: held_back.into(),
            })
        },
    )
    .await??;
    registry
        .index_cache
        .put_rendered(generation, now, key, answer.clone());
    Ok(answer)
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
    registry: &Registry,
    generation: i64,
    request: &Request,
    deadline: Instant,
) -> Result<(), ServiceError> {
    let cache = &registry.index_cache;
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
                registry.db.package_indexes(Kind::Tool, &to_read),
            )
            .await
            .map_err(|_| timed_out(registry))??;
            registry.metrics.index_reads.inc();
            let mut found: HashMap<String, PackageIndex> = indexes
                .into_iter()
                .map(|index| (index.package.normalized_name.clone(), index))
                .collect();
            for name in to_read {
                let normalized = name.normalized();
                let read = match found.remove(&normalized) {
                    Some(index) => {
                        Some(Arc::new(entries_of(index).map_err(ServiceError::internal)?))
                    }
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
    registry: &Registry,
    client: &ClientAddr,
    generation: i64,
    request: &Request,
    deadline: Instant,
) -> Result<((LockTools, Vec<HeldBack>), ToolReads), ServiceError> {
    let (solved, reads) =
        match run_solver(registry, client, generation, request, deadline, true).await? {
            (Err(ResolveError::Source { source, .. }), _) if source.is::<NotCached>() => {
                prefetch(registry, generation, request, deadline).await?;
                run_solver(registry, client, generation, request, deadline, false).await?
            }
            solved => solved,
        };
    // A quarantined tool is refused by name (docs/statuses.md).
    let picked = solved.as_ref().ok().map(|s| &s.0);
    crate::statuses::refuse_quarantined_tools(registry, &reads, picked).await?;
    solved.map(|solved| (solved, reads)).map_err(|e| match e {
        ResolveError::Unsatisfiable {
            explanation,
            conflicts,
        } => ServiceError::Unsatisfiable {
            explanation,
            conflicts: serde_json::to_value(conflicts).unwrap_or_default(),
        },
        ResolveError::UnknownPackage { name, required_by } => {
            ServiceError::Validation(vec![FieldError::new(
                format!("tools.{name}"),
                format!(
                    "no tool named {name} is published on this registry, and no tool provides an interface of that name (required by {required_by})"
                ),
            )])
        }
        ResolveError::Cancelled => timed_out(registry),
        e @ ResolveError::TooComplex => ServiceError::ResolveTooComplex(e.to_string()),
        other => ServiceError::internal(other),
    })
}

/// One run of the solver on a solver thread, over the cache alone
/// (`cache_only`) or reading misses from the database. The resolution
/// becomes the lock's tools there too, while it is in that core's cache
/// and off the async workers. Answers with the tools the solver looked up.
async fn run_solver(
    registry: &Registry,
    client: &ClientAddr,
    generation: i64,
    request: &Request,
    deadline: Instant,
    cache_only: bool,
) -> Result<(Result<(LockTools, Vec<HeldBack>), ResolveError>, ToolReads), ServiceError> {
    let source = IndexSource {
        db: registry.db.clone(),
        cache: Arc::clone(&registry.index_cache),
        generation,
        runtime: tokio::runtime::Handle::current(),
        cache_only,
        reads: std::cell::RefCell::default(),
    };
    let cancel = Cancel::with_deadline(deadline);
    let request = request.clone();
    registry
        .index_cache
        .solvers
        .run(client.as_str(), deadline.into(), move || {
            let solved = resolve(&source, &request, &cancel).map(|mut resolution| {
                let held_back = std::mem::take(&mut resolution.held_back);
                (resolution.into_lock_tools(), held_back)
            });
            (solved, source.reads.into_inner())
        })
        .await
        .map_err(ServiceError::internal)?
        .ok_or_else(|| timed_out(registry))
}

/// The answer when a resolution runs past the configured deadline.
fn timed_out(registry: &Registry) -> ServiceError {
    let timeout = registry.settings.resolve_timeout;
    ServiceError::ResolveTimeout(u64::try_from(timeout.as_millis()).unwrap_or(u64::MAX))
}
