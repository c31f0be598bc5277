//! Secrets the registry generates for itself, kept in the database so that
//! every replica shares them without an operator copying files.

use super::{Db, now, with_pool};

impl Db {
    /// The registry's own secret called `name`: the stored one, or `value`
    /// stored now when there is none. Every replica of one database gets the
    /// same answer, whoever stored it first.
    pub async fn server_secret(&self, name: &str, value: &str) -> Result<String, sqlx::Error> {
        with_pool!(self, pool => {
            sqlx::query(
                "INSERT INTO server_secrets (name, value, created_at) VALUES ($1, $2, $3)
                 ON CONFLICT (name) DO NOTHING",
            )
            .bind(name)
            .bind(value)
            .bind(now())
            .execute(pool)
            .await?;
            sqlx::query_scalar::<_, String>("SELECT value FROM server_secrets WHERE name = $1")
                .bind(name)
                .fetch_one(pool)
                .await
        })
    }
}
