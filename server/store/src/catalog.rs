//! Queries only the web catalog needs: listings with counts, reverse
//! dependencies, per-key and per-publisher views, and web sessions.
//!
//! JSON fields of a version's spec are read in SQL where a listing needs
//! them (`json_extract` in SQLite, `->>` in PostgreSQL), so listing pages
//! never load whole specs.

use super::{Db, dialect::LOCK_PINS_OF_TOOL, keys::SigningKeyRecord, now, select_in, with_pool};
use agentlang_core::{Kind, PackageName, Username, Version, signing::KeyId};

/// A web session joined with its account.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct SessionRecord {
    pub account_id: i64,
    pub username: Username,
    pub is_admin: bool,
    pub csrf_token: String,
    pub expires_at: i64,
}

/// Registry-wide counts for the home page.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CatalogCounts {
    pub agents: i64,
    pub tools: i64,
    pub versions: i64,
    pub publishers: i64,
}

/// A package with the aggregates its list entry shows.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct PackageListing {
    pub id: i64,
    pub kind: Kind,
    pub name: PackageName,
    pub description: String,
    pub last_published_at: i64,
    pub downloads: i64,
}

/// The listing fields of one live version.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct VersionBrief {
    pub package_id: i64,
    pub version: Version,
    pub yanked: bool,
    pub published_at: i64,
    pub title: Option<String>,
    pub category: Option<String>,
    /// The highest risk of an agent version's effective capabilities.
    pub max_risk: Option<String>,
}

/// A package version that depends on a tool, through a dependency row or
/// an `agent.lock` pin.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct DependentRow {
    pub kind: Kind,
    pub name: PackageName,
    pub version: Version,
    pub requirement: Option<String>,
}

/// A version signed by a key.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct SignedVersionRow {
    pub kind: Kind,
    pub name: PackageName,
    pub version: Version,
}

/// The columns of a package listing; `p` is `packages`, `v` its live versions.
const LISTING_SELECT: &str = "SELECT p.id, p.kind, p.name, p.description,
        MAX(v.published_at) AS last_published_at,
        CAST(COALESCE(SUM(v.downloads), 0) AS BIGINT) AS downloads
 FROM packages p JOIN versions v ON v.package_id = p.id AND v.deleted_at IS NULL";

const LISTING_GROUP: &str = "GROUP BY p.id, p.kind, p.name, p.description";

impl Db {
    // ------------------------------------------------------------ sessions

    pub async fn create_web_session(
        &self,
        id_hash: &str,
        account_id: i64,
        csrf_token: &str,
        expires_at: i64,
    ) -> Result<(), sqlx::Error> {
        with_pool!(self, pool => {
            sqlx::query(
                "INSERT INTO web_sessions (id_hash, account_id, csrf_token, created_at, expires_at)
                 VALUES ($1, $2, $3, $4, $5)",
            )
            .bind(id_hash)
            .bind(account_id)
            .bind(csrf_token)
            .bind(now())
            .bind(expires_at)
            .execute(pool)
            .await
            .map(drop)
        })
    }

    /// The unexpired session with this id hash.
    pub async fn find_web_session(
        &self,
        id_hash: &str,
    ) -> Result<Option<SessionRecord>, sqlx::Error> {
        with_pool!(self, pool => {
            sqlx::query_as::<_, SessionRecord>(
                "SELECT s.account_id, a.username, a.is_admin, s.csrf_token, s.expires_at
                 FROM web_sessions s JOIN accounts a ON a.id = s.account_id
                 WHERE s.id_hash = $1 AND s.expires_at > $2",
            )
            .bind(id_hash)
            .bind(now())
            .fetch_optional(pool)
            .await
        })
    }

    /// Ends a session, and sweeps every expired one while at it.
    pub async fn delete_web_session(&self, id_hash: &str) -> Result<(), sqlx::Error> {
        with_pool!(self, pool => {
            sqlx::query("DELETE FROM web_sessions WHERE id_hash = $1 OR expires_at <= $2")
                .bind(id_hash)
                .bind(now())
                .execute(pool)
                .await
                .map(drop)
        })
    }

