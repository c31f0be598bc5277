//! The MCP Registry API, v0.1, read side (`GET /v0.1/servers...`, the
//! `2025-12-01` document): every published version of a tool of
//! `kind: mcp` is a version of the MCP server `<namespace>/<tool name>`,
//! served as the server.json its tool.yaml's `mcp:` section makes
//! (`agentlang_core::mcp`), with the registry's facts in `_meta`.
//!
//! - `io.modelcontextprotocol.registry/official`: `status` (`active`;
//!   `deprecated` for a yanked or deprecated version (docs/statuses.md:
//!   its own status, else its package's), the reason as `statusMessage`;
//!   `deleted` for a version the registry deleted or quarantined),
//!   `statusChangedAt` (the last yank, unyank, status change or deletion), `publishedAt`, `updatedAt` (the
//!   latest of those), `isLatest` (the version that represents the tool
//!   everywhere: `search::representative` over its MCP versions).
//! - [`PUBLICATION_META`]: the container's SHA-256, the key that signed
//!   it, and the index of its publish in the transparency log.
//!
//! A list is a keyset walk in (normalized tool name, version id) order,
//! so its cursor survives publishes; every request is a fixed number of
//! statements (three, four for `version=latest`: one reads the statuses), whatever the catalog's
//! size, and answers are kept at a registry generation like searches.

pub mod query;

use std::collections::{BTreeMap, HashMap, HashSet};

use agentlang_core::{
    Kind, PackageName, Version,
    mcp::{self as format, ServerDetail},
};
use serde::Serialize;
use serde_json::Value;
use store::{
    index::VersionHead,
    mcp::{McpFilter, McpVersionRow},
    time::rfc3339,
};

pub use query::{Cursor, DEFAULT_LIMIT, ListQuery, MAX_LIMIT, VersionFilter};

use crate::{
    Registry, ServiceError,
    cache::{Rendered, RenderedKey},
    search::representative,
    statuses::PackageStatuses,
};

/// The MCP registry's own `_meta` key, which any registry fills.
pub const OFFICIAL_META: &str = "io.modelcontextprotocol.registry/official";
/// This registry's `_meta` key: how the version was published.
pub const PUBLICATION_META: &str = "dev.agentlang.registry/publication";
/// Longest `statusMessage` (the MCP document's `maxLength`).
const MAX_STATUS_MESSAGE_CHARS: usize = 500;

/// A server version's lifecycle, as the MCP document names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema), schema(as = McpStatus))]
pub enum Status {
    /// Published and not yanked.
    Active,
    /// Yanked: still served and installable by exact version, not chosen
    /// for new requirements.
    Deprecated,
    /// Deleted by the registry (its container is gone): listed only with
    /// `include_deleted` or `updated_since`.
    Deleted,
}

/// `_meta["io.modelcontextprotocol.registry/official"]`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema), schema(as = McpOfficialMeta))]
pub struct OfficialMeta {
    pub status: Status,
    /// A yanked version's reason, when its owner gave one.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(max_length = 500))]
    pub status_message: Option<String>,
    /// When the version was last yanked, unyanked or deleted.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(format = DateTime))]
    pub status_changed_at: Option<String>,
    #[cfg_attr(feature = "openapi", schema(format = DateTime))]
    pub published_at: String,
    /// The latest of `publishedAt` and `statusChangedAt`.
    #[cfg_attr(feature = "openapi", schema(format = DateTime))]
    pub updated_at: String,
    /// Whether this version represents the server: its newest unyanked
    /// release (else prerelease; else, all yanked, its newest).
    pub is_latest: bool,
}

/// `_meta["dev.agentlang.registry/publication"]`: what `agentlang pull`
/// checks, for a client that wants to check it too.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema), schema(as = McpPublicationMeta))]
pub struct PublicationMeta {
    /// SHA-256 of the `.tool` container, lowercase hex.
    #[cfg_attr(feature = "openapi", schema(pattern = "^[0-9a-f]{64}$"))]
    pub container_sha256: String,
    /// The id of the key that signed the container
    /// (`GET /api/v1/keys/{keyId}`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub key_id: Option<String>,
    /// The index of the publish's entry in the transparency log
    /// (`/log/...`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub log_index: Option<i64>,
}

