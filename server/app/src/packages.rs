//! Reading packages and versions, the index, yanking: the records every
//! interface (HTTP API, catalog, agent protocols) shows.

use std::collections::BTreeMap;

use agentlang_core::{
    Kind, MemberPath, PackageName, Username, Version,
    container::{self, Container, Limits},
    crypt::PromptKeyId,
    grants::PromptMode,
    package::Members,
    provenance::Evidence,
    signing::KeyId,
    trust::AgentTrust,
};
use serde::{Deserialize, Serialize};
use serde_json::{Value, value::RawValue};

use crate::{
    FieldError, Registry, ServiceError,
    accounts::Actor,
    cache::{self, Rendered, RenderedKey},
    rate_limits::{Bucket, account_budget},
    statuses::StatusView,
    tlog,
    tokens::Authenticated,
};
use agentlang_core::digest::Sha256Digest;
use store::{
    names::Scope, packages::YankChange, records::VersionDetail, stored_answers::Answer,
    time::rfc3339,
};

pub use crate::downloads::{Download, DownloadCounter, DownloadTargets};
pub use store::{
    blobs::BlobBody,
    packages::{PackageRecord, VersionRecord},
};

/// Who signed a version, and whether that key has since been revoked
/// (versions signed before a revocation stay valid).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Signer {
    #[cfg_attr(feature = "openapi", schema(value_type = String))]
    pub key_id: KeyId,
    /// RFC 3339; `null` while the key is in force.
    pub revoked_at: Option<String>,
}

/// One published version.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct VersionView {
    #[cfg_attr(feature = "openapi", schema(value_type = String, example = "tool"))]
    pub kind: Kind,
    /// The package's name as first published.
    #[cfg_attr(feature = "openapi", schema(value_type = String))]
    pub name: PackageName,
    #[cfg_attr(feature = "openapi", schema(value_type = String))]
    pub version: Version,
    /// Hex SHA-256 of the container.
    #[cfg_attr(feature = "openapi", schema(value_type = String))]
    pub sha256: Sha256Digest,
    /// The same digest as the index and lockfiles spell it: `sha256:<hex>`.
    pub hash: String,
    /// Bytes of the container.
    pub size: i64,
    /// The container's manifest.json.
    #[cfg_attr(feature = "openapi", schema(value_type = Object))]
    pub manifest: Box<RawValue>,
    /// The parsed agent.yaml or tool.yaml.
    #[cfg_attr(feature = "openapi", schema(value_type = Object))]
    pub spec: Box<RawValue>,
    /// The agent's agent.lock, parsed; agents only.
    #[cfg_attr(feature = "openapi", schema(value_type = Option<Object>))]
    pub lockfile: Option<Box<RawValue>>,
    /// Tool name to requirement.
    pub dependencies: BTreeMap<String, String>,
    pub signer: Option<Signer>,
    pub yanked: bool,
    pub yank_reason: Option<String>,
    /// The version's own status when not `active` (docs/statuses.md); the
    /// package's, in its record and index, applies to every version.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<StatusView>,
    /// Username of the account that published it.
    #[cfg_attr(feature = "openapi", schema(value_type = Option<String>))]
    pub publisher: Option<Username>,
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
    /// Agents only: `open` (prompt.yaml in plaintext: anyone who downloads
    /// it can read and run it) or `sealed` (prompt.yaml.enc: only its
    /// owners and the accounts they grant its key to can run it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prompt: Option<PromptMode>,
    /// A sealed agent's prompt key id (16 hex digits), when its manifest
    /// records it: a grant of that key covers this version.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<String>, example = "0123456789abcdef"))]
    pub prompt_key_id: Option<PromptKeyId>,
    /// The transparency-log entry that recorded the publish (in a yank or
    /// unyank answer: the entry that recorded that change). Absent only
    /// until the start-up backfill logs versions published before the log.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub log: Option<LogRef>,
    /// The transparency-log entry of its publish (in every answer, a yank's
    /// included), as the index spells it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub log_index: Option<i64>,
    /// How it was published: through trusted publishing or with a token,
    /// and whether it has provenance (docs/provenance.md).
    pub evidence: Evidence,
}

pub use crate::tlog::LogRef;