    /// Ends the account's sessions but `keep` (an id hash); returns how many.
    pub async fn delete_account_sessions(
        &self,
        account_id: i64,
        keep: Option<&str>,
    ) -> Result<u64, sqlx::Error> {
        with_pool!(self, pool => {
            sqlx::query(
                "DELETE FROM web_sessions WHERE account_id = $1 AND id_hash <> $2",
            )
            .bind(account_id)
            .bind(keep.unwrap_or(""))
            .execute(pool)
            .await
            .map(|r| r.rows_affected())
        })
    }

    /// Keeps a just-created token (sealed) for the next page view of this
    /// session.
    pub async fn set_session_flash(
        &self,
        id_hash: &str,
        token_name: &str,
        token_secret: &str,
    ) -> Result<(), sqlx::Error> {
        with_pool!(self, pool => {
            sqlx::query(
                "UPDATE web_sessions SET flash_token_name = $1, flash_token_secret = $2
                 WHERE id_hash = $3",
            )
            .bind(token_name)
            .bind(token_secret)
            .bind(id_hash)
            .execute(pool)
            .await
            .map(drop)
        })
    }

    /// Returns and clears the session's flashed token (name, secret). The
    /// clearing UPDATE is conditional on the row still holding it, so two
    /// concurrent page views cannot both show it.
    pub async fn take_session_flash(
        &self,
        id_hash: &str,
    ) -> Result<Option<(String, String)>, sqlx::Error> {
        let row: Option<(Option<String>, Option<String>)> = with_pool!(self, pool => {
            sqlx::query_as(
                "SELECT flash_token_name, flash_token_secret FROM web_sessions WHERE id_hash = $1",
            )
            .bind(id_hash)
            .fetch_optional(pool)
            .await
        })?;
        let Some((Some(name), Some(secret))) = row else {
            return Ok(None);
        };
        let cleared = with_pool!(self, pool => {
            sqlx::query(
                "UPDATE web_sessions SET flash_token_name = NULL, flash_token_secret = NULL
                 WHERE id_hash = $1 AND flash_token_secret = $2",
            )
            .bind(id_hash)
            .bind(&secret)
            .execute(pool)
            .await
            .map(|r| r.rows_affected())
        })?;
        Ok((cleared > 0).then_some((name, secret)))
    }

    // ------------------------------------------------------------ listings

    pub async fn catalog_counts(&self) -> Result<CatalogCounts, sqlx::Error> {
        let (agents, tools, versions, publishers): (i64, i64, i64, i64) = with_pool!(self, pool => {
            sqlx::query_as(
                "SELECT
                   (SELECT COUNT(*) FROM packages WHERE kind = 'agent'),
                   (SELECT COUNT(*) FROM packages WHERE kind = 'tool'),
                   (SELECT COUNT(*) FROM versions WHERE deleted_at IS NULL),
                   (SELECT COUNT(DISTINCT account_id) FROM package_owners)",
            )
            .fetch_one(pool)
            .await
        })?;
        Ok(CatalogCounts {
            agents,
            tools,
            versions,
            publishers,
        })
    }

    /// Packages with a live version, most recently published first.
    pub async fn recently_published(&self, limit: i64) -> Result<Vec<PackageListing>, sqlx::Error> {
        let sql = format!(
            "{LISTING_SELECT} {LISTING_GROUP} ORDER BY last_published_at DESC, p.id DESC LIMIT $1"
        );
        with_pool!(self, pool => {
            sqlx::query_as::<_, PackageListing>(sqlx::AssertSqlSafe(sql))
                .bind(limit)
                .fetch_all(pool)
                .await
        })
    }

    /// Packages by downloads over all versions; packages never downloaded
    /// are left out.
    pub async fn most_downloaded(&self, limit: i64) -> Result<Vec<PackageListing>, sqlx::Error> {
        let sql = format!(
            "{LISTING_SELECT} {LISTING_GROUP}
             HAVING SUM(v.downloads) > 0
             ORDER BY downloads DESC, p.normalized_name LIMIT $1"
        );
        with_pool!(self, pool => {
            sqlx::query_as::<_, PackageListing>(sqlx::AssertSqlSafe(sql))
                .bind(limit)
                .fetch_all(pool)
                .await
        })
    }

