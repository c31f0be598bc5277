//! Agent, tool and agent-diff pages.

use std::collections::BTreeMap;

use actix_web::{HttpRequest, HttpResponse, web};
use agentlang_core::{Kind, PackageName, Version, signing::KeyId};
use agentlang_web::{
    model::*,
    pages::{AgentDiffPage, AgentPage, ToolPage},
};
use serde::Deserialize;

use super::{
    CatalogError, html,
    session::{MaybeSession, WebSession},
    shared_page,
    views::{self, owner_view, timestamp},
};
use crate::{
    db::packages::{PackageRecord, VersionRecord},
    service::{owners, packages::ContainerExtras},
    state::AppState,
};

/// Most dependents listed on a tool page; the counts cover all of them.
const MAX_DEPENDENTS_SHOWN: usize = 50;

/// A package and every live version, newest first.
pub(super) struct Loaded {
    pub package: PackageRecord,
    pub name: PackageName,
    pub versions: Vec<VersionRecord>,
}

impl Loaded {
    /// `version`, or the newest unyanked release (else the newest of any).
    pub fn pick(&self, version: Option<&Version>) -> Result<&VersionRecord, CatalogError> {
        match version {
            Some(wanted) => self
                .versions
                .iter()
                .find(|v| Version::parse(&v.version).is_ok_and(|p| p == *wanted))
                .ok_or(CatalogError::NotFound),
            None => {
                let parsed = |v: &VersionRecord| Version::parse(&v.version).ok();
                self.versions
                    .iter()
                    .find(|v| !v.yanked && parsed(v).is_some_and(|p| !p.is_prerelease()))
                    .or_else(|| self.versions.first())
                    .ok_or(CatalogError::NotFound)
            }
        }
    }

    pub fn summaries(&self) -> Vec<VersionSummary> {
        self.versions
            .iter()
            .filter_map(|v| {
                Some(VersionSummary {
                    version: Version::parse(&v.version).ok()?,
                    published_at: timestamp(v.published_at),
                    yanked: v.yanked.then(|| Yank {
                        reason: v.yank_reason.clone(),
                    }),
                })
            })
            .collect()
    }

    pub fn total_downloads(&self) -> u64 {
        self.versions
            .iter()
            .map(|v| u64::try_from(v.downloads).unwrap_or(0))
            .sum()
    }
}

/// Any spelling of the name finds the package; an invalid name is a 404.
pub(super) async fn load(
    state: &AppState,
    kind: Kind,
    raw_name: &str,
) -> Result<Loaded, CatalogError> {
    let name = PackageName::new(raw_name).map_err(|_| CatalogError::NotFound)?;
    let package = state
        .db
        .find_package(kind, &name)
        .await?
        .ok_or(CatalogError::NotFound)?;
    let versions = state.db.list_versions(package.id).await?;
    if versions.is_empty() {
        return Err(CatalogError::NotFound);
    }
    let name = PackageName::new(package.name.as_str()).map_err(CatalogError::internal)?;
    Ok(Loaded {
        package,
        name,
        versions,
    })
}

fn parse_version(raw: &str) -> Result<Version, CatalogError> {
    Version::parse(raw).map_err(|_| CatalogError::NotFound)
}

async fn artifact(state: &AppState, v: &VersionRecord) -> Result<ArtifactView, CatalogError> {
    let (key_id, key_owner, key_revoked_at) = match &v.signer_key_id {
        Some(key_id) => match match KeyId::new(key_id.as_str()) {
            Ok(id) => state.db.find_signing_key(&id).await?,
            Err(_) => None,
        } {
            Some(key) => (
                key.key_id,
                state
                    .db
                    .account_username(key.account_id)
                    .await?
                    .unwrap_or_default(),
                key.revoked_at.map(timestamp),
            ),
            None => (key_id.clone(), String::new(), None),
        },
        // Only seeded or legacy rows lack a signer; publish requires one.
        None => (String::new(), String::new(), None),
    };
    Ok(ArtifactView {
        sha256: v.sha256.clone(),
        size_bytes: u64::try_from(v.size).unwrap_or(0),
        downloads: u64::try_from(v.downloads).unwrap_or(0),
        published_at: timestamp(v.published_at),
        signer: SignerView {
            key_id,
            key_owner,
            key_revoked_at,
        },
        log_index: v.log_index.and_then(|i| u64::try_from(i).ok()),
    })
}

/// Skills, subagents, ux hints or README, as stored at publish.
fn extras(v: &VersionRecord) -> ContainerExtras {
    ContainerExtras::from_stored(v.extras.as_ref().map(|e| &e.0))
}

async fn owners(state: &AppState, package_id: i64) -> Result<Vec<OwnerView>, CatalogError> {
    Ok(owners::current_owners(state, package_id)
        .await?
        .iter()
        .map(owner_view)
        .collect())
}

