//! MCP servers: the versions of tool packages whose stored tool.yaml says
//! `kind: mcp` (`versions.spec->>'kind'`, indexed by migration 0033's
//! partial index), read for the MCP Registry API (`/v0.1/servers`).
//!
//! Every read here is one statement whatever the catalog's size: pages
//! are keyset pages (`(normalized name, version id)` after the cursor,
//! never an `OFFSET`), and what a page needs of its packages' other
//! versions is one `select_in!` per 500 packages.

use agentlang_core::{PackageName, Version, digest::Sha256Digest, signing::KeyId};
use serde_json::Value;
use sqlx::types::Json;

use super::{Db, index::VersionHead, select_in, with_pool};

/// One version of an MCP server, with what `/v0.1` shows of it.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct McpVersionRow {
    pub package_id: i64,
    /// The package's name as first published.
    pub name: PackageName,
    pub normalized_name: String,
    pub version_id: i64,
    pub version: Version,
    pub sha256: Sha256Digest,
    pub signer_key_id: Option<KeyId>,
    /// tool.yaml's `description`.
    pub description: Option<String>,
    /// tool.yaml's `mcp` section, as stored.
    pub mcp: Option<Json<Value>>,
    pub yanked: bool,
    pub yank_reason: Option<String>,
    pub published_at: i64,
    pub deleted_at: Option<i64>,
    /// The index of the publish's log entry.
    pub log_index: Option<i64>,
    /// When the latest yank or unyank was logged.
    pub status_changed_at: Option<i64>,
}

/// A package with an MCP version, for a page of servers.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct McpPackageRow {
    pub package_id: i64,
    pub normalized_name: String,
}

/// What a page of `/v0.1/servers` asks of the stored versions.
#[derive(Debug, Clone, Default)]
pub struct McpFilter {
    /// Past this keyset position: `(normalized name, version id)`; a page
    /// of packages compares the name alone.
    pub after: Option<(String, i64)>,
    /// A `LIKE` pattern over the normalized name (`\` escapes).
    pub name_like: Option<String>,
    /// Versions published, yanked, unyanked or deleted at or after this
    /// (Unix seconds).
    pub updated_since: Option<i64>,
    /// Versions of this SemVer precedence only.
    pub version: Option<Version>,
    /// Deleted versions too.
    pub include_deleted: bool,
    /// At most this many rows.
    pub limit: i64,
}

/// The columns of an [`McpVersionRow`], over `versions v`, `packages p`
/// and the yank's log entry `e`.
macro_rules! mcp_version_columns {
    () => {
        "SELECT p.id AS package_id, p.name, p.normalized_name, v.id AS version_id, v.version,
                v.sha256, v.signer_key_id, v.spec->>'description' AS description,
                v.spec->'mcp' AS mcp, v.yanked, v.yank_reason, v.published_at, v.deleted_at,
                v.log_index, e.created_at AS status_changed_at
         FROM versions v
         JOIN packages p ON p.id = v.package_id
         LEFT JOIN log_entries e ON e.idx = v.yank_log_index
         WHERE p.kind = 'tool' AND v.spec->>'kind' = 'mcp' "
    };
}

/// The filters every page applies to a version `v` (and its yank entry
/// `e`): $1 deleted ones too, $2 name pattern, $3 updated since, $4-$7
/// precedence.
macro_rules! mcp_version_filters {
    () => {
        " AND ($1 OR v.deleted_at IS NULL)
          AND (CAST($2 AS TEXT) IS NULL OR p.normalized_name LIKE $2 ESCAPE '\\')
          AND (CAST($3 AS BIGINT) IS NULL OR v.published_at >= $3
               OR e.created_at >= $3 OR v.deleted_at >= $3)
          AND (CAST($4 AS BIGINT) IS NULL
               OR (v.major = $4 AND v.minor = $5 AND v.patch = $6 AND v.prerelease = $7))"
    };
}

/// The precedence columns of a version, as publish stores them (clamped
/// alike).
fn precedence(version: Option<&Version>) -> (Option<i64>, Option<i64>, Option<i64>, String) {
    let clamp = |n: u64| Some(i64::try_from(n).unwrap_or(i64::MAX));
    match version.map(Version::semver) {
        None => (None, None, None, String::new()),
        Some(v) => (
            clamp(v.major),
            clamp(v.minor),
            clamp(v.patch),
            v.pre.as_str().to_owned(),
        ),
    }
}