    /// Every package of `kind` (or of any kind), by name, for browsing
    /// without a query.
    pub async fn browse_packages(
        &self,
        kind: Option<&str>,
        limit: i64,
        offset: i64,
    ) -> Result<Vec<PackageListing>, sqlx::Error> {
        let sql = format!(
            "{LISTING_SELECT} WHERE (CAST($1 AS TEXT) IS NULL OR p.kind = $1) {LISTING_GROUP}
             ORDER BY p.normalized_name, p.kind LIMIT $2 OFFSET $3"
        );
        with_pool!(self, pool => {
            sqlx::query_as::<_, PackageListing>(sqlx::AssertSqlSafe(sql))
                .bind(kind)
                .bind(limit)
                .bind(offset)
                .fetch_all(pool)
                .await
        })
    }

    /// How many packages of `kind` (or of any kind) have a live version.
    pub async fn count_packages(&self, kind: Option<&str>) -> Result<i64, sqlx::Error> {
        with_pool!(self, pool => {
            sqlx::query_scalar(
                "SELECT COUNT(*) FROM packages p
                 WHERE (CAST($1 AS TEXT) IS NULL OR p.kind = $1)
                   AND EXISTS (SELECT 1 FROM versions v
                               WHERE v.package_id = p.id AND v.deleted_at IS NULL)",
            )
            .bind(kind)
            .fetch_one(pool)
            .await
        })
    }

    /// The listings of the given packages that have a live version,
    /// unordered: one query per 500 ids.
    pub async fn package_listings_by_ids(
        &self,
        ids: &[i64],
    ) -> Result<Vec<PackageListing>, sqlx::Error> {
        let sql = format!("{LISTING_SELECT} WHERE p.id IN (");
        let group = format!(") {LISTING_GROUP}");
        // `select_in!` closes the list itself; the GROUP BY follows it.
        let mut out = Vec::new();
        for chunk in ids.chunks(super::ID_CHUNK) {
            match self {
                Db::Sqlite { pool, .. } => {
                    let mut query = sqlx::QueryBuilder::<sqlx::Sqlite>::new(&sql);
                    let mut list = query.separated(", ");
                    for id in chunk {
                        list.push_bind(*id);
                    }
                    query.push(&group);
                    out.extend(
                        query
                            .build_query_as::<PackageListing>()
                            .fetch_all(pool)
                            .await?,
                    );
                }
                Db::Postgres(pools) => {
                    let pool = pools.current();
                    let mut query = sqlx::QueryBuilder::<sqlx::Postgres>::new(&sql);
                    let mut list = query.separated(", ");
                    for id in chunk {
                        list.push_bind(*id);
                    }
                    query.push(&group);
                    out.extend(
                        query
                            .build_query_as::<PackageListing>()
                            .fetch_all(pool)
                            .await?,
                    );
                }
            }
        }
        Ok(out)
    }

    /// Packages the account owns, by name, at most `limit`.
    pub async fn owned_package_listings(
        &self,
        account_id: i64,
        limit: i64,
    ) -> Result<Vec<PackageListing>, sqlx::Error> {
        let sql = format!(
            "{LISTING_SELECT}
             JOIN package_owners o ON o.package_id = p.id AND o.account_id = $1
             {LISTING_GROUP} ORDER BY p.normalized_name, p.kind LIMIT $2"
        );
        with_pool!(self, pool => {
            sqlx::query_as::<_, PackageListing>(sqlx::AssertSqlSafe(sql))
                .bind(account_id)
                .bind(limit)
                .fetch_all(pool)
                .await
        })
    }