async fn owner_controls(
    state: &AppState,
    session: Option<&WebSession>,
    package_id: i64,
) -> Result<Option<OwnerControls>, CatalogError> {
    match session {
        Some(s) if owners::is_owner(state, s.account_id, package_id).await? => {
            Ok(Some(OwnerControls {
                csrf_token: s.csrf_token.clone(),
            }))
        }
        _ => Ok(None),
    }
}

pub(super) fn agent_version_view(
    loaded: &Loaded,
    v: &VersionRecord,
) -> Result<AgentVersionView, CatalogError> {
    let version = parse_version(&v.version)?;
    let extras = extras(v);
    Ok(views::agent_view(
        &loaded.name,
        &version,
        &v.spec.0,
        v.lockfile.as_ref().map(|l| &l.0),
        &extras,
    ))
}

/// Builds the agent page; public for the render benchmark.
pub async fn agent_page(
    state: &AppState,
    session: &MaybeSession,
    name: &str,
    version: Option<&Version>,
) -> Result<AgentPage, CatalogError> {
    let loaded = load(state, Kind::Agent, name).await?;
    let v = loaded.pick(version)?;
    let quality = crate::service::quality::stored_report(&state.db, v.id)
        .await
        .map_err(CatalogError::internal)?;
    let protocol_notices = crate::service::protocols::agent_protocol_status(
        &state.db,
        &v.spec.0,
        v.lockfile.as_ref().map(|l| &l.0),
    )
    .await
    .map_err(CatalogError::internal)?
    .into_iter()
    .map(|n| ProtocolNotice {
        name: n.name,
        version: n.version.map(|v| v.to_string()),
        message: n.message,
        is_error: n.is_error,
    })
    .collect();
    let trust = ContainerExtras::stored_trust(v.extras.as_ref().map(|e| &e.0));
    let requests = trust.as_ref().map(|t| t.requests());
    Ok(AgentPage {
        chrome: session.chrome(),
        hosts: requests
            .as_deref()
            .map(views::host_fits)
            .unwrap_or_default(),
        undeclared: requests
            .as_deref()
            .map(views::undeclared)
            .unwrap_or_default(),
        statements: trust.map(|t| t.statements()).unwrap_or_default(),
        quality,
        protocol_notices,
        agent: agent_version_view(&loaded, v)?,
        versions: loaded.summaries(),
        artifact: artifact(state, v).await?,
        owners: owners(state, loaded.package.id).await?,
        total_downloads: loaded.total_downloads(),
        owner_controls: owner_controls(state, session.0.as_ref(), loaded.package.id).await?,
    })
}

/// What a package page is cached under: every spelling of the name and
/// version shares one entry.
fn page_key(kind: Kind, raw_name: &str, version: Option<&Version>) -> Result<String, CatalogError> {
    let name = PackageName::new(raw_name).map_err(|_| CatalogError::NotFound)?;
    Ok(format!(
        "/{}/{}/{}",
        kind.plural(),
        name.normalized(),
        version.map_or_else(|| "latest".to_owned(), Version::to_string)
    ))
}

/// `GET /agents/{name}`: the newest version.
pub async fn agent_latest(
    req: HttpRequest,
    state: web::Data<AppState>,
    session: MaybeSession,
    path: web::Path<String>,
) -> Result<HttpResponse, CatalogError> {
    let key = page_key(Kind::Agent, &path, None)?;
    shared_page(&req, &state, &session, key, async || {
        agent_page(&state, &session, &path, None).await
    })
    .await
}

/// `GET /agents/{name}/{version}`.
pub async fn agent_version(
    req: HttpRequest,
    state: web::Data<AppState>,
    session: MaybeSession,
    path: web::Path<(String, String)>,
) -> Result<HttpResponse, CatalogError> {
    let (name, version) = path.into_inner();
    let version = parse_version(&version)?;
    let key = page_key(Kind::Agent, &name, Some(&version))?;
    shared_page(&req, &state, &session, key, async || {
        agent_page(&state, &session, &name, Some(&version)).await
    })
    .await
}

#[derive(Debug, Deserialize)]
pub struct DiffQuery {
    from: Option<String>,
    to: Option<String>,
}

