//! A second factor (migration 0039): an account's TOTP enrolment, its
//! recovery codes, and which tokens were minted with a code. What a code
//! is and when one is asked for is the app's.

use super::{Db, now, with_pool};

/// An account's enrolment, its secret still sealed.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct TwoFactorRow {
    pub account_id: i64,
    pub secret_box: String,
    pub created_at: i64,
    /// `None` while pending: no code has confirmed it yet.
    pub confirmed_at: Option<i64>,
    pub last_step: Option<i64>,
}

impl Db {
    pub async fn two_factor(&self, account_id: i64) -> Result<Option<TwoFactorRow>, sqlx::Error> {
        with_pool!(self, pool => {
            sqlx::query_as::<_, TwoFactorRow>(
                "SELECT account_id, secret_box, created_at, confirmed_at, last_step
                 FROM two_factor WHERE account_id = $1",
            )
            .bind(account_id)
            .fetch_optional(pool)
            .await
        })
    }

    /// Starts (or restarts) a pending enrolment; false when the account
    /// has a confirmed one, which is kept.
    pub async fn begin_two_factor(
        &self,
        account_id: i64,
        secret_box: &str,
    ) -> Result<bool, sqlx::Error> {
        with_pool!(self, pool => {
            sqlx::query(
                "INSERT INTO two_factor (account_id, secret_box, created_at)
                 VALUES ($1, $2, $3)
                 ON CONFLICT (account_id) DO UPDATE
                 SET secret_box = excluded.secret_box, created_at = excluded.created_at,
                     last_step = NULL
                 WHERE two_factor.confirmed_at IS NULL",
            )
            .bind(account_id)
            .bind(secret_box)
            .bind(now())
            .execute(pool)
            .await
            .map(|r| r.rows_affected() == 1)
        })
    }

    /// Spends the time-step of an accepted code: false when a code of this
    /// step (or a later one) was accepted already, so each code works once.
    pub async fn spend_two_factor_step(
        &self,
        account_id: i64,
        step: i64,
    ) -> Result<bool, sqlx::Error> {
        with_pool!(self, pool => {
            sqlx::query(
                "UPDATE two_factor SET last_step = $1
                 WHERE account_id = $2 AND (last_step IS NULL OR last_step < $1)",
            )
            .bind(step)
            .bind(account_id)
            .execute(pool)
            .await
            .map(|r| r.rows_affected() == 1)
        })
    }

    /// Confirms a pending enrolment and stores its recovery codes' hashes
    /// (replacing any earlier ones); false when it was not pending.
    pub async fn confirm_two_factor(
        &self,
        account_id: i64,
        recovery_hashes: &[String],
    ) -> Result<bool, sqlx::Error> {
        let confirmed = with_pool!(self, pool => {
            sqlx::query(
                "UPDATE two_factor SET confirmed_at = $1
                 WHERE account_id = $2 AND confirmed_at IS NULL",
            )
            .bind(now())
            .bind(account_id)
            .execute(pool)
            .await
            .map(|r| r.rows_affected() == 1)
        })?;
        if !confirmed {
            return Ok(false);
        }
        with_pool!(self, pool => {
            sqlx::query("DELETE FROM two_factor_recovery_codes WHERE account_id = $1")
                .bind(account_id)
                .execute(pool)
                .await
                .map(drop)
        })?;
        for hash in recovery_hashes {
            with_pool!(self, pool => {
                sqlx::query(
                    "INSERT INTO two_factor_recovery_codes (account_id, code_hash) VALUES ($1, $2)",
                )
                .bind(account_id)
                .bind(hash)
                .execute(pool)
                .await
                .map(drop)
            })?;
        }
        Ok(true)
    }

    /// Spends a recovery code by its hash; false when the account has no
    /// such unused code.
    pub async fn spend_recovery_code(
        &self,
        account_id: i64,
        code_hash: &str,
    ) -> Result<bool, sqlx::Error> {
        with_pool!(self, pool => {
            sqlx::query(
                "UPDATE two_factor_recovery_codes SET used_at = $1
                 WHERE account_id = $2 AND code_hash = $3 AND used_at IS NULL",
            )
            .bind(now())
            .bind(account_id)
            .bind(code_hash)
            .execute(pool)
            .await
            .map(|r| r.rows_affected() == 1)
        })
    }

    pub async fn recovery_codes_left(&self, account_id: i64) -> Result<i64, sqlx::Error> {
        with_pool!(self, pool => {
            sqlx::query_scalar(
                "SELECT COUNT(*) FROM two_factor_recovery_codes
                 WHERE account_id = $1 AND used_at IS NULL",
            )
            .bind(account_id)
            .fetch_one(pool)
            .await
        })
    }

    /// Removes the account's enrolment and recovery codes.
    pub async fn delete_two_factor(&self, account_id: i64) -> Result<(), sqlx::Error> {
        with_pool!(self, pool => {
            sqlx::query("DELETE FROM two_factor_recovery_codes WHERE account_id = $1")
                .bind(account_id)
                .execute(pool)
                .await
                .map(drop)
        })?;
        with_pool!(self, pool => {
            sqlx::query("DELETE FROM two_factor WHERE account_id = $1")
                .bind(account_id)
                .execute(pool)
                .await
                .map(drop)
        })
    }
}
