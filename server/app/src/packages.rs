//! Reading packages and versions, the index, yanking: the records every
//! interface (HTTP API, catalog, agent protocols) shows.

use std::{
    collections::{BTreeMap, HashMap},
    sync::Mutex,
    time::Duration,
};

use agentlang_core::{
    Kind, MemberPath, PackageName, Version,
    container::{self, Container, Limits},
    package::Members,
    trust::AgentTrust,
};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::ToSchema;

use crate::{
    blobs::Sha256Digest,
    common::names::Scope,
    common::rfc3339,
    db::{
        Db,
        packages::{PackageRecord, VersionRecord, YankChange},
    },
    error::{ApiError, FieldError},
    service::{
        accounts::Actor,
        cache::{self, Rendered, RenderedKey},
        tlog,
        tokens::Authenticated,
    },
    state::AppState,
};

/// Who signed a version, and whether that key has since been revoked
/// (versions signed before a revocation stay valid).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ToSchema)]
pub struct Signer {
    pub key_id: String,
    /// RFC 3339; `null` while the key is in force.
    pub revoked_at: Option<String>,
}

/// One published version.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct VersionView {
    #[schema(value_type = String, example = "tool")]
    pub kind: Kind,
    /// The package's name as first published.
    pub name: String,
    pub version: String,
    /// Hex SHA-256 of the container.
    pub sha256: String,
    /// The same digest as the index and lockfiles spell it: `sha256:<hex>`.
    pub hash: String,
    /// Bytes of the container.
    pub size: i64,
    /// The container's manifest.json.
    #[schema(value_type = Object)]
    pub manifest: Value,
    /// The parsed agent.yaml or tool.yaml.
    #[schema(value_type = Object)]
    pub spec: Value,
    /// The agent's agent.lock, parsed; agents only.
    #[schema(value_type = Option<Object>)]
    pub lockfile: Option<Value>,
    /// Tool name to requirement.
    pub dependencies: BTreeMap<String, String>,
    pub signer: Option<Signer>,
    pub yanked: bool,
    pub yank_reason: Option<String>,
    /// Username of the account that published it.
    pub publisher: Option<String>,
    /// RFC 3339.
    pub published_at: String,
    pub downloads: i64,
    /// What the agent can do: effective capabilities with their sources,
    /// MCP servers (environment variable names, never values), bash and
    /// HTTP tools, locked tools, crew, context, constraints and the render
    /// tools its UI generates. Agents only, and only in the record of one
    /// version (`GET /api/v1/agents/{name}/{version}`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub trust: Option<AgentTrust>,
    /// The transparency-log entry that recorded the publish (in a yank or
    /// unyank answer: the entry that recorded that change). Absent only
    /// until the start-up backfill logs versions published before the log.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub log: Option<LogRef>,
}

/// Where a change is in the transparency log (`GET /log/tile/entries/...`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, ToSchema)]
pub struct LogRef {
    /// The entry's index: the leaf's position in the Merkle tree.
    pub index: i64,
}

/// A package with its versions, newest first.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct PackageView {
    #[schema(value_type = String, example = "tool")]
    pub kind: Kind,
    pub name: String,
    pub description: String,
    /// RFC 3339.
    pub created_at: String,
    /// RFC 3339.
    pub updated_at: String,
    /// Downloads of every version.
    pub downloads: i64,
    pub versions: Vec<VersionView>,
}

/// One version in the index.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ToSchema)]
pub struct IndexEntry {
    pub version: String,
    /// `sha256:<hex>` of the container.
    pub hash: String,
    pub yanked: bool,
    /// Tool name to requirement.
    pub dependencies: BTreeMap<String, String>,
}

/// Every live version of a package, oldest first, for client-side
/// resolution.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ToSchema)]
pub struct PackageIndexView {
    pub name: String,
    #[schema(value_type = String, example = "tool")]
    pub kind: Kind,
    pub versions: Vec<IndexEntry>,
}

pub async fn find_package(
    state: &AppState,
    kind: Kind,
    name: &PackageName,
) -> Result<PackageRecord, ApiError> {
    state
        .db
        .find_package(kind, name)
        .await?
        .ok_or_else(|| ApiError::NotFound(format!("{kind} {name}")))
}

