//! Accounts: who publishes and owns packages.

use super::{Db, is_unique_violation, now, with_pool};
use agentlang_core::Username;
use agentlang_core::names::normalize;

#[derive(Debug, Clone, sqlx::FromRow)]
pub struct AccountRecord {
    pub id: i64,
    pub username: Username,
    /// argon2id, PHC string format.
    pub password_hash: String,
    pub is_admin: bool,
    pub created_at: i64,
}

#[derive(Debug, thiserror::Error)]
pub enum CreateAccountError {
    #[error("the username is taken")]
    UsernameTaken,
    #[error(transparent)]
    Db(#[from] sqlx::Error),
}

const ACCOUNT_COLUMNS: &str = "id, username, password_hash, is_admin, created_at";

impl Db {
    /// Creates an account. Usernames are unique in normalized form, so
    /// `Alice` and `alice` cannot both exist. `is_admin` is the operator's
    /// decision (seeding tools), never the registering client's.
    pub async fn create_account(
        &self,
        username: &Username,
        password_hash: &str,
        is_admin: bool,
    ) -> Result<AccountRecord, CreateAccountError> {
        let result = with_pool!(self, pool => {
            sqlx::query_as::<_, AccountRecord>(sqlx::AssertSqlSafe(format!(
                "INSERT INTO accounts (username, normalized_username, password_hash, is_admin, created_at)
                 VALUES ($1, $2, $3, $4, $5)
                 RETURNING {ACCOUNT_COLUMNS}"
            )))
            .bind(username.as_str())
            .bind(normalize(username.as_str()))
            .bind(password_hash)
            .bind(is_admin)
            .bind(now())
            .fetch_one(pool)
            .await
        });
        result.map_err(|e| {
            if is_unique_violation(&e) {
                CreateAccountError::UsernameTaken
            } else {
                CreateAccountError::Db(e)
            }
        })
    }

    /// Looks an account up by any spelling of its username.
    pub async fn find_account(
        &self,
        username: &Username,
    ) -> Result<Option<AccountRecord>, sqlx::Error> {
        with_pool!(self, pool => {
            sqlx::query_as::<_, AccountRecord>(sqlx::AssertSqlSafe(format!(
                "SELECT {ACCOUNT_COLUMNS} FROM accounts WHERE normalized_username = $1"
            )))
            .bind(normalize(username.as_str()))
            .fetch_optional(pool)
            .await
        })
    }

    pub async fn find_account_by_id(&self, id: i64) -> Result<Option<AccountRecord>, sqlx::Error> {
        with_pool!(self, pool => {
            sqlx::query_as::<_, AccountRecord>(sqlx::AssertSqlSafe(format!(
                "SELECT {ACCOUNT_COLUMNS} FROM accounts WHERE id = $1"
            )))
            .bind(id)
            .fetch_optional(pool)
            .await
        })
    }

    /// Makes the account an admin or not; `None` when there is no such
    /// account.
    pub async fn set_admin(
        &self,
        username: &Username,
        is_admin: bool,
    ) -> Result<Option<AccountRecord>, sqlx::Error> {
        with_pool!(self, pool => {
            sqlx::query_as::<_, AccountRecord>(sqlx::AssertSqlSafe(format!(
                "UPDATE accounts SET is_admin = $1 WHERE normalized_username = $2
                 RETURNING {ACCOUNT_COLUMNS}"
            )))
            .bind(is_admin)
            .bind(normalize(username.as_str()))
            .fetch_optional(pool)
            .await
        })
    }

    /// Binds a name of the operator's admin list to the account it names
    /// the first time the list names it (the account of that name then, or
    /// none), and makes the bound account an admin. Returns it; `None`
    /// when the name was first named with no account behind it: an account
    /// registered under the name later is not the one the operator meant.
    pub async fn bind_configured_admin(
        &self,
        username: &Username,
    ) -> Result<Option<AccountRecord>, sqlx::Error> {
        let name = normalize(username.as_str());
        with_pool!(self, pool => {
            sqlx::query(
                "INSERT INTO configured_admins (normalized_username, account_id, named_at)
                 SELECT $1, (SELECT id FROM accounts WHERE normalized_username = $1), $2
                 ON CONFLICT (normalized_username) DO NOTHING",
            )
            .bind(&name)
            .bind(now())
            .execute(pool)
            .await?;
            sqlx::query_as::<_, AccountRecord>(sqlx::AssertSqlSafe(format!(
                "UPDATE accounts SET is_admin = $1
                 WHERE id = (SELECT account_id FROM configured_admins WHERE normalized_username = $2)
                 RETURNING {ACCOUNT_COLUMNS}"
            )))
            .bind(true)
            .bind(&name)
            .fetch_optional(pool)
            .await
        })
    }

    /// Whether any account is an admin.
    pub async fn any_admin(&self) -> Result<bool, sqlx::Error> {
        with_pool!(self, pool => {
            sqlx::query_scalar::<_, i64>("SELECT COUNT(*) FROM accounts WHERE is_admin")
                .fetch_one(pool)
                .await
                .map(|n| n > 0)
        })
    }

    pub async fn set_password_hash(
        &self,
        account_id: i64,
        password_hash: &str,
    ) -> Result<(), sqlx::Error> {
        with_pool!(self, pool => {
            sqlx::query("UPDATE accounts SET password_hash = $1 WHERE id = $2")
                .bind(password_hash)
                .bind(account_id)
                .execute(pool)
                .await
                .map(drop)
        })
    }
}
