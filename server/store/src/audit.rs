//! The per-account audit list: what happened to an account, for its holder.

use super::{Db, now, with_pool};

#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct AuditRecord {
    pub id: i64,
    pub at: i64,
    pub action: String,
    pub detail: String,
}

impl Db {
    pub async fn record_audit(
        &self,
        account_id: i64,
        action: &str,
        detail: &str,
    ) -> Result<(), sqlx::Error> {
        with_pool!(self, pool => {
            sqlx::query(
                "INSERT INTO audit_events (account_id, at, action, detail) VALUES ($1, $2, $3, $4)",
            )
            .bind(account_id)
            .bind(now())
            .bind(action)
            .bind(detail)
            .execute(pool)
            .await
            .map(drop)
        })
    }

    /// The account's latest `limit` events, newest first.
    pub async fn list_audit(
        &self,
        account_id: i64,
        limit: i64,
    ) -> Result<Vec<AuditRecord>, sqlx::Error> {
        with_pool!(self, pool => {
            sqlx::query_as::<_, AuditRecord>(
                "SELECT id, at, action, detail FROM audit_events
                 WHERE account_id = $1 ORDER BY id DESC LIMIT $2",
            )
            .bind(account_id)
            .bind(limit)
            .fetch_all(pool)
            .await
        })
    }
}