/// A live version of a package, or 404.
pub async fn find_version(
    state: &AppState,
    package: &PackageRecord,
    version: &Version,
) -> Result<VersionRecord, ApiError> {
    state
        .db
        .find_version(package.id, version)
        .await?
        .filter(|v| v.deleted_at.is_none())
        .ok_or_else(|| ApiError::NotFound(format!("{} {} {version}", package.kind, package.name)))
}

/// Signers and publishers of a set of versions, read in two queries
/// however many versions there are.
#[derive(Default)]
struct Lookups {
    signers: HashMap<String, Signer>,
    publishers: HashMap<i64, String>,
}

impl Lookups {
    async fn of(state: &AppState, records: &[VersionRecord]) -> Result<Self, ApiError> {
        let mut key_ids: Vec<String> = records
            .iter()
            .filter_map(|r| r.signer_key_id.clone())
            .collect();
        key_ids.sort();
        key_ids.dedup();
        let mut account_ids: Vec<i64> = records.iter().map(|r| r.published_by).collect();
        account_ids.sort_unstable();
        account_ids.dedup();
        let signers = state
            .db
            .signing_keys_by_ids(&key_ids)
            .await?
            .into_iter()
            .map(|k| {
                let signer = Signer {
                    key_id: k.key_id.clone(),
                    revoked_at: k.revoked_at.map(rfc3339),
                };
                (k.key_id, signer)
            })
            .collect();
        let publishers = state
            .db
            .usernames_by_ids(&account_ids)
            .await?
            .into_iter()
            .collect();
        Ok(Self {
            signers,
            publishers,
        })
    }

    fn view(
        &self,
        kind: Kind,
        package: &PackageRecord,
        record: VersionRecord,
        dependencies: BTreeMap<String, String>,
    ) -> VersionView {
        let signer = record
            .signer_key_id
            .as_ref()
            .and_then(|id| self.signers.get(id).cloned());
        VersionView {
            kind,
            name: package.name.clone(),
            hash: format!("sha256:{}", record.sha256),
            sha256: record.sha256,
            version: record.version,
            size: record.size,
            manifest: record.manifest.0,
            spec: record.spec.0,
            lockfile: record.lockfile.map(|l| l.0),
            dependencies,
            signer,
            yanked: record.yanked,
            yank_reason: record.yank_reason,
            publisher: self.publishers.get(&record.published_by).cloned(),
            published_at: rfc3339(record.published_at),
            downloads: record.downloads,
            trust: None,
            log: record.log_index.map(|index| LogRef { index }),
        }
    }
}

fn kind_of(package: &PackageRecord) -> Result<Kind, ApiError> {
    package
        .kind
        .parse()
        .map_err(|e| ApiError::internal(anyhow::anyhow!("packages.kind: {e}")))
}

/// The record of one version of a known package.
pub async fn version_view(
    state: &AppState,
    package: &PackageRecord,
    record: VersionRecord,
) -> Result<VersionView, ApiError> {
    let dependencies = state
        .db
        .list_dependencies(record.id)
        .await?
        .into_iter()
        .filter(|d| d.kind == Kind::Tool)
        .map(|d| (d.name.to_string(), d.requirement.to_string()))
        .collect();
    let lookups = Lookups::of(state, std::slice::from_ref(&record)).await?;
    let trust = ContainerExtras::stored_trust(record.extras.as_ref().map(|e| &e.0));
    let mut view = lookups.view(kind_of(package)?, package, record, dependencies);
    view.trust = trust;
    Ok(view)
}

/// `GET /api/v1/{kind}/{name}/{version}`.
pub async fn get_version(
    state: &AppState,
    kind: Kind,
    name: &PackageName,
    version: &Version,
) -> Result<VersionView, ApiError> {
    let package = find_package(state, kind, name).await?;
    let record = find_version(state, &package, version).await?;
    version_view(state, &package, record).await
}

/// `GET /api/v1/{kind}/{name}/{version}` as sent, rendered once per
/// generation (and download-count interval).
pub async fn version_record(
    state: &AppState,
    kind: Kind,
    name: &PackageName,
    version: &Version,
) -> Result<Rendered, ApiError> {
    let key = RenderedKey::VersionRecord(kind, name.normalized(), version.clone());
    cache::rendered(state, key, || async {
        Rendered::json(&get_version(state, kind, name, version).await?)
    })
    .await
}