/// A server version's `_meta`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema), schema(as = McpResponseMeta))]
pub struct ResponseMeta {
    #[serde(rename = "io.modelcontextprotocol.registry/official")]
    #[cfg_attr(
        feature = "openapi",
        schema(rename = "io.modelcontextprotocol.registry/official")
    )]
    pub official: OfficialMeta,
    #[serde(rename = "dev.agentlang.registry/publication")]
    #[cfg_attr(
        feature = "openapi",
        schema(rename = "dev.agentlang.registry/publication")
    )]
    pub publication: PublicationMeta,
}

/// One version of one server (the MCP document's `ServerResponse`).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema), schema(as = McpServerResponse))]
pub struct ServerResponse {
    pub server: ServerDetail,
    #[serde(rename = "_meta")]
    #[cfg_attr(feature = "openapi", schema(rename = "_meta"))]
    pub meta: ResponseMeta,
}

/// A list's `metadata`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema), schema(as = McpListMetadata))]
pub struct ListMetadata {
    /// The next page's `cursor`; absent on the last page.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
    /// Entries on this page.
    pub count: usize,
}

/// Server versions (the MCP document's `ServerList`).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema), schema(as = McpServerList))]
pub struct ServerList {
    pub servers: Vec<ServerResponse>,
    pub metadata: ListMetadata,
}

/// The namespace server names are in: the configured one, else the
/// public URL's host reversed ([`format::default_namespace`]).
pub fn namespace(registry: &Registry) -> String {
    if let Some(namespace) = &registry.settings.mcp_namespace {
        return namespace.clone();
    }
    let host = url::Url::parse(&registry.public_url)
        .ok()
        .and_then(|u| u.host_str().map(str::to_owned))
        .unwrap_or_default();
    format::default_namespace(&host)
}

/// The tool a server name (`<namespace>/<tool name>`, decoded) names, in
/// normalized form; `None` when it is not one of this registry's.
fn tool_of(namespace: &str, server_name: &str) -> Option<PackageName> {
    let (ns, name) = server_name.split_once('/')?;
    if !ns.eq_ignore_ascii_case(namespace) {
        return None;
    }
    PackageName::new(name).ok()
}

/// `search` as a `LIKE` pattern over normalized tool names: a substring of
/// `<namespace>/<name>` (case-insensitive). `Err(())` when it can match no
/// server; `Ok(None)` when it matches every one (it lies in the
/// namespace).
fn name_pattern(namespace: &str, search: &str) -> Result<Option<String>, ()> {
    let namespace = namespace.to_ascii_lowercase();
    let allowed = |b: u8| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'-' | b'_' | b'/');
    if search.len() > query::MAX_SEARCH_LEN || !search.bytes().all(allowed) {
        return Err(());
    }
    let escape = |s: &str| {
        agentlang_core::names::normalize(s)
            .replace('\\', "\\\\")
            .replace('%', "\\%")
            .replace('_', "\\_")
    };
    match search.split_once('/') {
        None if namespace.contains(search) => Ok(None),
        // A tool name holds no dot.
        None if search.contains('.') => Err(()),
        None => Ok(Some(format!("%{}%", escape(search)))),
        Some((left, right)) => {
            if right.contains('/') || right.contains('.') || !namespace.ends_with(left) {
                return Err(());
            }
            Ok(Some(format!("{}%", escape(right))))
        }
    }
}

/// Which of `heads` (one package's live MCP versions) is its latest.
fn latest_of(heads: &[VersionHead]) -> Option<i64> {
    let chosen = representative(heads)?;
    let version = chosen.shown.unwrap_or(chosen.described);
    heads.iter().find(|h| h.version == version).map(|h| h.id)
}

/// The latest MCP version of each of `package_ids`: one query per 500.
async fn latest_versions(
    registry: &Registry,
    package_ids: &[i64],
) -> Result<HashMap<i64, i64>, ServiceError> {
    let mut by_package: BTreeMap<i64, Vec<VersionHead>> = BTreeMap::new();
    for head in registry.db.mcp_version_heads(package_ids).await? {
        by_package.entry(head.package_id).or_default().push(head);
    }
    Ok(by_package
        .into_iter()
        .filter_map(|(package, heads)| Some((package, latest_of(&heads)?)))
        .collect())
}

/// The statuses of the rows' packages, in one query.
async fn statuses_of<'a>(
    registry: &Registry,
    rows: impl Iterator<Item = &'a McpVersionRow>,
) -> Result<HashMap<i64, PackageStatuses>, ServiceError> {
    let ids: Vec<i64> = rows
        .map(|r| r.package_id)
        .collect::<HashSet<_>>()
        .into_iter()
        .collect();
    if ids.is_empty() {
        return Ok(HashMap::new());
    }
    crate::statuses::of_packages(registry, &ids).await
}