/// A package with its versions, newest first.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct PackageView {
    #[cfg_attr(feature = "openapi", schema(value_type = String, example = "tool"))]
    pub kind: Kind,
    #[cfg_attr(feature = "openapi", schema(value_type = String))]
    pub name: PackageName,
    pub description: String,
    /// RFC 3339.
    pub created_at: String,
    /// RFC 3339.
    pub updated_at: String,
    /// Downloads of every version.
    pub downloads: i64,
    /// The package's status when not `active` (docs/statuses.md).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<StatusView>,
    pub versions: Vec<VersionView>,
}

/// One version in the index.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct IndexEntry {
    #[cfg_attr(feature = "openapi", schema(value_type = String))]
    pub version: Version,
    /// `sha256:<hex>` of the container.
    pub hash: String,
    pub yanked: bool,
    /// The version's own status when not `active` (docs/statuses.md).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<StatusView>,
    /// Tool name to requirement.
    pub dependencies: BTreeMap<String, String>,
    /// RFC 3339: when it was published, for clients that hold back young
    /// releases (`agentlang lock --min-release-age`, uv's `exclude-newer`).
    pub published_at: String,
    /// The transparency-log entry of its publish, so this row can be
    /// proved alone (`GET /log/proof/{index}`); absent only until the
    /// start-up backfill logs versions published before the log.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub log_index: Option<i64>,
    /// How it was published (docs/provenance.md): clients may refuse a
    /// version with weaker evidence than its predecessor's.
    pub evidence: Evidence,
}

/// Every live version of a package, oldest first, for client-side
/// resolution.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct PackageIndexView {
    #[cfg_attr(feature = "openapi", schema(value_type = String))]
    pub name: PackageName,
    #[cfg_attr(feature = "openapi", schema(value_type = String, example = "tool"))]
    pub kind: Kind,
    /// The package's status when not `active` (docs/statuses.md): it
    /// applies to every version.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<StatusView>,
    pub versions: Vec<IndexEntry>,
}

pub async fn find_package(
    registry: &Registry,
    kind: Kind,
    name: &PackageName,
) -> Result<PackageRecord, ServiceError> {
    registry
        .db
        .find_package(kind, name)
        .await?
        .ok_or_else(|| ServiceError::NotFound(format!("{kind} {name}")))
}

/// A live version of a package, or 404.
pub async fn find_version(
    registry: &Registry,
    package: &PackageRecord,
    version: &Version,
) -> Result<VersionRecord, ServiceError> {
    registry
        .db
        .find_version(package.id, version)
        .await?
        .filter(|v| v.deleted_at.is_none())
        .ok_or_else(|| {
            ServiceError::NotFound(format!("{} {} {version}", package.kind, package.name))
        })
}

/// A stored JSON document as it is sent: its text, checked, never parsed
/// into a tree and written out again.
fn stored_json(text: String, what: &str) -> Result<Box<RawValue>, ServiceError> {
    RawValue::from_string(text)
        .map_err(|e| ServiceError::internal(anyhow::anyhow!("a stored {what} is not JSON: {e}")))
}

/// The view of a version as read with its record (status and trust aside).
fn detail_view(
    kind: Kind,
    name: &PackageName,
    detail: VersionDetail,
) -> Result<VersionView, ServiceError> {
    let dependencies: BTreeMap<String, String> = serde_json::from_str(&detail.dependencies)
        .map_err(|e| ServiceError::internal(anyhow::anyhow!("stored dependencies: {e}")))?;
    Ok(VersionView {
        kind,
        name: name.clone(),
        hash: detail.sha256.to_prefixed(),
        sha256: detail.sha256,
        version: detail.version,
        size: detail.size,
        manifest: stored_json(detail.manifest, "manifest")?,
        spec: stored_json(detail.spec, "spec")?,
        lockfile: detail
            .lockfile
            .map(|l| stored_json(l, "lockfile"))
            .transpose()?,
        dependencies,
        signer: detail.signer_key_id.map(|key_id| Signer {
            key_id,
            revoked_at: detail.signer_revoked_at.map(rfc3339),
        }),
        yanked: detail.yanked,
        yank_reason: detail.yank_reason,
        status: None,
        publisher: detail.publisher,
        published_at: rfc3339(detail.published_at),
        downloads: detail.downloads,
        trust: None,
        prompt: detail.prompt_mode,
        prompt_key_id: detail.prompt_key_id,
        log: detail.log_index.map(|index| LogRef { index }),
        log_index: detail.log_index,
        evidence: Evidence::of(detail.trusted, detail.provenance),
    })
}