impl Db {
    /// A page of MCP server versions, by normalized name then version id
    /// (publish order), past `filter.after`: one statement.
    pub async fn mcp_version_page(
        &self,
        filter: &McpFilter,
    ) -> Result<Vec<McpVersionRow>, sqlx::Error> {
        let (name, id) = filter.after.clone().unwrap_or_default();
        let (major, minor, patch, pre) = precedence(filter.version.as_ref());
        with_pool!(self, pool => {
            sqlx::query_as::<_, McpVersionRow>(concat!(
                mcp_version_columns!(),
                mcp_version_filters!(),
                " AND (p.normalized_name > $8 OR (p.normalized_name = $8 AND v.id > $9))
                 ORDER BY p.normalized_name, v.id
                 LIMIT $10"
            ))
            .bind(filter.include_deleted)
            .bind(filter.name_like.as_deref())
            .bind(filter.updated_since)
            .bind(major)
            .bind(minor)
            .bind(patch)
            .bind(&pre)
            .bind(&name)
            .bind(id)
            .bind(filter.limit)
            .fetch_all(pool)
            .await
        })
    }

    /// A page of packages with at least one MCP version that passes
    /// `filter`, by normalized name past `filter.after`: one statement.
    pub async fn mcp_package_page(
        &self,
        filter: &McpFilter,
    ) -> Result<Vec<McpPackageRow>, sqlx::Error> {
        let name = filter
            .after
            .clone()
            .map(|(name, _)| name)
            .unwrap_or_default();
        let (major, minor, patch, pre) = precedence(filter.version.as_ref());
        with_pool!(self, pool => {
            sqlx::query_as::<_, McpPackageRow>(concat!(
                "SELECT p.id AS package_id, p.normalized_name FROM packages p
                 WHERE p.kind = 'tool' AND p.normalized_name > $8
                   AND EXISTS (SELECT 1 FROM versions v
                               LEFT JOIN log_entries e ON e.idx = v.yank_log_index
                               WHERE v.package_id = p.id AND v.spec->>'kind' = 'mcp'",
                mcp_version_filters!(),
                ")
                 ORDER BY p.normalized_name
                 LIMIT $9"
            ))
            .bind(filter.include_deleted)
            .bind(filter.name_like.as_deref())
            .bind(filter.updated_since)
            .bind(major)
            .bind(minor)
            .bind(patch)
            .bind(&pre)
            .bind(&name)
            .bind(filter.limit)
            .fetch_all(pool)
            .await
        })
    }

    /// The live MCP versions of `package_ids`, unordered, as the rule of
    /// which version represents a package reads them: one query per 500
    /// packages.
    pub async fn mcp_version_heads(
        &self,
        package_ids: &[i64],
    ) -> Result<Vec<VersionHead>, sqlx::Error> {
        const SELECT: &str = "SELECT package_id, id, version, yanked, downloads, published_at
             FROM versions WHERE deleted_at IS NULL AND spec->>'kind' = 'mcp' AND package_id IN (";
        select_in!(self, VersionHead, SELECT, SELECT, package_ids)
    }

    /// MCP versions by id: one query per 500.
    pub async fn mcp_versions_by_id(
        &self,
        version_ids: &[i64],
    ) -> Result<Vec<McpVersionRow>, sqlx::Error> {
        select_in!(
            self,
            McpVersionRow,
            concat!(mcp_version_columns!(), " AND v.id IN ("),
            concat!(mcp_version_columns!(), " AND v.id IN ("),
            version_ids
        )
    }

    /// Every MCP version of the tool `normalized_name` (deleted ones with
    /// `include_deleted`), in publish order: one statement.
    pub async fn mcp_versions_of(
        &self,
        normalized_name: &str,
        include_deleted: bool,
    ) -> Result<Vec<McpVersionRow>, sqlx::Error> {
        with_pool!(self, pool => {
            sqlx::query_as::<_, McpVersionRow>(concat!(
                mcp_version_columns!(),
                " AND p.normalized_name = $1 AND ($2 OR v.deleted_at IS NULL)
                 ORDER BY v.id"
            ))
            .bind(normalized_name)
            .bind(include_deleted)
            .fetch_all(pool)
            .await
        })
    }
}