/// One stored version as the MCP document shows it.
fn entry(
    namespace: &str,
    row: &McpVersionRow,
    is_latest: bool,
    statuses: &HashMap<i64, PackageStatuses>,
) -> ServerResponse {
    use crate::statuses::Status as Set;
    let set = statuses
        .get(&row.package_id)
        .and_then(|s| s.effective(row.version_id))
        .filter(|s| matches!(s.status, Set::Deprecated | Set::Quarantined));
    let (status, changed_at) = match (row.deleted_at, set, row.yanked) {
        (Some(at), _, _) => (Status::Deleted, Some(at)),
        (None, Some(s), _) if s.status == Set::Quarantined => {
            (Status::Deleted, Some(s.changed_unix))
        }
        (None, Some(s), _) => (Status::Deprecated, Some(s.changed_unix)),
        (None, None, true) => (Status::Deprecated, row.status_changed_at),
        (None, None, false) => (Status::Active, row.status_changed_at),
    };
    let set_message = set
        .filter(|_| row.deleted_at.is_none())
        .map(|s| s.sentence());
    let status_message = set_message
        .as_deref()
        .or((status == Status::Deprecated)
            .then_some(row.yank_reason.as_deref())
            .flatten())
        .filter(|r| !r.trim().is_empty())
        .map(|reason| {
            if reason.chars().count() <= MAX_STATUS_MESSAGE_CHARS {
                reason.to_owned()
            } else {
                let cut: String = reason.chars().take(MAX_STATUS_MESSAGE_CHARS - 1).collect();
                format!("{}…", cut.trim_end())
            }
        });
    ServerResponse {
        server: format::server_detail(
            namespace,
            row.name.as_str(),
            &row.version.to_string(),
            row.description.as_deref().unwrap_or_default(),
            row.mcp.as_ref().map(|m| &m.0),
        ),
        meta: ResponseMeta {
            official: OfficialMeta {
                status,
                status_message,
                status_changed_at: changed_at.map(rfc3339),
                published_at: rfc3339(row.published_at),
                updated_at: rfc3339(updated_at(row)),
                is_latest: is_latest && row.deleted_at.is_none(),
            },
            publication: PublicationMeta {
                container_sha256: row.sha256.to_hex(),
                key_id: row.signer_key_id.as_ref().map(|k| k.as_str().to_owned()),
                log_index: row.log_index,
            },
        },
    }
}

/// When a version was last changed: published, yanked or unyanked,
/// deleted.
fn updated_at(row: &McpVersionRow) -> i64 {
    [
        Some(row.published_at),
        row.status_changed_at,
        row.deleted_at,
    ]
    .into_iter()
    .flatten()
    .max()
    .unwrap_or(row.published_at)
}

/// `GET /v0.1/servers` as sent, kept at the registry generation.
pub async fn list_answer(registry: &Registry, query: &ListQuery) -> Result<Rendered, ServiceError> {
    registry
        .rendered(RenderedKey::McpServers(query.clone()), || async {
            Rendered::json(&list_servers(registry, query).await?)
        })
        .await
}

