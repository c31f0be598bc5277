//! Staged versions (migration 0041, docs/staged-releases.md): uploaded and
//! verified like a publish, held in their own table so no read path of
//! `versions` can see them, until an owner approves one (the publish
//! transaction inserts the version and marks the row approved, see
//! `packages::publish_round`) or rejects it. Rows are never deleted: a
//! staged number is taken for good. Who may see or decide what is the
//! app's.

use agentlang_core::{Kind, PackageName, Version, digest::Sha256Digest, tlog::LogEntry};

use super::{BeginWrite, Db, is_unique_violation, now, tlog::AppendLog, with_pool};

/// The states of a staged version, as stored.
pub const PENDING: &str = "pending";
pub const APPROVED: &str = "approved";
pub const REJECTED: &str = "rejected";

/// Rows of one page of [`Db::list_staged`], at most.
pub const MAX_PAGE: i64 = 100;

/// A staged version as stored, with its accounts' names.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct StagedRecord {
    pub id: String,
    pub kind: Kind,
    pub name: PackageName,
    pub version: Version,
    pub sha256: Sha256Digest,
    pub size: i64,
    pub signer_key_id: Option<String>,
    pub staged_by: i64,
    pub staged_by_name: String,
    pub staged_at: i64,
    pub stage_log_index: i64,
    pub state: String,
    pub decided_by_name: Option<String>,
    pub decided_at: Option<i64>,
    pub reason: Option<String>,
    pub publisher_identity: Option<String>,
    pub provenance: Option<String>,
}

/// The columns of a [`StagedRecord`], as a macro so queries are literals.
macro_rules! select {
    () => {
        "SELECT s.id, s.kind, s.name, s.version, s.sha256, s.size, s.signer_key_id,
                             s.staged_by, a.username AS staged_by_name, s.staged_at,
                             s.stage_log_index, s.state, d.username AS decided_by_name,
                             s.decided_at, s.reason, s.publisher_identity, s.provenance
                      FROM staged_versions s
                      JOIN accounts a ON a.id = s.staged_by
                      LEFT JOIN accounts d ON d.id = s.decided_by "
    };
}

/// A version to stage, with its `stage` log entry. The container is
/// already in blob storage.
#[derive(Debug)]
pub struct NewStaged<'a> {
    /// A UUIDv7: ids sort by staging time.
    pub id: &'a str,
    pub kind: Kind,
    pub name: &'a PackageName,
    pub version: &'a Version,
    pub package_id: Option<i64>,
    pub sha256: Sha256Digest,
    pub size: u64,
    pub signer_key_id: Option<&'a str>,
    pub staged_by: i64,
    pub publisher_identity: Option<String>,
    pub provenance: Option<String>,
    pub log_entry: &'a LogEntry,
}

#[derive(Debug, thiserror::Error)]
pub enum StageError {
    #[error("{0} already exists (or existed): versions are never reused")]
    VersionExists(String),
    #[error("{0} is staged already: a staged number is taken")]
    VersionStaged(String),
    #[error(transparent)]
    Db(#[from] sqlx::Error),
}

/// SemVer precedence columns, as `packages` stores them.
fn precedence(version: &Version) -> (i64, i64, i64, String) {
    let v = version.semver();
    let clamp = |n: u64| i64::try_from(n).unwrap_or(i64::MAX);
    (
        clamp(v.major),
        clamp(v.minor),
        clamp(v.patch),
        v.pre.as_str().to_owned(),
    )
}

impl Db {
    /// Stores a staged version and its log entry in one transaction, after
    /// the log's lock: a version or a staged row of the same number
    /// (published, deleted, staged in any state) refuses it.
    pub async fn stage_version(&self, new: &NewStaged<'_>) -> Result<StagedRecord, StageError> {
        let (major, minor, patch, pre) = precedence(new.version);
        let id = new.id;
        let what = format!("{} {} {}", new.kind, new.name, new.version);
        let result = with_pool!(self, pool => async {
            let mut tx = pool.begin_write().await?;
            tx.lock_log().await?;
            let published: i64 = sqlx::query_scalar(
                "SELECT COUNT(*) FROM versions v JOIN packages p ON p.id = v.package_id
                 WHERE p.kind = $1 AND p.normalized_name = $2 AND v.major = $3
                   AND v.minor = $4 AND v.patch = $5 AND v.prerelease = $6",
            )
            .bind(new.kind.as_str())
            .bind(new.name.normalized())
            .bind(major)
            .bind(minor)
            .bind(patch)
            .bind(&pre)
            .fetch_one(&mut *tx)
            .await?;
            if published > 0 {
                return Ok(Err(StageError::VersionExists(what.clone())));
            }
            let index = tx.append_log(new.log_entry).await?;
            sqlx::query(
                "INSERT INTO staged_versions
                     (id, kind, name, normalized_name, package_id, version, major, minor, patch,
                      prerelease, sha256, size, signer_key_id, staged_by, staged_at,
                      stage_log_index, state, publisher_identity, provenance)
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16,
                         'pending', $17, $18)",
            )
            .bind(id)
            .bind(new.kind.as_str())
            .bind(new.name.as_str())
            .bind(new.name.normalized())
            .bind(new.package_id)
            .bind(new.version.to_string())
            .bind(major)
            .bind(minor)
            .bind(patch)
            .bind(&pre)
            .bind(new.sha256)
            .bind(i64::try_from(new.size).unwrap_or(i64::MAX))
            .bind(new.signer_key_id)
            .bind(new.staged_by)
            .bind(now())
            .bind(index)
            .bind(new.publisher_identity.as_deref())
            .bind(new.provenance.as_deref())
            .execute(&mut *tx)
            .await?;
            tx.commit().await?;
            Ok::<_, sqlx::Error>(Ok(()))
        }
        .await);
        match result {
            Ok(Ok(())) => {}
            Ok(Err(refused)) => return Err(refused),
            Err(e) if is_unique_violation(&e) => return Err(StageError::VersionStaged(what)),
            Err(e) => return Err(StageError::Db(e)),
        }
        self.find_staged(id)
            .await?
            .ok_or(StageError::Db(sqlx::Error::RowNotFound))
    }