/// `GET /api/v1/{kind}/{name}` as sent, rendered once per generation (and
/// download-count interval).
pub async fn package_record(
    state: &AppState,
    kind: Kind,
    name: &PackageName,
) -> Result<Rendered, ApiError> {
    let key = RenderedKey::PackageRecord(kind, name.normalized());
    cache::rendered(state, key, || async {
        Rendered::json(&get_package(state, kind, name).await?)
    })
    .await
}

/// `GET /api/v1/{kind}/{name}`: the package and its live versions, newest
/// first.
pub async fn get_package(
    state: &AppState,
    kind: Kind,
    name: &PackageName,
) -> Result<PackageView, ApiError> {
    let package = find_package(state, kind, name).await?;
    let records = state.db.list_versions(package.id).await?;
    // One query for every version's dependency edges.
    let mut edges: HashMap<i64, BTreeMap<String, String>> = state
        .db
        .package_index(kind, name)
        .await?
        .map(|index| {
            index
                .versions
                .into_iter()
                .map(|v| (v.version_id, v.dependencies))
                .collect()
        })
        .unwrap_or_default();
    let lookups = Lookups::of(state, &records).await?;
    let versions: Vec<VersionView> = records
        .into_iter()
        .map(|record| {
            let deps = edges.remove(&record.id).unwrap_or_default();
            lookups.view(kind, &package, record, deps)
        })
        .collect();
    Ok(PackageView {
        kind,
        downloads: versions.iter().map(|v| v.downloads).sum(),
        name: package.name,
        description: package.description,
        created_at: rfc3339(package.created_at),
        updated_at: rfc3339(package.updated_at),
        versions,
    })
}

/// `GET /api/v1/index/{kind}/{name}`.
pub async fn get_index(
    state: &AppState,
    kind: Kind,
    name: &PackageName,
) -> Result<PackageIndexView, ApiError> {
    let index = state
        .db
        .package_index(kind, name)
        .await?
        .ok_or_else(|| ApiError::NotFound(format!("{kind} {name}")))?;
    Ok(PackageIndexView {
        name: index.package.name,
        kind,
        versions: index
            .versions
            .into_iter()
            .map(|v| IndexEntry {
                version: v.version,
                hash: format!("sha256:{}", v.sha256),
                yanked: v.yanked,
                dependencies: v.dependencies,
            })
            .collect(),
    })
}

/// Longest yank reason kept, in characters.
pub const MAX_YANK_REASON_CHARS: usize = 500;

/// Yanks (`Some(reason)`, which may be empty) or unyanks (`None`) a version:
/// owners only, with a token carrying the `yank` scope for the package.
pub async fn set_yanked(
    state: &AppState,
    auth: &Authenticated,
    kind: Kind,
    name: &PackageName,
    version: &Version,
    yank: Option<&str>,
) -> Result<VersionView, ApiError> {
    auth.require(Scope::Yank)?;
    auth.require_package(name)?;
    let package = find_package(state, kind, name).await?;
    let reason = yank.map(str::trim).filter(|r| !r.is_empty());
    let log_index = set_yanked_by_owner(
        state,
        auth.actor(),
        &package,
        version,
        yank.is_some(),
        reason,
    )
    .await?;
    let record = find_version(state, &package, version).await?;
    let mut view = version_view(state, &package, record).await?;
    view.log = Some(LogRef { index: log_index });
    Ok(view)
}

/// The rule of a yank, for the API and the catalog: the account must own
/// the package, and a reason is at most 500 characters. The change and its
/// log entry are one write; returns the entry's index.
pub async fn set_yanked_by_owner(
    state: &AppState,
    actor: Actor<'_>,
    package: &PackageRecord,
    version: &Version,
    yanked: bool,
    reason: Option<&str>,
) -> Result<i64, ApiError> {
    crate::service::owners::require_owner(state, actor.account_id, package).await?;
    if reason.is_some_and(|r| r.chars().count() > MAX_YANK_REASON_CHARS) {
        return Err(ApiError::Validation(vec![FieldError::new(
            "reason",
            format!("must be at most {MAX_YANK_REASON_CHARS} characters"),
        )]));
    }
    let entry = tlog::yank_entry(
        &package.kind,
        &package.name,
        version,
        yanked,
        reason,
        actor.username,
    );
    let change = YankChange {
        yanked,
        reason,
        log_entry: &entry,
    };
    let Some(log_index) = state.db.set_yanked(package.id, version, &change).await? else {
        return Err(ApiError::NotFound(format!(
            "{} {} {version}",
            package.kind, package.name
        )));
    };
    state.tlog.appended();
    tracing::info!(kind = %package.kind, package = %package.name, %version, yanked, account = %actor.username, log_index, "yank changed");
    Ok(log_index)
}

