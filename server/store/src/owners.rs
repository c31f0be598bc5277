//! Package owners and invitations. An account becomes an owner only by
//! accepting an invitation (or by publishing a new package: its founder).
//! Owners are ranked by when they joined (`ordinal`, 1 = founder).

use agentlang_core::tlog::LogEntry;
use agentlang_core::{Kind, PackageName, Username};

use super::{BeginWrite, Db, now, tlog::AppendLog, with_pool};

#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct OwnerRecord {
    pub account_id: i64,
    pub username: Username,
    pub added_at: i64,
    /// The order of joining: 1 is the founder.
    pub ordinal: i64,
}

/// An owner with the package they own.
#[derive(sqlx::FromRow)]
struct PackageOwnerRow {
    package_id: i64,
    #[sqlx(flatten)]
    owner: OwnerRecord,
}

/// A pending invitation, with what the invitee needs to decide.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct InvitationRecord {
    pub package_id: i64,
    pub kind: Kind,
    pub name: PackageName,
    pub account_id: i64,
    pub invitee: Username,
    pub invited_by: Option<Username>,
    pub created_at: i64,
    pub expires_at: i64,
}

#[derive(Debug, thiserror::Error)]
pub enum OwnerError {
    #[error("{0} is not an owner")]
    NotAnOwner(Username),
    #[error("the last owner of a package cannot be removed")]
    LastOwner,
    /// The remover joined after (or with) `0`.
    #[error("{0} has been an owner longer than you")]
    Senior(Username),
    #[error(transparent)]
    Db(#[from] sqlx::Error),
}

/// Who removes: an owner (by account id), or an admin (anyone).
#[derive(Debug, Clone, Copy)]
pub enum Remover {
    Owner(i64),
    Admin,
}

const INVITATION_SELECT: &str = "SELECT i.package_id, p.kind, p.name, i.account_id,
        a.username AS invitee, b.username AS invited_by, i.created_at, i.expires_at
 FROM owner_invitations i
 JOIN packages p ON p.id = i.package_id
 JOIN accounts a ON a.id = i.account_id
 LEFT JOIN accounts b ON b.id = i.invited_by";

impl Db {
    pub async fn is_owner(&self, package_id: i64, account_id: i64) -> Result<bool, sqlx::Error> {
        with_pool!(self, pool => {
            sqlx::query_scalar::<_, i64>(
                "SELECT COUNT(*) FROM package_owners WHERE package_id = $1 AND account_id = $2",
            )
            .bind(package_id)
            .bind(account_id)
            .fetch_one(pool)
            .await
            .map(|n| n > 0)
        })
    }

    /// Owners in the order they joined.
    pub async fn list_owners(&self, package_id: i64) -> Result<Vec<OwnerRecord>, sqlx::Error> {
        with_pool!(self, pool => {
            sqlx::query_as::<_, OwnerRecord>(
                "SELECT o.account_id, a.username, o.added_at, o.ordinal
                 FROM package_owners o JOIN accounts a ON a.id = o.account_id
                 WHERE o.package_id = $1 ORDER BY o.ordinal, o.added_at, a.username",
            )
            .bind(package_id)
            .fetch_all(pool)
            .await
        })
    }