    /// The staged version with this id, in any state.
    pub async fn find_staged(&self, id: &str) -> Result<Option<StagedRecord>, sqlx::Error> {
        with_pool!(self, pool => {
            sqlx::query_as::<_, StagedRecord>(concat!(select!(), "WHERE s.id = $1"))
                .bind(id)
                .fetch_optional(pool)
                .await
        })
    }

    /// The staged row (any state) holding this number of the package named
    /// `name` (any spelling) of `kind`.
    pub async fn staged_number(
        &self,
        kind: Kind,
        name: &PackageName,
        version: &Version,
    ) -> Result<Option<StagedRecord>, sqlx::Error> {
        let (major, minor, patch, pre) = precedence(version);
        with_pool!(self, pool => {
            sqlx::query_as::<_, StagedRecord>(concat!(
                select!(),
                "WHERE s.kind = $1 AND s.normalized_name = $2 AND s.major = $3
                   AND s.minor = $4 AND s.patch = $5 AND s.prerelease = $6"
            ))
                .bind(kind.as_str())
                .bind(name.normalized())
                .bind(major)
                .bind(minor)
                .bind(patch)
                .bind(&pre)
                .fetch_optional(pool)
                .await
        })
    }

    /// The accounts with a pending staged version of the name `name` (any
    /// spelling) of `kind`: who holds a name no package has yet.
    pub async fn pending_stagers(
        &self,
        kind: Kind,
        name: &PackageName,
    ) -> Result<Vec<i64>, sqlx::Error> {
        with_pool!(self, pool => {
            sqlx::query_scalar::<_, i64>(
                "SELECT DISTINCT staged_by FROM staged_versions
                 WHERE kind = $1 AND normalized_name = $2 AND state = 'pending'",
            )
            .bind(kind.as_str())
            .bind(name.normalized())
            .fetch_all(pool)
            .await
        })
    }

    /// A page of the staged versions `account_id` may see, oldest first
    /// after `after` (an id): those of the packages it owns, and those it
    /// staged of names no package has. `state` `None` is every state.
    pub async fn list_staged(
        &self,
        account_id: i64,
        state: Option<&str>,
        after: Option<&str>,
        limit: i64,
    ) -> Result<Vec<StagedRecord>, sqlx::Error> {
        with_pool!(self, pool => {
            sqlx::query_as::<_, StagedRecord>(concat!(
                select!(),
                "LEFT JOIN packages p ON p.kind = s.kind AND p.normalized_name = s.normalized_name
             WHERE ($2 IS NULL OR s.state = $2) AND s.id > $3
               AND ((p.id IS NULL AND s.staged_by = $1)
                    OR EXISTS (SELECT 1 FROM package_owners o
                               WHERE o.package_id = p.id AND o.account_id = $1))
             ORDER BY s.id LIMIT $4"
            ))
                .bind(account_id)
                .bind(state)
                .bind(after.unwrap_or(""))
                .bind(limit.clamp(1, MAX_PAGE))
                .fetch_all(pool)
                .await
        })
    }

    /// Rejects a pending staged version and logs it, in one transaction.
    /// `Ok(None)` when it is no longer pending (decided meanwhile).
    pub async fn reject_staged(
        &self,
        id: &str,
        account_id: i64,
        reason: Option<&str>,
        log_entry: &LogEntry,
    ) -> Result<Option<i64>, sqlx::Error> {
        with_pool!(self, pool => {
            let mut tx = pool.begin_write().await?;
            tx.lock_log().await?;
            let changed = sqlx::query(
                "UPDATE staged_versions SET state = 'rejected', decided_by = $2,
                        decided_at = $3, reason = $4
                 WHERE id = $1 AND state = 'pending'",
            )
            .bind(id)
            .bind(account_id)
            .bind(now())
            .bind(reason)
            .execute(&mut *tx)
            .await?
            .rows_affected();
            if changed != 1 {
                // Dropped: rolled back.
                return Ok(None);
            }
            let index = tx.append_log(log_entry).await?;
            tx.commit().await?;
            Ok(Some(index))
        })
    }
}
