//! Signing keys: the public halves of the Ed25519 keys publishers sign with.
//! Rows are never deleted (old versions name their signer); a key is revoked.

use agentlang_core::{Username, signing::KeyId, tlog::LogEntry};

use super::{BeginWrite, Db, is_unique_violation, now, tlog::AppendLog, with_pool};

#[derive(Debug, Clone, sqlx::FromRow)]
pub struct SigningKeyRecord {
    pub key_id: KeyId,
    pub account_id: i64,
    pub public_key_pem: String,
    pub created_at: i64,
    pub revoked_at: Option<i64>,
}

#[derive(Debug, thiserror::Error)]
pub enum InsertKeyError {
    #[error("the key is already registered")]
    AlreadyRegistered,
    #[error(transparent)]
    Db(#[from] sqlx::Error),
}

impl Db {
    /// Registers a public key. `key_id` must be the id of `public_key_pem`
    /// (lowercase hex SHA-256 of the raw key).
    pub async fn insert_signing_key(
        &self,
        key_id: &KeyId,
        account_id: i64,
        public_key_pem: &str,
        log_entry: &LogEntry,
    ) -> Result<SigningKeyRecord, InsertKeyError> {
        let result = with_pool!(self, pool => async {
            let mut tx = pool.begin_write().await?;
            tx.lock_log().await?;
            let record = sqlx::query_as::<_, SigningKeyRecord>(
                "INSERT INTO signing_keys (key_id, account_id, public_key_pem, created_at)
                 VALUES ($1, $2, $3, $4)
                 RETURNING key_id, account_id, public_key_pem, created_at, revoked_at",
            )
            .bind(key_id.as_str())
            .bind(account_id)
            .bind(public_key_pem)
            .bind(now())
            .fetch_one(&mut *tx)
            .await?;
            tx.append_log(log_entry).await?;
            tx.commit().await?;
            Ok::<_, sqlx::Error>(record)
        }
        .await);
        result.map_err(|e| {
            if is_unique_violation(&e) {
                InsertKeyError::AlreadyRegistered
            } else {
                InsertKeyError::Db(e)
            }
        })
    }

    pub async fn find_signing_key(
        &self,
        key_id: &KeyId,
    ) -> Result<Option<SigningKeyRecord>, sqlx::Error> {
        with_pool!(self, pool => {
            sqlx::query_as::<_, SigningKeyRecord>(
                "SELECT key_id, account_id, public_key_pem, created_at, revoked_at
                 FROM signing_keys WHERE key_id = $1",
            )
            .bind(key_id.as_str())
            .fetch_optional(pool)
            .await
        })
    }
}

/// A key with its owner's username, as the public key page shows it.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct SigningKeyWithOwner {
    pub key_id: KeyId,
    pub owner: Username,
    pub public_key_pem: String,
    pub created_at: i64,
    pub revoked_at: Option<i64>,
}

impl Db {
    /// The account's keys, oldest first, revoked ones included.
    pub async fn list_signing_keys(
        &self,
        account_id: i64,
    ) -> Result<Vec<SigningKeyRecord>, sqlx::Error> {
        with_pool!(self, pool => {
            sqlx::query_as::<_, SigningKeyRecord>(
                "SELECT key_id, account_id, public_key_pem, created_at, revoked_at
                 FROM signing_keys WHERE account_id = $1 ORDER BY created_at, key_id",
            )
            .bind(account_id)
            .fetch_all(pool)
            .await
        })
    }

    pub async fn find_signing_key_with_owner(
        &self,
        key_id: &KeyId,
    ) -> Result<Option<SigningKeyWithOwner>, sqlx::Error> {
        with_pool!(self, pool => {
            sqlx::query_as::<_, SigningKeyWithOwner>(
                "SELECT k.key_id, a.username AS owner, k.public_key_pem, k.created_at, k.revoked_at
                 FROM signing_keys k JOIN accounts a ON a.id = k.account_id
                 WHERE k.key_id = $1",
            )
            .bind(key_id.as_str())
            .fetch_optional(pool)
            .await
        })
    }

    /// Revokes one of the account's keys. Returns the key as it is now, or
    /// `None` when the account has no such key. Revoking twice keeps the
    /// first revocation time.
    pub async fn revoke_signing_key(
        &self,
        account_id: i64,
        key_id: &KeyId,
        log_entry: &LogEntry,
    ) -> Result<Option<SigningKeyRecord>, sqlx::Error> {
        with_pool!(self, pool => {
            let mut tx = pool.begin_write().await?;
            tx.lock_log().await?;
            let revoked = sqlx::query(
                "UPDATE signing_keys SET revoked_at = $1
                 WHERE key_id = $2 AND account_id = $3 AND revoked_at IS NULL",
            )
            .bind(now())
            .bind(key_id.as_str())
            .bind(account_id)
            .execute(&mut *tx)
            .await?
            .rows_affected();
            if revoked > 0 {
                tx.append_log(log_entry).await?;
            }
            let record = sqlx::query_as::<_, SigningKeyRecord>(
                "SELECT key_id, account_id, public_key_pem, created_at, revoked_at
                 FROM signing_keys WHERE key_id = $1 AND account_id = $2",
            )
            .bind(key_id.as_str())
            .bind(account_id)
            .fetch_optional(&mut *tx)
            .await?;
            tx.commit().await?;
            Ok(record)
        })
    }
}