/// `GET /api/v1/{kind}/{name}/{version}`: one statement, and a second
/// only for a package with statuses (or to say what a 404 misses).
pub async fn get_version(
    registry: &Registry,
    kind: Kind,
    name: &PackageName,
    version: &Version,
) -> Result<VersionView, ServiceError> {
    let Some(found) = registry.db.version_detail(kind, name, version).await? else {
        let package = find_package(registry, kind, name).await?;
        return Err(ServiceError::NotFound(format!(
            "{} {} {version}",
            package.kind, package.name
        )));
    };
    let status = if found.version.has_statuses {
        crate::statuses::of_package(registry, found.package.id)
            .await?
            .version(found.version.id)
    } else {
        None
    };
    // The trust picture is an agent's, in its version's own record only.
    let trust = match kind {
        Kind::Agent => found
            .version
            .extras
            .as_deref()
            .and_then(ContainerExtras::stored_trust_text),
        _ => None,
    };
    let mut view = detail_view(kind, &found.package.name, found.version)?;
    view.trust = trust;
    view.status = status;
    Ok(view)
}

/// `GET /api/v1/{kind}/{name}/{version}` as sent, rendered once per
/// generation (and download-count interval).
pub async fn version_record(
    registry: &Registry,
    kind: Kind,
    name: &PackageName,
    version: &Version,
) -> Result<Rendered, ServiceError> {
    let key = RenderedKey::VersionRecord(kind, name.normalized(), version.clone());
    registry
        .rendered(key, || async {
            Rendered::json(&get_version(registry, kind, name, version).await?)
        })
        .await
}

/// `GET /api/v1/{kind}/{name}` as sent: kept in memory per generation (and
/// download-count interval), else the stored record
/// (`crate::stored_answers`), else rendered (the package changed, or was
/// downloaded, since its last rendering was stored).
pub async fn package_record(
    registry: &Registry,
    kind: Kind,
    name: &PackageName,
) -> Result<Rendered, ServiceError> {
    let key = RenderedKey::PackageRecord(kind, name.normalized());
    registry
        .rendered(key, || {
            stored_or_rendered(registry, kind, name, Answer::Package, || async {
                Rendered::json(&get_package(registry, kind, name).await?)
            })
        })
        .await
}