/// One page of server versions: see the module's docs.
pub async fn list_servers(
    registry: &Registry,
    query: &ListQuery,
) -> Result<ServerList, ServiceError> {
    let namespace = namespace(registry);
    let empty = || ServerList {
        servers: Vec::new(),
        metadata: ListMetadata {
            next_cursor: None,
            count: 0,
        },
    };
    let name_like = match query.search.as_deref().map(|s| name_pattern(&namespace, s)) {
        None | Some(Ok(None)) => None,
        Some(Ok(Some(pattern))) => Some(pattern),
        Some(Err(())) => return Ok(empty()),
    };
    let limit = usize::try_from(query.limit).unwrap_or(usize::MAX);
    let mut filter = McpFilter {
        after: query.after.as_ref().map(|c| (c.name.clone(), c.id)),
        name_like,
        updated_since: query.updated_since,
        version: None,
        include_deleted: query.include_deleted,
        // One more than shown: whether there is a next page.
        limit: i64::from(query.limit) + 1,
    };
    let db = &registry.db;
    let (rows, next) = match &query.version {
        VersionFilter::Nothing => return Ok(empty()),
        VersionFilter::Latest => {
            let mut packages = db.mcp_package_page(&filter).await?;
            let more = packages.len() > limit;
            packages.truncate(limit);
            let next = more.then(|| packages.last()).flatten().map(|p| Cursor {
                name: p.normalized_name.clone(),
                id: i64::MAX,
            });
            let ids: Vec<i64> = packages.iter().map(|p| p.package_id).collect();
            let latest = latest_versions(registry, &ids).await?;
            let version_ids: Vec<i64> = ids
                .iter()
                .filter_map(|id| latest.get(id).copied())
                .collect();
            let mut rows = db.mcp_versions_by_id(&version_ids).await?;
            // The package was found by any version updated since: its
            // latest must be.
            rows.retain(|r| {
                query
                    .updated_since
                    .is_none_or(|since| updated_at(r) >= since)
            });
            rows.sort_by(|a, b| a.normalized_name.cmp(&b.normalized_name));
            let rows = rows.into_iter().map(|r| (r, true)).collect::<Vec<_>>();
            (rows, next)
        }
        VersionFilter::All | VersionFilter::Exact(_) => {
            if let VersionFilter::Exact(version) = &query.version {
                filter.version = Some(version.clone());
            }
            let mut rows = db.mcp_version_page(&filter).await?;
            let more = rows.len() > limit;
            rows.truncate(limit);
            let next = more.then(|| rows.last()).flatten().map(|r| Cursor {
                name: r.normalized_name.clone(),
                id: r.version_id,
            });
            let ids: Vec<i64> = rows
                .iter()
                .map(|r| r.package_id)
                .collect::<HashSet<_>>()
                .into_iter()
                .collect();
            let latest: HashSet<i64> = latest_versions(registry, &ids)
                .await?
                .into_values()
                .collect();
            let rows = rows
                .into_iter()
                .map(|r| {
                    let is_latest = latest.contains(&r.version_id);
                    (r, is_latest)
                })
                .collect();
            (rows, next)
        }
    };
    let statuses = statuses_of(registry, rows.iter().map(|(r, _)| r)).await?;
    let servers: Vec<ServerResponse> = rows
        .iter()
        .map(|(row, is_latest)| entry(&namespace, row, *is_latest, &statuses))
        .collect();
    Ok(ServerList {
        metadata: ListMetadata {
            next_cursor: next.map(|c| c.encode()),
            count: servers.len(),
        },
        servers,
    })
}

/// A server's versions as stored, with which is its latest; `NotFound`
/// when the name is not this registry's or names no MCP server.
async fn server_versions(
    registry: &Registry,
    server_name: &str,
    include_deleted: bool,
) -> Result<(String, Vec<McpVersionRow>, Option<i64>), ServiceError> {
    let namespace = namespace(registry);
    let not_found = || ServiceError::NotFound(format!("server {server_name:?}"));
    let tool = tool_of(&namespace, server_name).ok_or_else(not_found)?;
    let rows = registry
        .db
        .mcp_versions_of(&tool.normalized(), include_deleted)
        .await?;
    if rows.is_empty() {
        return Err(not_found());
    }
    let heads: Vec<VersionHead> = rows
        .iter()
        .filter(|r| r.deleted_at.is_none())
        .map(|r| VersionHead {
            package_id: r.package_id,
            id: r.version_id,
            version: r.version.clone(),
            yanked: r.yanked,
            downloads: 0,
            published_at: r.published_at,
        })
        .collect();
    let latest = latest_of(&heads);
    Ok((namespace, rows, latest))
}

/// `GET /v0.1/servers/{serverName}/versions` as sent: every version,
/// newest publication first.
pub async fn versions_answer(
    registry: &Registry,
    server_name: &str,
    include_deleted: bool,
) -> Result<Rendered, ServiceError> {
    let key = server_key(registry, server_name, None, include_deleted)?;
    registry
        .rendered(key, || async {
            let (namespace, mut rows, latest) =
                server_versions(registry, server_name, include_deleted).await?;
            rows.sort_by(|a, b| {
                (b.published_at, b.version_id).cmp(&(a.published_at, a.version_id))
            });
            let statuses = statuses_of(registry, rows.iter()).await?;
            let servers: Vec<ServerResponse> = rows
                .iter()
                .map(|r| entry(&namespace, r, Some(r.version_id) == latest, &statuses))
                .collect();
            Rendered::json(&ServerList {
                metadata: ListMetadata {
                    next_cursor: None,
                    count: servers.len(),
                },
                servers,
            })
        })
        .await
}

