//! Prompt recipients and prompt-key grants (docs/prompt-grants.md): the age
//! recipients an account proved it holds, and sealed agents' prompt keys
//! wrapped to them by an owner. Grants are revoked, never deleted; each
//! grant and revocation is logged in its transaction.

use agentlang_core::{
    PackageName, Username, crypt::PromptKeyId, grants::Recipient, tlog::LogEntry,
};

use super::{BeginWrite, Db, is_unique_violation, now, tlog::AppendLog, with_pool};

/// One of an account's registered recipients.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct RecipientRecord {
    pub recipient: Recipient,
    pub created_at: i64,
}

/// What registering a recipient did.
#[derive(Debug, Clone)]
pub enum RecipientAdded {
    /// Registered now.
    Added(RecipientRecord),
    /// The account had registered it already.
    Existing(RecipientRecord),
    /// The account holds the most it may; nothing was written.
    TooMany,
}

impl Db {
    /// The account's recipients, oldest first.
    pub async fn list_recipients(
        &self,
        account_id: i64,
    ) -> Result<Vec<RecipientRecord>, sqlx::Error> {
        with_pool!(self, pool => {
            sqlx::query_as::<_, RecipientRecord>(
                "SELECT recipient, created_at FROM prompt_recipients
                 WHERE account_id = $1 ORDER BY created_at, recipient",
            )
            .bind(account_id)
            .fetch_all(pool)
            .await
        })
    }

    /// Registers a recipient to the account unless it holds `max` already.
    pub async fn insert_recipient(
        &self,
        account_id: i64,
        recipient: &Recipient,
        max: usize,
    ) -> Result<RecipientAdded, sqlx::Error> {
        let result = with_pool!(self, pool => async {
            let mut tx = pool.begin_write().await?;
            // Locks the account's row (a write both dialects take), so two
            // registrations at once cannot both pass the count.
            sqlx::query("UPDATE accounts SET created_at = created_at WHERE id = $1")
                .bind(account_id)
                .execute(&mut *tx)
                .await?;
            let existing = sqlx::query_as::<_, RecipientRecord>(
                "SELECT recipient, created_at FROM prompt_recipients
                 WHERE account_id = $1 AND recipient = $2",
            )
            .bind(account_id)
            .bind(recipient)
            .fetch_optional(&mut *tx)
            .await?;
            if let Some(existing) = existing {
                tx.commit().await?;
                return Ok::<_, sqlx::Error>(RecipientAdded::Existing(existing));
            }
            let held: i64 =
                sqlx::query_scalar("SELECT COUNT(*) FROM prompt_recipients WHERE account_id = $1")
                    .bind(account_id)
                    .fetch_one(&mut *tx)
                    .await?;
            if usize::try_from(held).unwrap_or(usize::MAX) >= max {
                tx.commit().await?;
                return Ok(RecipientAdded::TooMany);
            }
            let record = sqlx::query_as::<_, RecipientRecord>(
                "INSERT INTO prompt_recipients (account_id, recipient, created_at)
                 VALUES ($1, $2, $3) RETURNING recipient, created_at",
            )
            .bind(account_id)
            .bind(recipient)
            .bind(now())
            .fetch_one(&mut *tx)
            .await?;
            tx.commit().await?;
            Ok(RecipientAdded::Added(record))
        }
        .await);
        super::note_local_write();
        result
    }

    /// Removes one of the account's recipients; whether it had it.
    pub async fn delete_recipient(
        &self,
        account_id: i64,
        recipient: &Recipient,
    ) -> Result<bool, sqlx::Error> {
        let deleted = with_pool!(self, pool => {
            sqlx::query("DELETE FROM prompt_recipients WHERE account_id = $1 AND recipient = $2")
                .bind(account_id)
                .bind(recipient)
                .execute(pool)
                .await
                .map(|done| done.rows_affected())
        })?;
        super::note_local_write();
        Ok(deleted > 0)
    }
}

