//! Agent, tool and agent-diff pages.

use std::collections::BTreeMap;

use actix_web::{
    HttpRequest, HttpResponse,
    http::header,
    web::{self, Bytes},
};
use agentlang_core::{Kind, PackageName, Version, grants::PromptMode};
use agentlang_web::{
    Template,
    model::*,
    pages::{AgentDiffPage, AgentPage, ToolPage},
};
use serde::Deserialize;

use super::{
    CatalogError, HTML, html,
    session::{MaybeSession, WebSession},
    views::{self, owner_view, timestamp},
};
use crate::state::AppState;
use app::{
    cache::{Rendered, RenderedKey},
    catalog::{self, DependentRow, PackagePage, VersionPage},
    packages::{ContainerExtras, VersionRecord},
};

/// Most dependents listed on a tool page; the counts cover all of them.
const MAX_DEPENDENTS_SHOWN: usize = 50;

/// A package's page data, with its name as first published.
pub(super) struct Loaded {
    pub page: PackagePage,
    pub name: PackageName,
}

impl Loaded {
    /// `version`, or the version that represents the package.
    pub fn pick(&self, version: Option<&Version>) -> Result<&VersionRecord, CatalogError> {
        self.page.pick(version).ok_or(CatalogError::NotFound)
    }

    pub fn summaries(&self) -> Vec<VersionSummary> {
        self.page
            .versions
            .iter()
            .map(|v| VersionSummary {
                version: v.version.clone(),
                published_at: timestamp(v.published_at),
                yanked: v.yanked.then(|| Yank {
                    reason: v.yank_reason.clone(),
                }),
                status: self
                    .page
                    .statuses
                    .version(v.id)
                    .or_else(|| self.page.statuses.package.clone())
                    .map(|s| status_notice(self.page.package.kind, s)),
            })
            .collect()
    }

    pub fn total_downloads(&self) -> u64 {
        u64::try_from(self.page.downloads()).unwrap_or(0)
    }

    pub fn owners(&self) -> Vec<OwnerView> {
        self.page.owners.iter().map(owner_view).collect()
    }
}

/// A status as the banner shows it, the successor linked to its page.
fn status_notice(kind: Kind, s: app::statuses::StatusView) -> StatusNotice {
    StatusNotice {
        status: s.status.as_str().to_owned(),
        reason: s.reason,
        successor: s.successor.map(|name| SuccessorLink {
            href: format!("/{}/{}", kind.plural(), path_segment(&name)),
            name,
        }),
    }
}

/// Any spelling of the name finds the package; an invalid name is a 404.
pub(super) async fn load(
    state: &AppState,
    kind: Kind,
    raw_name: &str,
) -> Result<Loaded, CatalogError> {
    let name = PackageName::new(raw_name).map_err(|_| CatalogError::NotFound)?;
    let page = catalog::package_page(state, kind, &name)
        .await?
        .ok_or(CatalogError::NotFound)?;
    Ok(Loaded {
        name: page.package.name.clone(),
        page,
    })
}

pub(super) fn parse_version(raw: &str) -> Result<Version, CatalogError> {
    Version::parse(raw).map_err(|_| CatalogError::NotFound)
}

pub(super) fn artifact(found: &VersionPage) -> ArtifactView {
    let v = found.version();
    let (key_id, key_owner, key_revoked_at) = match (&v.signer_key_id, &found.signer) {
        (_, Some((key, holder))) => (
            key.key_id.to_string(),
            holder.as_ref().map(ToString::to_string).unwrap_or_default(),
            key.revoked_at.map(timestamp),
        ),
        (Some(key_id), None) => (key_id.to_string(), String::new(), None),
        // Only seeded or legacy rows lack a signer; publish requires one.
        (None, None) => (String::new(), String::new(), None),
    };
    ArtifactView {
        sha256: v.sha256.to_hex(),
        size_bytes: u64::try_from(v.size).unwrap_or(0),
        downloads: u64::try_from(v.downloads).unwrap_or(0),
        published_at: timestamp(v.published_at),
        signer: SignerView {
            key_id,
            key_owner,
            key_revoked_at,
        },
        log_index: v.log_index.and_then(|i| u64::try_from(i).ok()),
        built_by: found.provenance.as_ref().map(|p| BuiltBy {
            repository: p.repository.clone(),
            workflow: p.workflow.clone(),
            commit: p.commit.clone(),
            href: format!(
                "/api/v1/{}/{}/{}/provenance",
                found.page.package.kind.plural(),
                found.page.package.name,
                v.version
            ),
        }),
    }
}

