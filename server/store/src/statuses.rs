//! Statuses of packages and versions (PEP 792: `active`, `deprecated`,
//! `archived`, `quarantined`), migration 0035: the current one of each
//! package or version whose status was ever set, with the log entry that
//! recorded it. The rules (who may set what, what each status refuses) are
//! the app's; this module stores and reads.

use agentlang_core::{Version, tlog::LogEntry};

use super::{BeginWrite, Db, now, select_in, tlog::AppendLog, with_pool};

/// `version_id` of a package's own status row.
pub const PACKAGE_ROW: i64 = 0;

/// One stored status: a package's (`version_id` [`PACKAGE_ROW`],
/// `version` `None`) or one version's.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct StatusRow {
    pub package_id: i64,
    pub normalized_name: String,
    pub version_id: i64,
    pub version: Option<Version>,
    pub status: String,
    pub reason: Option<String>,
    pub successor: Option<String>,
    /// The entry that recorded this status.
    pub log_index: i64,
    /// Unix seconds.
    pub changed_at: i64,
}

/// A status to store for a package (`version_id` `None`) or a live
/// version, with the log entry that records it.
#[derive(Debug)]
pub struct StatusChange<'a> {
    pub package_id: i64,
    pub version_id: Option<i64>,
    pub status: &'a str,
    pub reason: Option<&'a str>,
    pub successor: Option<&'a str>,
    pub log_entry: &'a LogEntry,
}

const SELECT: &str = "SELECT s.package_id, p.normalized_name, s.version_id, v.version, s.status,
                             s.reason, s.successor, s.log_index, s.changed_at
                      FROM statuses s
                      JOIN packages p ON p.id = s.package_id
                      LEFT JOIN versions v ON v.id = s.version_id";

impl Db {
    /// Stores a status and logs it, in one transaction. Asking for what is
    /// stored already (status, reason and successor alike) writes nothing
    /// and answers the entry that recorded it; asking a package or version
    /// whose status was never set to be `active` writes nothing and
    /// answers `None`. Otherwise answers the new entry's index.
    pub async fn set_status(&self, change: &StatusChange<'_>) -> Result<Option<i64>, sqlx::Error> {
        let version_id = change.version_id.unwrap_or(PACKAGE_ROW);
        with_pool!(self, pool => {
            let mut tx = pool.begin_write().await?;
            // The log's lock before the row's (ARCHITECTURE.md: one order).
            tx.lock_log().await?;
            let current: Option<(String, Option<String>, Option<String>, i64)> = sqlx::query_as(
                "SELECT status, reason, successor, log_index FROM statuses
                 WHERE package_id = $1 AND version_id = $2",
            )
            .bind(change.package_id)
            .bind(version_id)
            .fetch_optional(&mut *tx)
            .await?;
            match &current {
                Some((status, reason, successor, index))
                    if status == change.status
                        && reason.as_deref() == change.reason
                        && successor.as_deref() == change.successor =>
                {
                    return Ok(Some(*index));
                }
                None if change.status == "active" => return Ok(None),
                _ => {}
            }
            let index = tx.append_log(change.log_entry).await?;
            sqlx::query(
                "INSERT INTO statuses
                     (package_id, version_id, status, reason, successor, log_index, changed_at)
                 VALUES ($1, $2, $3, $4, $5, $6, $7)
                 ON CONFLICT (package_id, version_id) DO UPDATE SET
                     status = excluded.status, reason = excluded.reason,
                     successor = excluded.successor, log_index = excluded.log_index,
                     changed_at = excluded.changed_at",
            )
            .bind(change.package_id)
            .bind(version_id)
            .bind(change.status)
            .bind(change.reason)
            .bind(change.successor)
            .bind(index)
            .bind(now())
            .execute(&mut *tx)
            .await?;
            tx.commit().await?;
            Ok(Some(index))
        })
    }

    /// Every stored status of these packages and their versions.
    pub async fn statuses_of_packages(
        &self,
        package_ids: &[i64],
    ) -> Result<Vec<StatusRow>, sqlx::Error> {
        let sql = format!("{SELECT} WHERE s.package_id IN (");
        select_in!(self, StatusRow, &sql, &sql, package_ids)
    }

    /// The quarantined tools (packages or versions) among these normalized
    /// tool names.
    pub async fn quarantined_tools(
        &self,
        normalized_names: &[String],
    ) -> Result<Vec<StatusRow>, sqlx::Error> {
        let sql = format!(
            "{SELECT} WHERE s.status = 'quarantined' AND p.kind = 'tool'
                        AND p.normalized_name IN ("
        );
        select_in!(self, StatusRow, &sql, &sql, normalized_names)
    }
}