/// What a download serves: where the blob is and what to call it.
#[derive(Debug, Clone)]
pub struct Download {
    pub version_id: i64,
    pub digest: Sha256Digest,
    /// Bytes of the container, as recorded at publish.
    pub size: u64,
    /// `attachment; filename="name@version.agent"` (or `.tool`).
    pub disposition: String,
    /// `"<sha256 hex>"`, the `ETag` of every answer: written once.
    pub etag: String,
}

impl crate::service::cache::Weight for Download {
    fn weight(&self) -> u64 {
        (self.disposition.len() + self.etag.len() + 128) as u64
    }
}

/// Where versions' containers are: (kind, normalized name, version) to its
/// [`Download`], at a registry generation.
pub type DownloadTargets =
    crate::service::cache::GenerationCache<(Kind, String, Version), Download>;

pub fn download_targets() -> DownloadTargets {
    // About 100,000 versions' worth.
    crate::service::cache::GenerationCache::new(100_000, 16 * 1024 * 1024, None)
}

/// Finds the container of a version (yanked ones too: existing lockfiles
/// still fetch them). A published version's container never changes, so
/// once found it is a lookup in memory, checked against the newest
/// generation this replica has read rather than a fresh read: only a
/// deletion could make it wrong, and the generation is read at least every
/// few seconds (the download-count flush reads it), so a deleted version
/// stops downloading within that. A version not found is always looked up.
pub async fn find_download(
    state: &AppState,
    kind: Kind,
    name: &PackageName,
    version: &Version,
) -> Result<Download, ApiError> {
    let key = (kind, name.normalized(), version.clone());
    let newest = state.index_cache.newest_generation();
    if let Some(hit) = state.download_targets.get(newest, &key) {
        return Ok(hit);
    }
    // Boxed: the database reads' futures are kilobytes, and unboxed they
    // would size (and be copied with) every download's future, hit or not.
    Box::pin(read_download(state, kind, name, version, key)).await
}

/// [`find_download`]'s miss: the target read from the database and cached.
async fn read_download(
    state: &AppState,
    kind: Kind,
    name: &PackageName,
    version: &Version,
    key: (Kind, String, Version),
) -> Result<Download, ApiError> {
    let generation = state.index_cache.current_generation(&state.db).await?;
    let package = find_package(state, kind, name).await?;
    let record = find_version(state, &package, version).await?;
    let digest = record
        .sha256
        .parse()
        .map_err(|e| ApiError::internal(anyhow::anyhow!("versions.sha256: {e}")))?;
    let download = Download {
        version_id: record.id,
        etag: format!("\"{digest}\""),
        digest,
        size: u64::try_from(record.size).unwrap_or(0),
        disposition: format!(
            "attachment; filename=\"{}@{}.{}\"",
            package.name,
            record.version,
            kind.extension()
        ),
    };
    state
        .download_targets
        .put(generation, key, download.clone());
    Ok(download)
}

/// Downloads counted in memory and written in one transaction every few
/// seconds, so a download is a map increment, not a write: under a flood
/// of downloads the database sees one small transaction per interval. Each
/// replica counts its own; the totals add up in the database. Counts not
/// yet flushed are lost if the process is killed (at most one interval's).
#[derive(Debug, Default)]
pub struct DownloadCounter {
    pending: Mutex<HashMap<i64, i64>>,
}

/// How often counted downloads are written.
pub const DOWNLOAD_FLUSH_INTERVAL: Duration = Duration::from_secs(5);

/// Distinct versions counted before a flush is due anyway: bounds the map.
const MAX_PENDING_VERSIONS: usize = 100_000;

