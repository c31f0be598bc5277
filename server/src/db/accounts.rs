//! Accounts: who publishes and owns packages.

use super::{Db, is_unique_violation, normalize, now, with_pool};
use crate::auth::Username;

#[derive(Debug, Clone, sqlx::FromRow)]
pub struct AccountRecord {
    pub id: i64,
    pub username: String,
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

/// Who becomes an admin at registration.
#[derive(Debug, Clone, Copy)]
pub enum AdminRule<'a> {
    /// The account with this username (compared normalized).
    Named(&'a str),
    /// The first account ever created.
    FirstAccount,
}

impl Db {
    /// Creates an account. Usernames are unique in normalized form, so
    /// `Alice` and `alice` cannot both exist.
    pub async fn create_account(
        &self,
        username: &Username,
        password_hash: &str,
        admin: AdminRule<'_>,
    ) -> Result<AccountRecord, CreateAccountError> {
        let normalized = normalize(username.as_str());
        let (named_admin, first_is_admin) = match admin {
            AdminRule::Named(name) => (normalize(name) == normalized, false),
            AdminRule::FirstAccount => (false, true),
        };
        let result = with_pool!(self, pool => {
            sqlx::query_as::<_, AccountRecord>(
                "INSERT INTO accounts (username, normalized_username, password_hash, is_admin, created_at)
                 VALUES ($1, $2, $3, ($4 OR ($5 AND NOT EXISTS (SELECT 1 FROM accounts))), $6)
                 RETURNING id, username, password_hash, is_admin, created_at",
            )
            .bind(username.as_str())
            .bind(&normalized)
            .bind(password_hash)
            .bind(named_admin)
            .bind(first_is_admin)
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
    pub async fn find_account(&self, username: &str) -> Result<Option<AccountRecord>, sqlx::Error> {
        let normalized = normalize(username);
        with_pool!(self, pool => {
            sqlx::query_as::<_, AccountRecord>(
                "SELECT id, username, password_hash, is_admin, created_at
                 FROM accounts WHERE normalized_username = $1",
            )
            .bind(&normalized)
            .fetch_optional(pool)
            .await
        })
    }
}