/// Skills, subagents, ux hints or README, as stored at publish.
pub(super) fn extras(v: &VersionRecord) -> ContainerExtras {
    ContainerExtras::from_stored(v.extras.as_ref().map(|e| &e.0))
}

pub(super) fn owner_controls(
    found: &VersionPage,
    session: Option<&WebSession>,
) -> Option<OwnerControls> {
    session
        .filter(|_| found.viewer_owns)
        .map(|s| OwnerControls {
            csrf_token: s.csrf_token.clone(),
        })
}

/// The read model of a version's page, as the session's account sees it.
pub(super) async fn version_page(
    state: &AppState,
    session: &MaybeSession,
    kind: Kind,
    raw_name: &str,
    version: Option<&Version>,
) -> Result<(VersionPage, Loaded), CatalogError> {
    let name = PackageName::new(raw_name).map_err(|_| CatalogError::NotFound)?;
    let viewer = session.0.as_ref().map(|s| s.account_id);
    let found = catalog::version_page(state, kind, &name, version, viewer)
        .await?
        .ok_or(CatalogError::NotFound)?;
    let loaded = Loaded {
        name: found.page.package.name.clone(),
        page: found.page.clone(),
    };
    Ok((found, loaded))
}

pub(super) fn agent_version_view(
    loaded: &Loaded,
    v: &VersionRecord,
) -> Result<AgentVersionView, CatalogError> {
    let extras = extras(v);
    Ok(views::agent_view(
        &loaded.name,
        &v.version,
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
    let (found, loaded) = version_page(state, session, Kind::Agent, name, version).await?;
    let v = found.version();
    let protocol_notices = found
        .protocol_notes
        .iter()
        .map(|n| ProtocolNotice {
            name: n.name.clone(),
            version: n.version.as_ref().map(ToString::to_string),
            message: n.message.clone(),
            is_error: n.is_error,
        })
        .collect();
    let trust = ContainerExtras::stored_trust(v.extras.as_ref().map(|e| &e.0));
    let requests = trust.as_ref().map(|t| t.requests());
    let prompt = v.prompt_mode.map(|mode| PromptView {
        sealed: mode == PromptMode::Sealed,
        text: (mode == PromptMode::Open)
            .then(|| extras(v).prompt)
            .flatten(),
    });
    // Who holds grants: shown to owners only, on a page rendered for their
    // session alone (never cached, nor stored by a shared cache).
    let grants = if found.viewer_owns && session.0.is_some() {
        Some(
            app::grants::live_grants_for_owner(state, &found.page.package)
                .await?
                .into_iter()
                .map(|g| GrantRowView {
                    grantee: g.grantee.to_string(),
                    key_id: g.key_id.to_string(),
                    versions: g.versions,
                    granted_by: g.granted_by.map(|u| u.to_string()),
                    granted_at: g.created_at,
                })
                .collect(),
        )
    } else {
        None
    };
    // The link appears exactly when the card route would answer one.
    let a2a_card = agentlang_core::a2a::interface(&v.spec.0, v.lockfile.as_ref().map(|l| &l.0))
        .ok()
        .map(|interface| A2aCardView {
            endpoint: interface.url,
            binding: interface.protocol_binding,
            protocol_version: interface.protocol_version,
            card_href: app::a2a::card_path(&loaded.name, &v.version),
        });
    let advisories =
        super::advisories::notices(state, Kind::Agent, &loaded.name, &v.version).await?;
    Ok(AgentPage {
        advisories,
        prompt,
        grants,
        a2a_card,
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
        quality: found.quality.clone(),
        protocol_notices,
        agent: agent_version_view(&loaded, v)?,
        versions: loaded.summaries(),
        artifact: artifact(&found),
        owners: loaded.owners(),
        total_downloads: loaded.total_downloads(),
        owner_controls: owner_controls(&found, session.0.as_ref()),
    })
}

/// What a package page is cached under: every spelling of the name and
/// version shares one entry.
pub(super) fn page_key(
    kind: Kind,
    raw_name: &str,
    version: Option<&Version>,
) -> Result<RenderedKey, CatalogError> {
    let name = PackageName::new(raw_name).map_err(|_| CatalogError::NotFound)?;
    Ok(RenderedKey::PackagePage(
        kind,
        name.normalized(),
        version.cloned(),
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
    let from = match optional(&query.from)? {
        Some(v) => loaded.pick(Some(&v))?,
        None => loaded
            .page
            .versions
            .iter()
            .filter(|v| v.version < to.version)
            .max_by(|a, b| a.version.cmp(&b.version))
            .unwrap_or(to),
    };
    let from_view = agent_version_view(&loaded, from)?;
    let to_view = agent_version_view(&loaded, to)?;
    let stored = |v: &VersionRecord| ContainerExtras::stored_trust(v.extras.as_ref().map(|e| &e.0));
    let trust = stored(from)
        .zip(stored(to))
        .map(|(a, b)| agentlang_core::trust::diff(&a, &b));
    let versions = loaded
        .page
        .versions
        .iter()
        .map(|v| v.version.clone())
        .collect();
    html(&AgentDiffPage::new(
        session.chrome(),
        &from_view,
        &to_view,
        trust,
        versions,
    ))
}

fn reverse_dependencies(rows: &[DependentRow]) -> ReverseDependencies {
    // One entry per dependent package: its newest version that uses the tool.
    let mut newest: BTreeMap<(Kind, String), DependentView> = BTreeMap::new();
    for row in rows {
        let key = (row.kind, row.name.normalized());
        let candidate = DependentView {
            package: VersionRef {
                kind: row.kind,
                name: row.name.clone(),
                version: row.version.clone(),
            },
            requirement: row
                .requirement
                .clone()
                .unwrap_or_else(|| "locked".to_owned()),
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
    ReverseDependencies {
        agent_count,
        tool_count,
        items,
    }
}

async fn tool_page(
    state: &AppState,
    session: &MaybeSession,
    name: &str,
    version: Option<&Version>,
) -> Result<ToolPage, CatalogError> {
    let (found, loaded) = version_page(state, session, Kind::Tool, name, version).await?;
    let v = found.version();
    let extras = extras(v);
    let advisories =
        super::advisories::notices(state, Kind::Tool, &loaded.name, &v.version).await?;
    Ok(ToolPage {
        advisories,
        chrome: session.chrome(),
        tool: views::tool_view(&loaded.name, &v.version, &v.spec.0, &extras),
        binding: views::tool_binding(&v.spec.0),
        versions: loaded.summaries(),
        artifact: artifact(&found),
        owners: loaded.owners(),
        total_downloads: loaded.total_downloads(),
        used_by: reverse_dependencies(&found.dependents),
        owner_controls: owner_controls(&found, session.0.as_ref()),
        mcp: app::mcp::catalog_entry(
            &state.registry,
            Kind::Tool,
            &loaded.name,
            &v.version,
            &v.spec.0,
        )
        .map(|(server, url)| McpEntryView {
            server_name: server.name.clone(),
            server_json: serde_json::to_string_pretty(&server).unwrap_or_default(),
            url,
        }),
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

/// A page that looks the same to every visitor without a session (a
/// package's page): for them it is rendered once per registry generation,
/// and at most every few seconds for its download counts
/// (`service::cache`), and answered with its `ETag` or a 304. A signed-in
/// visitor's page (their name, owner controls) is rendered for them.
pub async fn shared_page<T: Template>(
    req: &HttpRequest,
    state: &AppState,
    session: &MaybeSession,
    key: RenderedKey,
    render: impl AsyncFnOnce() -> Result<T, CatalogError>,
) -> Result<HttpResponse, CatalogError> {
    if session.0.is_some() {
        // Rendered for this account (owner controls, who holds grants):
        // never for a shared cache.
        let mut response = html(&render().await?)?;
        response.headers_mut().insert(
            header::CACHE_CONTROL,
            header::HeaderValue::from_static("private, no-store"),
        );
        return Ok(response);
    }
    let page = state
        .rendered(key, || async move {
            Ok::<_, CatalogError>(Rendered::new(Bytes::from(render().await?.render()?)))
        })
        .await?;
    let current = crate::conditional::if_none_match(req, &page.etag);
    let mut response = if current {
        HttpResponse::NotModified()
    } else {
        HttpResponse::Ok()
    };
    response.insert_header((header::ETAG, page.etag));
    Ok(if current {
        response.finish()
    } else {
        response.content_type(HTML).body(page.body)
    })
}