impl DownloadCounter {
    fn pending(&self) -> std::sync::MutexGuard<'_, HashMap<i64, i64>> {
        self.pending
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Counts one download of a version. Past the map's bound the count is
    /// dropped (and logged): a count is not worth unbounded memory.
    pub fn record(&self, version_id: i64) {
        let mut pending = self.pending();
        if pending.len() >= MAX_PENDING_VERSIONS && !pending.contains_key(&version_id) {
            tracing::warn!(
                version_id,
                "download not counted: too many versions pending"
            );
            return;
        }
        *pending.entry(version_id).or_default() += 1;
    }

    /// Writes every pending count and says how many versions had some. On
    /// failure the counts are kept for the next flush.
    pub async fn flush(&self, db: &Db) -> Result<usize, sqlx::Error> {
        let counts: Vec<(i64, i64)> = self.pending().drain().collect();
        if counts.is_empty() {
            return Ok(0);
        }
        let day = time::OffsetDateTime::now_utc().date().to_string();
        if let Err(e) = db.record_downloads(&counts, &day).await {
            let mut pending = self.pending();
            for (version_id, count) in counts {
                *pending.entry(version_id).or_default() += count;
            }
            return Err(e);
        }
        Ok(counts.len())
    }
}

/// Writes the downloads this replica counted; when there were some, its
/// rendered records and pages are rendered again, so they show the new
/// counts at once (other replicas' within [`cache::RENDERED_MAX_AGE`]).
pub async fn flush_downloads(state: &AppState) -> Result<(), sqlx::Error> {
    if state.downloads.flush(&state.db).await? > 0 {
        state.rendered.clear();
    }
    Ok(())
}

/// Flushes counted downloads every [`DOWNLOAD_FLUSH_INTERVAL`] until the
/// task is stopped.
pub async fn flush_downloads_periodically(state: actix_web::web::Data<AppState>) {
    let mut ticks = tokio::time::interval(DOWNLOAD_FLUSH_INTERVAL);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        ticks.tick().await;
        if let Err(e) = flush_downloads(&state).await {
            tracing::warn!(error = %e, "cannot write download counts; kept for the next flush");
        }
        // Keeps what downloads check their cache against no older than
        // this interval, even when only downloads arrive.
        if let Err(e) = state.index_cache.current_generation(&state.db).await {
            tracing::warn!(error = %e, "cannot read the registry generation");
        }
    }
}

/// What pages show from a container besides its definition: skills,
/// co-located subagents, ux.yaml's hints, a tool's README. Computed at
/// publish from the members the reader keeps, and stored with the version
/// (`versions.extras`), so no page reads a blob.
#[derive(Debug, Clone, Default, PartialEq, Serialize, serde::Deserialize)]
#[serde(default)]
pub struct ContainerExtras {
    /// Skill name to (description, allowed tools).
    pub skills: BTreeMap<String, (String, Vec<String>)>,
    /// Co-located subagents: (name, description), in path order.
    pub subagents: Vec<(String, Option<String>)>,
    pub suggestions: Vec<String>,
    pub integrations: Vec<(String, Option<String>)>,
    pub readme: Option<String>,
    /// What the agent can do (`core::trust`), from the package validated at
    /// publish and its locked tools; `None` for a tool or a protocol.
    pub trust: Option<AgentTrust>,
}

impl ContainerExtras {
    /// From a verified container's kept members. Lenient: a member that no
    /// longer parses is left out.
    pub fn of(kind: Kind, container: &Container) -> Self {
        let mut extras = Self::default();
        for (path, member) in container.kept_members() {
            let p = path.as_str();
            if kind == Kind::Tool {
                if p == "README.md" {
                    extras.readme = std::str::from_utf8(member).ok().map(str::to_owned);
                }
                continue;
            }
            if p.starts_with("skills/") && p.ends_with("/SKILL.md") {
                if let Ok(skill) = agentlang_core::skill::parse_skill(member) {
                    extras.skills.insert(
                        skill.name.to_string(),
                        (skill.description, skill.allowed_tools),
                    );
                }
            } else if p == "ux.yaml" {
                if let Ok(ux) = agentlang_core::ux::parse_ux(member) {
                    extras.suggestions = ux.suggestions;
                    extras.integrations = ux
                        .integrations
                        .into_iter()
                        .map(|i| (i.name, i.website))
                        .collect();
                }
            } else if is_subagent_path(path)
                && let Ok(spec) = agentlang_core::agent::parse_subagent(member)
            {
                extras
                    .subagents
                    .push((spec.name.to_string(), spec.description));
            }
        }
        extras
    }