/// One grant, with the names its ids stand for.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct GrantRecord {
    pub id: i64,
    pub package_id: i64,
    /// The agent's name as first published.
    pub agent: PackageName,
    pub grantee_id: i64,
    pub grantee: Username,
    pub key_id: PromptKeyId,
    /// The SemVer requirement as the owner wrote it (checked when granted).
    pub versions: Option<String>,
    /// An armored age file (checked when granted).
    pub wrapped: String,
    /// 32 bytes, hex (written by the registry).
    pub salt: String,
    pub granted_by: Option<Username>,
    pub created_at: i64,
    pub revoked_at: Option<i64>,
}

const GRANT_COLUMNS: &str =
    "g.id, g.package_id, p.name AS agent, g.grantee_id, a.username AS grantee,
        g.key_id, g.versions, g.wrapped, g.salt, b.username AS granted_by, g.created_at,
        g.revoked_at
     FROM prompt_grants g
     JOIN packages p ON p.id = g.package_id
     JOIN accounts a ON a.id = g.grantee_id
     LEFT JOIN accounts b ON b.id = g.granted_by";

/// A grant to write: checked by the rule, with its log entry.
#[derive(Debug)]
pub struct NewGrant<'a> {
    pub package_id: i64,
    pub grantee_id: i64,
    pub key_id: &'a PromptKeyId,
    pub versions: Option<&'a str>,
    pub wrapped: &'a str,
    pub salt_hex: &'a str,
    pub granted_by: i64,
    pub log_entry: &'a LogEntry,
}

/// The live grant a new one replaces, with the entry of its revocation.
#[derive(Debug)]
pub struct Replaced<'a> {
    pub id: i64,
    pub log_entry: &'a LogEntry,
}

#[derive(Debug, thiserror::Error)]
pub enum GrantError {
    /// The agent holds the most live grants it may.
    #[error("the agent holds {0} live grants")]
    TooMany(usize),
    /// Another write changed the grant since the rule read it.
    #[error("the grant changed while it was being written")]
    Raced,
    #[error(transparent)]
    Db(#[from] sqlx::Error),
}

/// What a grant's write did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GrantWritten {
    pub id: i64,
    /// Whether it replaced a live grant of the key to the account.
    pub replaced: bool,
    /// The index of its `grant_add` entry.
    pub log_index: i64,
}