/// `GET /api/v1/{kind}/{name}`: the package and its live versions, newest
/// first.
pub async fn get_package(
    registry: &Registry,
    kind: Kind,
    name: &PackageName,
) -> Result<PackageView, ServiceError> {
    let package = find_package(registry, kind, name).await?;
    let details = registry.db.version_details(package.id).await?;
    let statuses = match details.first() {
        Some(first) if !first.has_statuses => crate::statuses::PackageStatuses::default(),
        _ => crate::statuses::of_package(registry, package.id).await?,
    };
    let versions = details
        .into_iter()
        .map(|detail| {
            let status = statuses.version(detail.id);
            let mut view = detail_view(kind, &package.name, detail)?;
            view.status = status;
            Ok(view)
        })
        .collect::<Result<Vec<VersionView>, ServiceError>>()?;
    Ok(PackageView {
        kind,
        status: statuses.package,
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
    registry: &Registry,
    kind: Kind,
    name: &PackageName,
) -> Result<PackageIndexView, ServiceError> {
    let index = registry
        .db
        .package_index(kind, name)
        .await?
        .ok_or_else(|| ServiceError::NotFound(format!("{kind} {name}")))?;
    let statuses = if index.has_statuses {
        crate::statuses::of_package(registry, index.package.id).await?
    } else {
        crate::statuses::PackageStatuses::default()
    };
    Ok(PackageIndexView {
        name: index.package.name,
        kind,
        status: statuses.package.clone(),
        versions: index
            .versions
            .into_iter()
            .map(|v| IndexEntry {
                version: v.version,
                hash: v.sha256.to_prefixed(),
                yanked: v.yanked,
                status: statuses.version(v.version_id),
                dependencies: v.dependencies,
                published_at: rfc3339(v.published_at),
                log_index: v.log_index,
                evidence: Evidence::of(v.trusted, v.provenance),
            })
            .collect(),
    })
}

/// Longest yank reason kept, in characters.
pub const MAX_YANK_REASON_CHARS: usize = 500;

/// Yanks (`Some(reason)`, which may be empty) or unyanks (`None`) a version:
/// owners only, with a token carrying the `yank` scope for the package.
pub async fn set_yanked(
    registry: &Registry,
    auth: &Authenticated,
    kind: Kind,
    name: &PackageName,
    version: &Version,
    yank: Option<&str>,
) -> Result<VersionView, ServiceError> {
    auth.require(Scope::Yank)?;
    auth.require_package(name)?;
    let package = find_package(registry, kind, name).await?;
    let reason = yank.map(str::trim).filter(|r| !r.is_empty());
    let log_index = set_yanked_by_owner(
        registry,
        auth.actor(),
        &package,
        version,
        yank.is_some(),
        reason,
    )
    .await?;
    let mut view = get_version(registry, package.kind, &package.name, version).await?;
    view.log = Some(LogRef { index: log_index });
    Ok(view)
}

/// Marks deleted the live versions whose text `Version` refuses today: a
/// registry from before versions were bounded may hold one (a publish of
/// `x@1.0.0+<70,000 characters>` was accepted then). Such a row could not
/// be read (rows are typed), so every page and index listing it would
/// fail; deleted, it is skipped like any deleted version, and its log
/// entry is served as a placeholder (`core::tlog::served_entry_bundle`).
/// Runs at start-up, before the server answers; reads only the versions
/// whose text is longer than 64 bytes (a partial index holds them), so it
/// costs nothing per version of the catalog. Returns how many were retired.
pub async fn retire_unreadable_versions(db: &store::Db) -> Result<u64, store::Error> {
    let candidates = db.long_version_texts().await?;
    let unreadable: Vec<i64> = candidates
        .into_iter()
        .filter(|(_, text)| agentlang_core::Version::parse(text).is_err())
        .map(|(id, _)| id)
        .collect();
    if unreadable.is_empty() {
        return Ok(0);
    }
    db.delete_versions_by_id(&unreadable).await
}

/// The rule of a yank, for the API and the catalog: the account must own
/// the package, a reason is at most 500 characters, and a version changes
/// at most [`crate::rate_limits::YANKS_PER_VERSION_PER_MINUTE`] times a
/// minute (an account, [`crate::rate_limits::YANKS_PER_ACCOUNT_PER_MINUTE`]). The change and its log entry are
/// one write; returns the entry's index.
pub async fn set_yanked_by_owner(
    registry: &Registry,
    actor: Actor<'_>,
    package: &PackageRecord,
    version: &Version,
    yanked: bool,
    reason: Option<&str>,
) -> Result<i64, ServiceError> {
    crate::owners::require_owner(registry, actor.account_id, package).await?;
    if reason.is_some_and(|r| r.chars().count() > MAX_YANK_REASON_CHARS) {
        return Err(ServiceError::Validation(vec![FieldError::new(
            "reason",
            format!("must be at most {MAX_YANK_REASON_CHARS} characters"),
        )]));
    }
    // A change is a permanent log entry and moves every replica's caches:
    // budgeted per version and per account. Asking for the state a version
    // already has writes nothing, and costs nothing.
    let current = registry.db.find_version(package.id, version).await?;
    if current.is_some_and(|v| v.deleted_at.is_none() && v.yanked != yanked) {
        registry.rate_limits.check(
            Bucket::YankPerVersion,
            &format!(
                "{}:{}@{version}",
                package.kind.as_str(),
                package.normalized_name
            ),
        )?;
        registry
            .rate_limits
            .check(Bucket::YankPerAccount, &account_budget(actor.account_id))?;
    }
    let entry = tlog::yank_entry(
        package.kind,
        &package.name,
        version,
        yanked,
        reason,
        actor.username.as_str(),
    );
    tlog::check_servable(&entry)?;
    let change = YankChange {
        yanked,
        reason,
        log_entry: &entry,
    };
    let Some(log_index) = registry.db.set_yanked(package.id, version, &change).await? else {
        return Err(ServiceError::NotFound(format!(
            "{} {} {version}",
            package.kind, package.name
        )));
    };
    registry.tlog.appended();
    tracing::info!(kind = %package.kind, package = %package.name, %version, yanked, account = %actor.username, log_index, "yank changed");
    Ok(log_index)
}

/// Finds the container of a version (yanked ones too: existing lockfiles
/// still fetch them). A published version's container never changes, so
/// once found it is a lookup in memory, checked against the newest
/// generation this replica has read rather than a fresh read: only a
/// deletion could make it wrong, and the generation is read at least every
/// few seconds (the download-count flush reads it), so a deleted version
/// stops downloading within that. A version not found is always looked up.
pub async fn find_download(
    registry: &Registry,
    kind: Kind,
    name: &PackageName,
    version: &Version,
) -> Result<Download, ServiceError> {
    let key = (kind, name.normalized(), version.clone());
    let newest = registry.index_cache.newest_generation();
    if let Some(hit) = registry.download_targets.get(newest, &key) {
        return Ok(hit);
    }
    // Boxed: the database reads' futures are kilobytes, and unboxed they
    // would size (and be copied with) every download's future, hit or not.
    Box::pin(read_download(registry, kind, name, version, key)).await
}

/// [`find_download`]'s miss: the target read from the database and cached.
async fn read_download(
    registry: &Registry,
    kind: Kind,
    name: &PackageName,
    version: &Version,
    key: (Kind, String, Version),
) -> Result<Download, ServiceError> {
    let generation = registry
        .index_cache
        .current_generation(&registry.db)
        .await?;
    let package = find_package(registry, kind, name).await?;
    let record = find_version(registry, &package, version).await?;
    crate::statuses::refuse_download(registry, &package, record.id, &record.version).await?;
    let digest = record.sha256;
    let download = Download {
        version_id: record.id,
        etag: format!("\"{}\"", digest.hex()),
        digest,
        size: u64::try_from(record.size).unwrap_or(0),
        disposition: format!(
            "attachment; filename=\"{}@{}.{}\"",
            package.name,
            record.version,
            kind.extension()
        ),
    };
    registry
        .download_targets
        .put(generation, key, download.clone());
    Ok(download)
}

/// Writes the downloads this replica counted; when there were some, its
/// rendered records and pages are rendered again, so they show the new
/// counts at once (other replicas' within [`cache::RENDERED_MAX_AGE`]),
/// and the stored records the flush deleted are due to be rendered again
/// (`crate::stored_answers`, within a second).
pub async fn flush_downloads(registry: &Registry) -> Result<(), store::Error> {
    let counted = registry.downloads.flush(&registry.db).await?;
    if !counted.is_empty() {
        registry.rendered.clear();
        registry.add_records_due(counted);
    }
    Ok(())
}

/// Flushes counted downloads every [`cache::DOWNLOAD_FLUSH_INTERVAL`] until the
/// task is stopped.
pub async fn flush_downloads_periodically(registry: std::sync::Arc<Registry>) {
    let mut ticks = tokio::time::interval(cache::DOWNLOAD_FLUSH_INTERVAL);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        ticks.tick().await;
        if let Err(e) = flush_downloads(&registry).await {
            tracing::warn!(error = %e, "cannot write download counts; kept for the next flush");
        }
        // Keeps what downloads check their cache against no older than
        // this interval, even when only downloads arrive.
        if let Err(e) = registry.index_cache.current_generation(&registry.db).await {
            tracing::warn!(error = %e, "cannot read the registry generation");
        }
    }
}

/// What pages show from a container besides its definition: skills,
/// co-located subagents, ux.yaml's hints, a tool's README, a skill
/// package's instructions. Computed at
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
    /// A tool's README.md, or a skill package's SKILL.md body (the markdown
    /// after the frontmatter, which is the version's spec); at most a kept
    /// member's size (`container::Limits::max_kept_member_bytes`).
    pub readme: Option<String>,
    /// What the agent can do (`core::trust`), from the package validated at
    /// publish and its locked tools; `None` for a tool or a protocol.
    pub trust: Option<AgentTrust>,
    /// An open agent's prompt.yaml, as its page shows it (a sealed one's
    /// is never read).
    pub prompt: Option<String>,
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
            if kind == Kind::Skill {
                if p == agentlang_core::skill::SKILL_FILE
                    && let Ok(doc) = agentlang_core::agentskills::parse_skill_doc(member)
                {
                    extras.readme = Some(doc.body);
                }
                continue;
            }
            if p == "prompt.yaml" {
                extras.prompt = std::str::from_utf8(member).ok().map(str::to_owned);
            } else if p.starts_with("skills/") && p.ends_with("/SKILL.md") {
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
        stored.and_then(Self::trust_of)
    }

    /// [`Self::stored_trust`] of the stored text.
    pub fn stored_trust_text(stored: &str) -> Option<AgentTrust> {
        Self::trust_of(&mut serde_json::Deserializer::from_str(stored))
    }

    fn trust_of<'de, D: serde::Deserializer<'de>>(stored: D) -> Option<AgentTrust> {
        #[derive(serde::Deserialize)]
        struct TrustOnly {
            trust: Option<AgentTrust>,
        }
        TrustOnly::deserialize(stored).ok().and_then(|t| t.trust)
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
pub async fn backfill_extras(registry: std::sync::Arc<Registry>) {
    const BATCH: i64 = 50;
    loop {
        let pending = match registry.db.versions_without_extras(BATCH).await {
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
            let extras = match (kind.parse::<Kind>(), Sha256Digest::parse_hex(&sha256)) {
                (Ok(kind), Ok(digest)) => match registry.blobs.get(&digest).await {
                    Ok(Some(bytes)) => {
                        let read = tokio::task::spawn_blocking(move || {
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
                                match super::trust::agent_trust(&registry.db, &pkg, &signer).await {
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
            if let Err(e) = registry
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

/// The stored `answer` of a package (`crate::stored_answers`), else
/// `render`'s, for a read that missed the in-memory cache. A stored answer is at least as new as the
/// generation read before it; there is none when the package changed
/// since its last rendering was stored.
async fn stored_or_rendered<F>(
    registry: &Registry,
    kind: Kind,
    name: &PackageName,
    answer: Answer,
    render: impl FnOnce() -> F,
) -> Result<Rendered, ServiceError>
where
    F: Future<Output = Result<Rendered, ServiceError>>,
{
    match registry
        .db
        .stored_answer(kind, &name.normalized(), answer)
        .await?
    {
        Some(stored) => Ok(Rendered {
            body: bytes::Bytes::from(stored.body),
            etag: stored.etag,
        }),
        None => render().await,
    }
}

/// `GET /api/v1/index/{kind}/{name}` as sent: kept in memory per
/// generation, else the stored entry (`crate::stored_answers`), else
/// rendered (the package changed since its last rendering was stored).
pub async fn index_answer(
    registry: &Registry,
    kind: Kind,
    name: &PackageName,
) -> Result<Rendered, ServiceError> {
    let cache = &registry.index_cache;
    let generation = cache.current_generation(&registry.db).await?;
    let normalized = name.normalized();
    if let Some((body, etag)) = cache.index_body(generation, kind, &normalized) {
        return Ok(Rendered { body, etag });
    }
    let rendered = stored_or_rendered(registry, kind, name, Answer::Index, || async {
        Rendered::json(&get_index(registry, kind, name).await?)
    })
    .await?;
    cache.put_index_body(
        generation,
        kind,
        normalized,
        rendered.body.clone(),
        rendered.etag.clone(),
    );
    Ok(rendered)
}

/// Where a download's bytes are fetched when the registry hands them to
/// the bucket: with S3 storage and a configured redirect lifetime, a
/// presigned URL of the blob (the bucket, or a CDN in front of it, serves
/// the bytes; the client sends its `Range` there again). `None`: the
/// registry serves them itself ([`open_download`]). A redirect counts as
/// a download unless it resumes one (`resumed`).
pub async fn download_redirect(
    registry: &Registry,
    download: &Download,
    resumed: bool,
) -> Result<Option<String>, ServiceError> {
    let lifetime = registry.settings.download_redirect;
    if lifetime.is_zero() {
        return Ok(None);
    }
    let url = registry
        .blobs
        .presigned_url(&download.digest, lifetime)
        .await?;
    if url.is_some() && !resumed {
        registry.downloads.record(download.version_id);
    }
    Ok(url.map(|u| u.to_string()))
}

/// The bytes of a download: all of them, or the half-open `range`. Counted
/// as a download unless the range starts past byte 0 (a resumption) or
/// the client fetches only to look inside (`inspecting`: a CLI computing
/// what an agent's pinned tools can do, not installing them).
pub async fn open_download(
    registry: &Registry,
    download: &Download,
    range: Option<std::ops::Range<u64>>,
    inspecting: bool,
) -> Result<BlobBody, ServiceError> {
    let resumed = range.as_ref().is_some_and(|bytes| bytes.start > 0);
    let len = range
        .as_ref()
        .map_or(download.size, |bytes| bytes.end - bytes.start);
    let (sent, body) = registry
        .blobs
        .download(&download.digest, download.size, range)
        .await?
        .ok_or_else(|| {
            ServiceError::internal(anyhow::anyhow!(
                "blob {} of version row {} is missing",
                download.digest.hex(),
                download.version_id
            ))
        })?;
    if sent != len {
        return Err(ServiceError::internal(anyhow::anyhow!(
            "blob {} holds {sent} bytes where {len} were expected",
            download.digest.hex()
        )));
    }
    if !resumed && !inspecting {
        registry.downloads.record(download.version_id);
    }
    Ok(body)
}