/// `GET /v0.1/servers/{serverName}/versions/{version}` as sent: `latest`,
/// or a version by SemVer precedence (build metadata aside, as versions
/// are unique by it).
pub async fn version_answer(
    registry: &Registry,
    server_name: &str,
    version: &str,
    include_deleted: bool,
) -> Result<Rendered, ServiceError> {
    let key = server_key(registry, server_name, Some(version), include_deleted)?;
    registry
        .rendered(key, || async {
            let (namespace, rows, latest) =
                server_versions(registry, server_name, include_deleted).await?;
            let not_found =
                || ServiceError::NotFound(format!("version {version:?} of server {server_name:?}"));
            let row = if version == "latest" {
                rows.iter().find(|r| Some(r.version_id) == latest)
            } else {
                let wanted = Version::parse(version).map_err(|_| not_found())?;
                rows.iter().find(|r| {
                    r.version.semver().cmp_precedence(wanted.semver()) == std::cmp::Ordering::Equal
                })
            }
            .ok_or_else(not_found)?;
            let statuses = statuses_of(registry, std::iter::once(row)).await?;
            Rendered::json(&entry(
                &namespace,
                row,
                Some(row.version_id) == latest,
                &statuses,
            ))
        })
        .await
}

/// The cache key of one server's answers, by its tool's normalized name;
/// `NotFound` for a name that is not this registry's.
fn server_key(
    registry: &Registry,
    server_name: &str,
    version: Option<&str>,
    include_deleted: bool,
) -> Result<RenderedKey, ServiceError> {
    let tool = tool_of(&namespace(registry), server_name)
        .ok_or_else(|| ServiceError::NotFound(format!("server {server_name:?}")))?;
    Ok(RenderedKey::McpServer {
        name: tool.normalized(),
        version: version.map(str::to_owned),
        include_deleted,
    })
}

/// What the catalog shows of a version of a `kind: mcp` tool: its
/// server.json as `/v0.1` serves it, and that version's `/v0.1` URL.
/// `None` for a tool of another kind.
pub fn catalog_entry(
    registry: &Registry,
    kind: Kind,
    name: &PackageName,
    version: &Version,
    spec: &Value,
) -> Option<(ServerDetail, String)> {
    if kind != Kind::Tool || spec.get("kind").and_then(Value::as_str) != Some("mcp") {
        return None;
    }
    let namespace = namespace(registry);
    let detail = format::server_detail(
        &namespace,
        name.as_str(),
        &version.to_string(),
        spec.get("description")
            .and_then(Value::as_str)
            .unwrap_or_default(),
        spec.get("mcp"),
    );
    let encode = |s: &str| url::form_urlencoded::byte_serialize(s.as_bytes()).collect::<String>();
    let url = format!(
        "{}/v0.1/servers/{}/versions/{}",
        registry.public_url.trim_end_matches('/'),
        encode(&detail.name),
        encode(&version.to_string()),
    );
    Some((detail, url))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn searches_are_substrings_of_the_whole_name() {
        let ns = "com.example.registry";
        assert_eq!(
            name_pattern(ns, "weather"),
            Ok(Some("%weather%".to_owned()))
        );
        // `-` and `_` are one in names; `_` is no wildcard.
        assert_eq!(
            name_pattern(ns, "web-search"),
            Ok(Some("%web\\_search%".to_owned()))
        );
        assert_eq!(name_pattern(ns, "example"), Ok(None));
        assert_eq!(
            name_pattern(ns, "registry/wea"),
            Ok(Some("wea%".to_owned()))
        );
        assert_eq!(name_pattern(ns, "/"), Ok(Some("%".to_owned())));
        assert_eq!(name_pattern(ns, "other/wea"), Err(()));
        assert_eq!(name_pattern(ns, "a b"), Err(()));
        assert_eq!(name_pattern(ns, "x%"), Err(()));
        assert_eq!(name_pattern(ns, "weather.v2"), Err(()));
    }

    #[test]
    fn server_names_are_the_namespace_and_a_tool_name() {
        let ns = "com.example";
        assert_eq!(
            tool_of(ns, "com.example/Web-Search").map(|t| t.normalized()),
            Some("web_search".to_owned())
        );
        assert_eq!(
            tool_of(ns, "COM.EXAMPLE/x").map(|t| t.normalized()),
            Some("x".to_owned())
        );
        assert!(tool_of(ns, "org.example/x").is_none());
        assert!(tool_of(ns, "com.example/a/b").is_none());
        assert!(tool_of(ns, "web_search").is_none());
    }
}