impl Db {
    /// Whether a live version of the package is sealed.
    pub async fn has_sealed_version(&self, package_id: i64) -> Result<bool, sqlx::Error> {
        with_pool!(self, pool => {
            sqlx::query_scalar(
                "SELECT EXISTS (SELECT 1 FROM versions
                                WHERE package_id = $1 AND deleted_at IS NULL
                                  AND prompt_mode = 'sealed')",
            )
            .bind(package_id)
            .fetch_one(pool)
            .await
        })
    }

    /// The live grants of a package, oldest first: at most `limit`.
    pub async fn live_grants_of_package(
        &self,
        package_id: i64,
        limit: i64,
    ) -> Result<Vec<GrantRecord>, sqlx::Error> {
        with_pool!(self, pool => {
            sqlx::query_as::<_, GrantRecord>(sqlx::AssertSqlSafe(format!(
                "SELECT {GRANT_COLUMNS}
                 WHERE g.package_id = $1 AND g.revoked_at IS NULL
                 ORDER BY g.id LIMIT $2"
            )))
            .bind(package_id)
            .bind(limit)
            .fetch_all(pool)
            .await
        })
    }

    /// The live grants an account holds of one package, oldest first.
    pub async fn live_grants_to(
        &self,
        package_id: i64,
        grantee_id: i64,
    ) -> Result<Vec<GrantRecord>, sqlx::Error> {
        with_pool!(self, pool => {
            sqlx::query_as::<_, GrantRecord>(sqlx::AssertSqlSafe(format!(
                "SELECT {GRANT_COLUMNS}
                 WHERE g.package_id = $1 AND g.grantee_id = $2 AND g.revoked_at IS NULL
                 ORDER BY g.id"
            )))
            .bind(package_id)
            .bind(grantee_id)
            .fetch_all(pool)
            .await
        })
    }

    /// The live grants an account holds, newest first: at most `limit`.
    pub async fn live_grants_held(
        &self,
        grantee_id: i64,
        limit: i64,
    ) -> Result<Vec<GrantRecord>, sqlx::Error> {
        with_pool!(self, pool => {
            sqlx::query_as::<_, GrantRecord>(sqlx::AssertSqlSafe(format!(
                "SELECT {GRANT_COLUMNS}
                 WHERE g.grantee_id = $1 AND g.revoked_at IS NULL
                 ORDER BY g.id DESC LIMIT $2"
            )))
            .bind(grantee_id)
            .bind(limit)
            .fetch_all(pool)
            .await
        })
    }

    /// Writes a grant and its log entry in one transaction, revoking (and
    /// logging the revocation of) the live grant it replaces. Refused when
    /// the package would hold more than `max` live grants, or when the
    /// grant it replaces is no longer live (or another took its place).
    pub async fn put_grant(
        &self,
        grant: &NewGrant<'_>,
        replaced: Option<&Replaced<'_>>,
        max: usize,
    ) -> Result<GrantWritten, GrantError> {
        let result = with_pool!(self, pool => async {
            let mut tx = pool.begin_write().await?;
            // Every logged write takes the log's lock first; it also
            // serializes the count below with any other grant.
            tx.lock_log().await?;
            let at = now();
            if let Some(old) = replaced {
                let revoked = sqlx::query(
                    "UPDATE prompt_grants SET revoked_at = $1 WHERE id = $2 AND revoked_at IS NULL",
                )
                .bind(at)
                .bind(old.id)
                .execute(&mut *tx)
                .await?
                .rows_affected();
                if revoked == 0 {
                    return Err(GrantError::Raced);
                }
                tx.append_log(old.log_entry).await?;
            }
            let live: i64 = sqlx::query_scalar(
                "SELECT COUNT(*) FROM prompt_grants WHERE package_id = $1 AND revoked_at IS NULL",
            )
            .bind(grant.package_id)
            .fetch_one(&mut *tx)
            .await?;
            let live = usize::try_from(live).unwrap_or(usize::MAX);
            if live >= max {
                return Err(GrantError::TooMany(live));
            }
            let log_index = tx.append_log(grant.log_entry).await?;
            let id: i64 = sqlx::query_scalar(
                "INSERT INTO prompt_grants (package_id, grantee_id, key_id, versions, wrapped,
                                            salt, granted_by, created_at)
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8) RETURNING id",
            )
            .bind(grant.package_id)
            .bind(grant.grantee_id)
            .bind(grant.key_id)
            .bind(grant.versions)
            .bind(grant.wrapped)
            .bind(grant.salt_hex)
            .bind(grant.granted_by)
            .bind(at)
            .fetch_one(&mut *tx)
            .await
            .map_err(|e| {
                if is_unique_violation(&e) {
                    GrantError::Raced
                } else {
                    GrantError::Db(e)
                }
            })?;
            tx.commit().await?;
            Ok(GrantWritten {
                id,
                replaced: replaced.is_some(),
                log_index,
            })
        }
        .await);
        super::note_local_write();
        result
    }

    /// Revokes grants, each with its log entry, in one transaction; a
    /// grant no longer live is skipped (and its entry not written).
    /// Returns how many were revoked.
    pub async fn revoke_grants(&self, grants: &[(i64, LogEntry)]) -> Result<u64, sqlx::Error> {
        let result = with_pool!(self, pool => async {
            let mut tx = pool.begin_write().await?;
            tx.lock_log().await?;
            let at = now();
            let mut revoked = 0;
            for (id, entry) in grants {
                let done = sqlx::query(
                    "UPDATE prompt_grants SET revoked_at = $1 WHERE id = $2 AND revoked_at IS NULL",
                )
                .bind(at)
                .bind(id)
                .execute(&mut *tx)
                .await?
                .rows_affected();
                if done > 0 {
                    tx.append_log(entry).await?;
                    revoked += done;
                }
            }
            tx.commit().await?;
            Ok::<_, sqlx::Error>(revoked)
        }
        .await);
        super::note_local_write();
        result
    }
}
