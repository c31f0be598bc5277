//! Security advisories (docs/advisories.md): each id's document as served,
//! and the packages it names. A publish, an update and a withdrawal each
//! replace the row and append their log entry in one transaction.

use agentlang_core::{Kind, advisories::AdvisoryId, digest::Sha256Digest, tlog::LogEntry};

use super::{BeginWrite, Db, is_unique_violation, now, select_in, tlog::AppendLog, with_pool};

/// The packages' rows, the log entry, and the row's `log_index`: what a
/// publish and an update both write last.
macro_rules! write_rest {
    ($tx:expr, $new:expr) => {{
        for (kind, name) in $new.packages {
            sqlx::query(
                "INSERT INTO advisory_packages (advisory_id, kind, normalized_name)
                 VALUES ($1, $2, $3)",
            )
            .bind($new.id)
            .bind(kind)
            .bind(name)
            .execute(&mut *$tx)
            .await?;
        }
        let index = $tx.append_log($new.log_entry).await?;
        sqlx::query("UPDATE advisories SET log_index = $1 WHERE id = $2")
            .bind(index)
            .bind($new.id)
            .execute(&mut *$tx)
            .await?;
        index
    }};
}

/// One advisory as stored.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct AdvisoryRow {
    pub id: AdvisoryId,
    /// The document's `modified`, RFC 3339 UTC.
    pub modified: String,
    pub withdrawn: Option<String>,
    /// `low`, `moderate`, `high` or `critical` (read by the rule).
    pub severity: String,
    /// The document exactly as served.
    pub document: String,
    pub sha256: Sha256Digest,
    /// The entry of its last change.
    pub log_index: i64,
    pub created_at: i64,
    pub updated_at: i64,
}

const COLUMNS: &str = "a.id, a.modified, a.withdrawn, a.severity, a.document, a.sha256, \
                       a.log_index, a.created_at, a.updated_at";

/// An advisory to write, checked by the rule, with its log entry.
#[derive(Debug)]
pub struct NewAdvisory<'a> {
    pub id: &'a AdvisoryId,
    pub modified: &'a str,
    pub withdrawn: Option<&'a str>,
    pub severity: &'a str,
    pub document: &'a str,
    pub sha256: &'a Sha256Digest,
    /// `(kind, normalized name)` of every package it names.
    pub packages: &'a [(Kind, String)],
    pub account_id: i64,
    pub log_entry: &'a LogEntry,
}

#[derive(Debug, thiserror::Error)]
pub enum AdvisoryWriteError {
    /// A new advisory's id is taken.
    #[error("the advisory id is taken")]
    Exists,
    /// The stored advisory changed since the rule read it.
    #[error("the advisory changed while it was being written")]
    Raced,
    #[error(transparent)]
    Db(#[from] sqlx::Error),
}

impl Db {
    pub async fn find_advisory(&self, id: &AdvisoryId) -> Result<Option<AdvisoryRow>, sqlx::Error> {
        with_pool!(self, pool => {
            sqlx::query_as::<_, AdvisoryRow>(sqlx::AssertSqlSafe(format!(
                "SELECT {COLUMNS} FROM advisories a WHERE a.id = $1"
            )))
            .bind(id)
            .fetch_optional(pool)
            .await
        })
    }

    /// Advisories in id order after `after`, at most `limit`; of one
    /// package (`(kind, normalized name)`) when asked, withdrawn ones
    /// included (they say so).
    pub async fn list_advisories(
        &self,
        package: Option<(Kind, &str)>,
        after: Option<&AdvisoryId>,
        limit: i64,
    ) -> Result<Vec<AdvisoryRow>, sqlx::Error> {
        let after = after.map(AdvisoryId::as_str).unwrap_or("");
        with_pool!(self, pool => {
            match package {
                Some((kind, name)) => {
                    sqlx::query_as::<_, AdvisoryRow>(sqlx::AssertSqlSafe(format!(
                        "SELECT {COLUMNS} FROM advisories a
                         JOIN advisory_packages p ON p.advisory_id = a.id
                         WHERE p.kind = $1 AND p.normalized_name = $2 AND a.id > $3
                         ORDER BY a.id LIMIT $4"
                    )))
                    .bind(kind)
                    .bind(name)
                    .bind(after)
                    .bind(limit)
                    .fetch_all(pool)
                    .await
                }
                None => {
                    sqlx::query_as::<_, AdvisoryRow>(sqlx::AssertSqlSafe(format!(
                        "SELECT {COLUMNS} FROM advisories a WHERE a.id > $1
                         ORDER BY a.id LIMIT $2"
                    )))
                    .bind(after)
                    .bind(limit)
                    .fetch_all(pool)
                    .await
                }
            }
        })
    }

