//! API tokens: the database half of a JWT. The token carries a random
//! secret; its row keeps only the secret's SHA-256, whether the token is
//! still valid (not revoked) and what it may do.

use agentlang_core::Username;
use sqlx::types::Json;

use super::{Db, now, with_pool};
use crate::names::{NamePattern, Scope};

/// A token as listed to its owner: nothing in it authenticates.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct TokenRecord {
    pub jti: String,
    pub account_id: i64,
    pub name: String,
    pub scopes: Json<Vec<Scope>>,
    pub packages: Option<Json<Vec<NamePattern>>>,
    pub created_at: i64,
    pub expires_at: i64,
    pub revoked_at: Option<i64>,
    pub last_used_at: Option<i64>,
}

/// A token joined with its account, for authentication.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct TokenGrant {
    pub jti: String,
    pub account_id: i64,
    pub username: Username,
    pub is_admin: bool,
    pub scopes: Json<Vec<Scope>>,
    pub packages: Option<Json<Vec<NamePattern>>>,
    pub expires_at: i64,
    pub revoked_at: Option<i64>,
    /// `None` for tokens from before secrets: they never authenticate.
    pub secret_hash: Option<String>,
    pub last_used_at: Option<i64>,
    /// Second factor: minted with a TOTP code.
    pub second_factor: bool,
    /// Trusted publishing: the OIDC identity the token was minted for
    /// (JSON); `None` for an ordinary token.
    pub oidc_claims: Option<String>,
}

#[derive(Debug)]
pub struct NewToken<'a> {
    pub jti: &'a str,
    pub secret_hash: &'a str,
    pub account_id: i64,
    pub name: &'a str,
    pub scopes: &'a [Scope],
    pub packages: Option<&'a [NamePattern]>,
    pub created_at: i64,
    pub expires_at: i64,
    /// Minted with a second-factor code.
    pub second_factor: bool,
}

/// A token is not re-stamped more often than this, so authenticated
/// requests do not each cost a write.
const LAST_USED_GRANULARITY_SECS: i64 = 60;

impl Db {
    pub async fn insert_token(&self, token: &NewToken<'_>) -> Result<(), sqlx::Error> {
        with_pool!(self, pool => {
            sqlx::query(
                "INSERT INTO api_tokens (jti, secret_hash, account_id, name, scopes, packages,
                                         created_at, expires_at, second_factor)
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)",
            )
            .bind(token.jti)
            .bind(token.secret_hash)
            .bind(token.account_id)
            .bind(token.name)
            .bind(Json(token.scopes))
            .bind(token.packages.map(Json))
            .bind(token.created_at)
            .bind(token.expires_at)
            .bind(token.second_factor)
            .execute(pool)
            .await
            .map(drop)
        })
    }

    pub async fn find_token_grant(&self, jti: &str) -> Result<Option<TokenGrant>, sqlx::Error> {
        with_pool!(self, pool => {
            sqlx::query_as::<_, TokenGrant>(
                "SELECT t.jti, t.account_id, a.username, a.is_admin, t.scopes, t.packages,
                        t.expires_at, t.revoked_at, t.secret_hash, t.last_used_at,
                        t.second_factor, t.oidc_claims
                 FROM api_tokens t JOIN accounts a ON a.id = t.account_id
                 WHERE t.jti = $1",
            )
            .bind(jti)
            .fetch_optional(pool)
            .await
        })
    }

    /// Whether a token last used at `last_used_at` is due a new mark: at
    /// most one write a minute per token (a write, in SQLite, waits for the
    /// one writer; most requests of a busy token write nothing).
    pub fn token_touch_due(last_used_at: Option<i64>) -> bool {
        last_used_at.is_none_or(|at| at < now() - LAST_USED_GRANULARITY_SECS)
    }

    /// Records that the token was just used (at most once a minute).
    pub async fn touch_token(&self, jti: &str) -> Result<(), sqlx::Error> {
        let now = now();
        with_pool!(self, pool => {
            sqlx::query(
                "UPDATE api_tokens SET last_used_at = $1
                 WHERE jti = $2 AND (last_used_at IS NULL OR last_used_at < $3)",
            )
            .bind(now)
            .bind(jti)
            .bind(now - LAST_USED_GRANULARITY_SECS)
            .execute(pool)
            .await
            .map(drop)
        })
    }

    /// The account's tokens, newest first, revoked ones included.
    pub async fn list_tokens(&self, account_id: i64) -> Result<Vec<TokenRecord>, sqlx::Error> {
        with_pool!(self, pool => {
            sqlx::query_as::<_, TokenRecord>(
                "SELECT jti, account_id, name, scopes, packages, created_at, expires_at,
                        revoked_at, last_used_at
                 FROM api_tokens WHERE account_id = $1
                 ORDER BY created_at DESC, jti",
            )
            .bind(account_id)
            .fetch_all(pool)
            .await
        })
    }

    /// Revokes one of the account's tokens; revoking twice keeps the first
    /// time. Returns false when the account has no such token.
    pub async fn revoke_token(&self, account_id: i64, jti: &str) -> Result<bool, sqlx::Error> {
        let affected = with_pool!(self, pool => {
            sqlx::query(
                "UPDATE api_tokens SET revoked_at = COALESCE(revoked_at, $1)
                 WHERE jti = $2 AND account_id = $3",
            )
            .bind(now())
            .bind(jti)
            .bind(account_id)
            .execute(pool)
            .await
            .map(|r| r.rows_affected())
        })?;
        Ok(affected > 0)
    }

    /// Revokes every live token of the account; returns how many.
    pub async fn revoke_all_tokens(&self, account_id: i64) -> Result<u64, sqlx::Error> {
        with_pool!(self, pool => {
            sqlx::query(
                "UPDATE api_tokens SET revoked_at = $1
                 WHERE account_id = $2 AND revoked_at IS NULL",
            )
            .bind(now())
            .bind(account_id)
            .execute(pool)
            .await
            .map(|r| r.rows_affected())
        })
    }
}