/// `GET /agents/{name}/diff?from=&to=`. Without `to`, the newest version;
/// without `from`, the version before `to`.
pub async fn agent_diff(
    state: web::Data<AppState>,
    session: MaybeSession,
    path: web::Path<String>,
    query: web::Query<DiffQuery>,
) -> Result<HttpResponse, CatalogError> {
    let loaded = load(&state, Kind::Agent, &path).await?;
    let optional = |raw: &Option<String>| {
        raw.as_deref()
            .filter(|s| !s.is_empty())
            .map(|s| {
                Version::parse(s)
                    .map_err(|_| CatalogError::BadRequest(format!("{s:?} is not a version")))
            })
            .transpose()
    };
    let to = loaded.pick(optional(&query.to)?.as_ref())?;
    let to_version = parse_version(&to.version)?;
    let from = match optional(&query.from)? {
        Some(v) => loaded.pick(Some(&v))?,
        None => loaded
            .versions
            .iter()
            .filter(|v| Version::parse(&v.version).is_ok_and(|p| p < to_version))
            .max_by_key(|v| Version::parse(&v.version).ok())
            .unwrap_or(to),
    };
    let from_view = agent_version_view(&loaded, from)?;
    let to_view = agent_version_view(&loaded, to)?;
    let stored = |v: &VersionRecord| ContainerExtras::stored_trust(v.extras.as_ref().map(|e| &e.0));
    let trust = stored(from)
        .zip(stored(to))
        .map(|(a, b)| agentlang_core::trust::diff(&a, &b));
    let versions = loaded
        .versions
        .iter()
        .filter_map(|v| Version::parse(&v.version).ok())
        .collect();
    html(&AgentDiffPage::new(
        session.chrome(),
        &from_view,
        &to_view,
        trust,
        versions,
    ))
}

async fn reverse_dependencies(
    state: &AppState,
    tool: &PackageName,
) -> Result<ReverseDependencies, CatalogError> {
    let rows = state.db.tool_dependents(&tool.normalized()).await?;
    // One entry per dependent package: its newest version that uses the tool.
    let mut newest: BTreeMap<(String, String), DependentView> = BTreeMap::new();
    for row in rows {
        let (Ok(kind), Ok(name), Ok(version)) = (
            row.kind.parse::<Kind>(),
            PackageName::new(row.name.as_str()),
            Version::parse(&row.version),
        ) else {
            continue;
        };
        let key = (row.kind.clone(), name.normalized());
        let candidate = DependentView {
            package: VersionRef {
                kind,
                name,
                version,
            },
            requirement: row.requirement.unwrap_or_else(|| "locked".to_owned()),
        };
        match newest.get(&key) {
            Some(kept) if kept.package.version >= candidate.package.version => {}
            _ => {
                newest.insert(key, candidate);
            }
        }
    }
    let count = |kind: Kind| newest.values().filter(|d| d.package.kind == kind).count() as u64;
    let agent_count = count(Kind::Agent);
    let tool_count = count(Kind::Tool);
    let mut items: Vec<DependentView> = newest.into_values().collect();
    items.sort_by(|a, b| {
        (a.package.kind != Kind::Agent, a.package.name.as_str())
            .cmp(&(b.package.kind != Kind::Agent, b.package.name.as_str()))
    });
    items.truncate(MAX_DEPENDENTS_SHOWN);
    Ok(ReverseDependencies {
        agent_count,
        tool_count,
        items,
    })
}

async fn tool_page(
    state: &AppState,
    session: &MaybeSession,
    name: &str,
    version: Option<&Version>,
) -> Result<ToolPage, CatalogError> {
    let loaded = load(state, Kind::Tool, name).await?;
    let v = loaded.pick(version)?;
    let parsed = parse_version(&v.version)?;
    let extras = extras(v);
    Ok(ToolPage {
        chrome: session.chrome(),
        tool: views::tool_view(&loaded.name, &parsed, &v.spec.0, &extras),
        versions: loaded.summaries(),
        artifact: artifact(state, v).await?,
        owners: owners(state, loaded.package.id).await?,
        total_downloads: loaded.total_downloads(),
        used_by: reverse_dependencies(state, &loaded.name).await?,
        owner_controls: owner_controls(state, session.0.as_ref(), loaded.package.id).await?,
    })
}

/// `GET /tools/{name}`.
pub async fn tool_latest(
    req: HttpRequest,
    state: web::Data<AppState>,
    session: MaybeSession,
    path: web::Path<String>,
) -> Result<HttpResponse, CatalogError> {
    let key = page_key(Kind::Tool, &path, None)?;
    shared_page(&req, &state, &session, key, async || {
        tool_page(&state, &session, &path, None).await
    })
    .await
}

/// `GET /tools/{name}/{version}`.
pub async fn tool_version(
    req: HttpRequest,
    state: web::Data<AppState>,
    session: MaybeSession,
    path: web::Path<(String, String)>,
) -> Result<HttpResponse, CatalogError> {
    let (name, version) = path.into_inner();
    let version = parse_version(&version)?;
    let key = page_key(Kind::Tool, &name, Some(&version))?;
    shared_page(&req, &state, &session, key, async || {
        tool_page(&state, &session, &name, Some(&version)).await
    })
    .await
}