    pub fn with_trust(mut self, trust: AgentTrust) -> Self {
        self.trust = Some(trust);
        self
    }

    /// Only the trust picture of stored extras, without reading the rest
    /// (a README may be large).
    pub fn stored_trust(stored: Option<&Value>) -> Option<AgentTrust> {
        #[derive(serde::Deserialize)]
        struct TrustOnly {
            trust: Option<AgentTrust>,
        }
        stored
            .and_then(|v| TrustOnly::deserialize(v).ok())
            .and_then(|t| t.trust)
    }

    /// As stored: JSON, or the empty extras for a version whose extras are
    /// not computed yet.
    pub fn from_stored(stored: Option<&Value>) -> Self {
        stored
            .and_then(|v| serde_json::from_value(v.clone()).ok())
            .unwrap_or_default()
    }

    /// The highest risk of the agent's effective capabilities, as the
    /// `versions.max_risk` column holds it.
    pub fn max_risk(&self) -> Option<&'static str> {
        self.trust
            .as_ref()
            .and_then(|t| t.max_risk)
            .map(|r| r.as_str())
    }

    pub fn to_stored(&self) -> Value {
        serde_json::to_value(self).unwrap_or_default()
    }
}

/// Subagent files by the package's discovery rule: YAML outside `skills/`
/// and `context/` other than the root's known files.
fn is_subagent_path(path: &MemberPath) -> bool {
    let p = path.as_str();
    (p.ends_with(".yaml") || p.ends_with(".yml"))
        && !["agent.yaml", "prompt.yaml", "ux.yaml"].contains(&p)
        && !p.starts_with("skills/")
        && !p.starts_with("context/")
}

/// Versions published before extras were stored get them here: each one's
/// blob is read once, in the background after start-up, one at a time, so
/// no request ever waits for it. Replicas may overlap; the result is the
/// same.
pub async fn backfill_extras(state: actix_web::web::Data<AppState>) {
    const BATCH: i64 = 50;
    loop {
        let pending = match state.db.versions_without_extras(BATCH).await {
            Ok(pending) => pending,
            Err(e) => {
                tracing::warn!(error = %e, "cannot list versions without extras");
                return;
            }
        };
        if pending.is_empty() {
            return;
        }
        for (id, kind, sha256) in pending {
            let extras = match (kind.parse::<Kind>(), sha256.parse::<Sha256Digest>()) {
                (Ok(kind), Ok(digest)) => match state.blobs.get(&digest).await {
                    Ok(Some(bytes)) => {
                        let read = actix_web::web::block(move || {
                            let c = container::read(bytes.as_ref(), &Limits::default()).ok()?;
                            let extras = ContainerExtras::of(kind, &c);
                            let pkg = (kind == Kind::Agent)
                                .then(|| {
                                    let members = Members::from_container(&c);
                                    agentlang_core::package::validate_agent(&members).ok()
                                })
                                .flatten();
                            Some((extras, pkg, c.manifest().signer().to_string()))
                        })
                        .await
                        .ok()
                        .flatten();
                        match read {
                            Some((extras, Some(pkg), signer)) => {
                                match super::trust::agent_trust(&state.db, &pkg, &signer).await {
                                    Ok(trust) => extras.with_trust(trust),
                                    Err(e) => {
                                        tracing::warn!(error = %e, "cannot read locked tools for a version's trust");
                                        return;
                                    }
                                }
                            }
                            Some((extras, None, _)) => extras,
                            None => ContainerExtras::default(),
                        }
                    }
                    // A missing blob has nothing to show; remember that.
                    Ok(None) => ContainerExtras::default(),
                    Err(e) => {
                        tracing::warn!(error = %e, version_id = id, "cannot read a container for its extras");
                        return;
                    }
                },
                _ => ContainerExtras::default(),
            };
            let stored = extras.to_stored();
            if let Err(e) = state
                .db
                .set_version_extras(id, &stored, extras.max_risk())
                .await
            {
                tracing::warn!(error = %e, "cannot store a version's extras");
                return;
            }
        }
    }
}