    /// The live versions of the given packages with the spec fields a list
    /// shows, in no particular order: one query per 500 packages.
    pub async fn version_briefs_for(
        &self,
        package_ids: &[i64],
    ) -> Result<Vec<VersionBrief>, sqlx::Error> {
        const SELECT: &str = "SELECT package_id, version, yanked, published_at, max_risk,
                    spec->>'title' AS title, spec->>'category' AS category
             FROM versions WHERE deleted_at IS NULL AND package_id IN (";
        select_in!(self, VersionBrief, SELECT, SELECT, package_ids)
    }

    /// Categories named by any live version, sorted.
    pub async fn categories_in_use(&self) -> Result<Vec<String>, sqlx::Error> {
        with_pool!(self, pool => {
            sqlx::query_scalar(
                "SELECT DISTINCT spec->>'category' AS c FROM versions
                 WHERE deleted_at IS NULL AND spec->>'category' IS NOT NULL ORDER BY c",
            )
            .fetch_all(pool)
            .await
        })
    }

    /// Live versions that use the tool `normalized_name`: by a dependency
    /// row (tool.yaml `dependencies`, agent.yaml `tools`) or by an
    /// `agent.lock` pin. Newest publications first; one row per version.
    pub async fn tool_dependents(
        &self,
        normalized_name: &str,
    ) -> Result<Vec<DependentRow>, sqlx::Error> {
        let by_edges: Vec<DependentRow> = with_pool!(self, pool => {
            sqlx::query_as::<_, DependentRow>(
                "SELECT p.kind, p.name, v.version, d.requirement
                 FROM dependencies d
                 JOIN versions v ON v.id = d.version_id AND v.deleted_at IS NULL
                 JOIN packages p ON p.id = v.package_id
                 WHERE d.kind = 'tool' AND d.normalized_name = $1
                 ORDER BY v.published_at DESC, v.id DESC",
            )
            .bind(normalized_name)
            .fetch_all(pool)
            .await
        })?;
        // Lock keys are written as the agent spelled them: fold them the way
        // names are normalized (lowercase, '-' as '_') before comparing.
        let pins = LOCK_PINS_OF_TOOL.of(self.dialect());
        let by_pins: Vec<DependentRow> = with_pool!(self, pool => {
            sqlx::query_as::<_, DependentRow>(pins)
                .bind(normalized_name)
                .fetch_all(pool)
                .await
        })?;
        let mut rows: Vec<DependentRow> = Vec::with_capacity(by_edges.len() + by_pins.len());
        for row in by_edges.into_iter().chain(by_pins) {
            let same = |r: &DependentRow| {
                r.kind == row.kind && r.name == row.name && r.version == row.version
            };
            match rows.iter_mut().find(|r| same(r)) {
                // A pin without a requirement says less than the edge.
                Some(existing) if existing.requirement.is_none() => {
                    existing.requirement = row.requirement;
                }
                Some(_) => {}
                None => rows.push(row),
            }
        }
        Ok(rows)
    }

    // ------------------------------------------------------------ keys, publishers

    /// Live versions signed with the key, newest publications first.
    pub async fn versions_signed_by(
        &self,
        key_id: &KeyId,
        limit: i64,
    ) -> Result<Vec<SignedVersionRow>, sqlx::Error> {
        with_pool!(self, pool => {
            sqlx::query_as::<_, SignedVersionRow>(
                "SELECT p.kind, p.name, v.version
                 FROM versions v JOIN packages p ON p.id = v.package_id
                 WHERE v.signer_key_id = $1 AND v.deleted_at IS NULL
                 ORDER BY v.published_at DESC, v.id DESC LIMIT $2",
            )
            .bind(key_id.as_str())
            .bind(limit)
            .fetch_all(pool)
            .await
        })
    }

    /// The account's signing keys, newest first, revoked ones included.
    pub async fn account_signing_keys(
        &self,
        account_id: i64,
    ) -> Result<Vec<SigningKeyRecord>, sqlx::Error> {
        with_pool!(self, pool => {
            sqlx::query_as::<_, SigningKeyRecord>(
                "SELECT key_id, account_id, public_key_pem, created_at, revoked_at
                 FROM signing_keys WHERE account_id = $1 ORDER BY created_at DESC, key_id",
            )
            .bind(account_id)
            .fetch_all(pool)
            .await
        })
    }

    /// The username of an account id.
    pub async fn account_username(&self, account_id: i64) -> Result<Option<Username>, sqlx::Error> {
        with_pool!(self, pool => {
            sqlx::query_scalar("SELECT username FROM accounts WHERE id = $1")
                .bind(account_id)
                .fetch_optional(pool)
                .await
        })
    }
}