    /// The owners of the given packages, `(package id, owner)`, each
    /// package's in the order they joined: one query per 500 packages.
    pub async fn owners_of(
        &self,
        package_ids: &[i64],
    ) -> Result<Vec<(i64, OwnerRecord)>, sqlx::Error> {
        const SELECT: &str = "SELECT o.package_id, o.account_id, a.username, o.added_at, o.ordinal
             FROM package_owners o JOIN accounts a ON a.id = o.account_id
             WHERE o.package_id IN (";
        let found: Result<Vec<PackageOwnerRow>, sqlx::Error> =
            super::select_in!(self, PackageOwnerRow, SELECT, SELECT, package_ids);
        let mut rows = found?;
        rows.sort_by_key(|r| (r.package_id, r.owner.ordinal));
        Ok(rows.into_iter().map(|r| (r.package_id, r.owner)).collect())
    }

    /// Invites an account (again: the invitation is renewed). Returns false
    /// when it already is an owner.
    pub async fn invite_owner(
        &self,
        package_id: i64,
        account_id: i64,
        invited_by: i64,
        expires_at: i64,
    ) -> Result<bool, sqlx::Error> {
        if self.is_owner(package_id, account_id).await? {
            return Ok(false);
        }
        with_pool!(self, pool => {
            sqlx::query(
                "INSERT INTO owner_invitations (package_id, account_id, invited_by, created_at, expires_at)
                 VALUES ($1, $2, $3, $4, $5)
                 ON CONFLICT (package_id, account_id)
                 DO UPDATE SET invited_by = excluded.invited_by, created_at = excluded.created_at,
                               expires_at = excluded.expires_at",
            )
            .bind(package_id)
            .bind(account_id)
            .bind(invited_by)
            .bind(now())
            .bind(expires_at)
            .execute(pool)
            .await
            .map(|_| true)
        })
    }

    /// The account's unexpired invitations, newest first, at most `limit`.
    pub async fn invitations_for(
        &self,
        account_id: i64,
        limit: i64,
    ) -> Result<Vec<InvitationRecord>, sqlx::Error> {
        with_pool!(self, pool => {
            sqlx::query_as::<_, InvitationRecord>(sqlx::AssertSqlSafe(format!(
                "{INVITATION_SELECT} WHERE i.account_id = $1 AND i.expires_at > $2
                 ORDER BY i.created_at DESC, p.kind, p.name LIMIT $3"
            )))
            .bind(account_id)
            .bind(now())
            .bind(limit)
            .fetch_all(pool)
            .await
        })
    }

    /// The package's unexpired invitations, oldest first, at most `limit`.
    pub async fn invitations_of(
        &self,
        package_id: i64,
        limit: i64,
    ) -> Result<Vec<InvitationRecord>, sqlx::Error> {
        with_pool!(self, pool => {
            sqlx::query_as::<_, InvitationRecord>(sqlx::AssertSqlSafe(format!(
                "{INVITATION_SELECT} WHERE i.package_id = $1 AND i.expires_at > $2
                 ORDER BY i.created_at, a.username LIMIT $3"
            )))
            .bind(package_id)
            .bind(now())
            .bind(limit)
            .fetch_all(pool)
            .await
        })
    }

    /// The invited usernames of the given packages, `(package id,
    /// username)`: one query per 500 packages.
    pub async fn invitees_of(
        &self,
        package_ids: &[i64],
    ) -> Result<Vec<(i64, Username)>, sqlx::Error> {
        // `now` is spliced as a number: it is ours, not input.
        let select = format!(
            "SELECT i.package_id, a.username FROM owner_invitations i
             JOIN accounts a ON a.id = i.account_id
             WHERE i.expires_at > {} AND i.package_id IN (",
            now()
        );
        let found: Result<Vec<(i64, Username)>, sqlx::Error> =
            super::select_in!(self, (i64, Username), &select, &select, package_ids);
        let mut rows = found?;
        rows.sort();
        Ok(rows)
    }

    /// Turns the account's unexpired invitation into ownership, ranked after
    /// every owner so far. Returns false when there is no such invitation,
    /// or when whoever sent it is no longer an owner (an invitation speaks
    /// for its sender only while they own the package).
    pub async fn accept_invitation(
        &self,
        package_id: i64,
        account_id: i64,
        log_entry: &LogEntry,
    ) -> Result<bool, sqlx::Error> {
        with_pool!(self, pool => {
            let mut tx = pool.begin_write().await?;
            tx.lock_log().await?;
            // Locks the package row (PostgreSQL), so two acceptances cannot
            // take the same ordinal.
            sqlx::query("UPDATE packages SET updated_at = updated_at WHERE id = $1")
                .bind(package_id)
                .execute(&mut *tx)
                .await?;
            let invited_by: Option<Option<i64>> = sqlx::query_scalar(
                "DELETE FROM owner_invitations
                 WHERE package_id = $1 AND account_id = $2 AND expires_at > $3
                   AND invited_by IN (SELECT o.account_id FROM package_owners o
                                      WHERE o.package_id = $1)
                 RETURNING invited_by",
            )
            .bind(package_id)
            .bind(account_id)
            .bind(now())
            .fetch_optional(&mut *tx)
            .await?;
            let Some(invited_by) = invited_by else {
                return Ok(false);
            };
            sqlx::query(
                "INSERT INTO package_owners (package_id, account_id, added_at, added_by, ordinal)
                 SELECT $1, $2, $3, $4, COALESCE(MAX(ordinal), 0) + 1
                 FROM package_owners WHERE package_id = $1
                 ON CONFLICT (package_id, account_id) DO NOTHING",
            )
            .bind(package_id)
            .bind(account_id)
            .bind(now())
            .bind(invited_by)
            .execute(&mut *tx)
            .await?;
            tx.append_log(log_entry).await?;
            tx.commit().await?;
            Ok(true)
        })
    }

    /// Withdraws or declines an invitation. Returns false when there was none.
    pub async fn delete_invitation(
        &self,
        package_id: i64,
        account_id: i64,
    ) -> Result<bool, sqlx::Error> {
        with_pool!(self, pool => {
            sqlx::query("DELETE FROM owner_invitations WHERE package_id = $1 AND account_id = $2")
                .bind(package_id)
                .bind(account_id)
                .execute(pool)
                .await
                .map(|r| r.rows_affected() > 0)
        })
    }

    /// Removes owners, all or nothing: never the last one, and an owner
    /// removes only owners who joined after them (leaving is always
    /// allowed). The package row is locked first, so two concurrent
    /// removals cannot both pass the checks.
    pub async fn remove_owners(
        &self,
        package_id: i64,
        remover: Remover,
        accounts: &[(i64, Username)],
        log_entries: &[LogEntry],
    ) -> Result<(), OwnerError> {
        with_pool!(self, pool => {
            let mut tx = pool.begin_write().await?;
            tx.lock_log().await?;
            // A no-op write: in PostgreSQL it takes the row lock; in SQLite
            // BEGIN IMMEDIATE already holds the database's write lock.
            sqlx::query("UPDATE packages SET updated_at = updated_at WHERE id = $1")
                .bind(package_id)
                .execute(&mut *tx)
                .await?;
            let mut owners: Vec<(i64, i64)> = sqlx::query_as(
                "SELECT account_id, ordinal FROM package_owners WHERE package_id = $1",
            )
            .bind(package_id)
            .fetch_all(&mut *tx)
            .await?;
            let remover_rank = match remover {
                Remover::Owner(id) => owners.iter().find(|(a, _)| *a == id).map(|(_, o)| *o),
                Remover::Admin => None,
            };
            for (account_id, username) in accounts {
                let Some(at) = owners.iter().position(|(id, _)| id == account_id) else {
                    return Err(OwnerError::NotAnOwner(username.clone()));
                };
                let leaving = matches!(remover, Remover::Owner(id) if id == *account_id);
                if let (Remover::Owner(_), false) = (remover, leaving)
                    && remover_rank.is_none_or(|rank| rank >= owners[at].1)
                {
                    return Err(OwnerError::Senior(username.clone()));
                }
                owners.swap_remove(at);
            }
            if owners.is_empty() {
                return Err(OwnerError::LastOwner);
            }
            for (account_id, _) in accounts {
                sqlx::query("DELETE FROM package_owners WHERE package_id = $1 AND account_id = $2")
                    .bind(package_id)
                    .bind(account_id)
                    .execute(&mut *tx)
                    .await?;
                // A removed owner's invitations go with their ownership:
                // otherwise one sent to another account of theirs would be
                // a way back in.
                sqlx::query("DELETE FROM owner_invitations WHERE package_id = $1 AND invited_by = $2")
                    .bind(package_id)
                    .bind(account_id)
                    .execute(&mut *tx)
                    .await?;
            }
            for entry in log_entries {
                tx.append_log(entry).await?;
            }
            tx.commit().await?;
            Ok(())
        })
    }
}