    /// The advisories not withdrawn that name any of `names` (normalized)
    /// of `kind`, each once: one query per 500 names.
    pub async fn live_advisories_of(
        &self,
        kind: Kind,
        names: &[String],
    ) -> Result<Vec<AdvisoryRow>, sqlx::Error> {
        // `kind` is one of a closed set of ASCII words: safe as SQL text.
        let sql = format!(
            "SELECT {COLUMNS} FROM advisories a
             JOIN advisory_packages p ON p.advisory_id = a.id
             WHERE a.withdrawn IS NULL AND p.kind = '{}' AND p.normalized_name IN (",
            kind.as_str()
        );
        let sql = sql.as_str();
        let rows: Result<Vec<AdvisoryRow>, sqlx::Error> =
            async { select_in!(self, AdvisoryRow, sql, sql, names) }.await;
        let mut rows = rows?;
        rows.sort_by(|a, b| a.id.cmp(&b.id));
        rows.dedup_by(|a, b| a.id == b.id);
        Ok(rows)
    }

    /// The newest id of the registry's series that starts with `prefix`
    /// (`x_AGENTLANG-2026-`): the longest, then the greatest, as numbers
    /// are zero-padded to at least four digits.
    pub async fn last_advisory_id_with_prefix(
        &self,
        prefix: &str,
    ) -> Result<Option<AdvisoryId>, sqlx::Error> {
        let pattern = format!("{}%", prefix.replace('_', "\\_"));
        with_pool!(self, pool => {
            sqlx::query_scalar(
                "SELECT id FROM advisories WHERE id LIKE $1 ESCAPE '\\'
                 ORDER BY LENGTH(id) DESC, id DESC LIMIT 1",
            )
            .bind(pattern)
            .fetch_optional(pool)
            .await
        })
    }

    /// Writes a new advisory and its log entry; its index.
    pub async fn insert_advisory(&self, new: &NewAdvisory<'_>) -> Result<i64, AdvisoryWriteError> {
        with_pool!(self, pool => async {
            let mut tx = pool.begin_write().await?;
            // The log's lock first, as every logged write takes it.
            tx.lock_log().await?;
            let at = now();
            let inserted = sqlx::query(
                "INSERT INTO advisories (id, modified, withdrawn, severity, document, sha256,
                                         log_index, published_by, created_at, updated_at)
                 VALUES ($1, $2, $3, $4, $5, $6, -1, $7, $8, $8)",
            )
            .bind(new.id)
            .bind(new.modified)
            .bind(new.withdrawn)
            .bind(new.severity)
            .bind(new.document)
            .bind(new.sha256)
            .bind(new.account_id)
            .bind(at)
            .execute(&mut *tx)
            .await;
            match inserted {
                Err(e) if is_unique_violation(&e) => return Err(AdvisoryWriteError::Exists),
                other => other?,
            };
            let index = write_rest!(tx, new);
            tx.commit().await?;
            Ok(index)
        }
        .await)
    }

    /// Replaces the advisory whose stored document hashes to `expected`
    /// (what the rule read) and appends its log entry; its index.
    pub async fn replace_advisory(
        &self,
        new: &NewAdvisory<'_>,
        expected: &Sha256Digest,
    ) -> Result<i64, AdvisoryWriteError> {
        with_pool!(self, pool => async {
            let mut tx = pool.begin_write().await?;
            tx.lock_log().await?;
            let updated = sqlx::query(
                "UPDATE advisories SET modified = $1, withdrawn = $2, severity = $3,
                        document = $4, sha256 = $5, updated_at = $6
                 WHERE id = $7 AND sha256 = $8",
            )
            .bind(new.modified)
            .bind(new.withdrawn)
            .bind(new.severity)
            .bind(new.document)
            .bind(new.sha256)
            .bind(now())
            .bind(new.id)
            .bind(expected)
            .execute(&mut *tx)
            .await?;
            if updated.rows_affected() != 1 {
                return Err(AdvisoryWriteError::Raced);
            }
            sqlx::query("DELETE FROM advisory_packages WHERE advisory_id = $1")
                .bind(new.id)
                .execute(&mut *tx)
                .await?;
            let index = write_rest!(tx, new);
            tx.commit().await?;
            Ok(index)
        }
        .await)
    }
}
