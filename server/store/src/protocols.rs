//! The protocol catalog (`protocols`) and the quality reports stored with
//! agent versions.

use serde_json::Value;
use sqlx::types::Json;

use super::{Db, now, with_pool};

#[derive(Debug, Clone, PartialEq, sqlx::FromRow)]
pub struct ProtocolRecord {
    pub name: String,
    pub description: String,
    /// The JSON list `core::protocols::ProtocolEntry` validates.
    pub versions: Json<Value>,
    /// Unix seconds.
    pub updated_at: i64,
}

impl Db {
    pub async fn list_protocols(&self) -> Result<Vec<ProtocolRecord>, sqlx::Error> {
        with_pool!(self, pool => {
            sqlx::query_as::<_, ProtocolRecord>(
                "SELECT name, description, versions, updated_at FROM protocols ORDER BY name",
            )
            .fetch_all(pool)
            .await
        })
    }

    pub async fn find_protocol(&self, name: &str) -> Result<Option<ProtocolRecord>, sqlx::Error> {
        with_pool!(self, pool => {
            sqlx::query_as::<_, ProtocolRecord>(
                "SELECT name, description, versions, updated_at FROM protocols WHERE name = $1",
            )
            .bind(name)
            .fetch_optional(pool)
            .await
        })
    }

    /// Creates or replaces a catalog entry. Returns the row and whether it
    /// is new.
    pub async fn upsert_protocol(
        &self,
        name: &str,
        description: &str,
        versions: &Value,
    ) -> Result<(ProtocolRecord, bool), sqlx::Error> {
        let existed = self.find_protocol(name).await?.is_some();
        let record = with_pool!(self, pool => {
            sqlx::query_as::<_, ProtocolRecord>(
                "INSERT INTO protocols (name, description, versions, updated_at)
                 VALUES ($1, $2, $3, $4)
                 ON CONFLICT (name) DO UPDATE SET
                     description = excluded.description,
                     versions = excluded.versions,
                     updated_at = excluded.updated_at
                 RETURNING name, description, versions, updated_at",
            )
            .bind(name)
            .bind(description)
            .bind(Json(versions))
            .bind(now())
            .fetch_one(pool)
            .await
        })?;
        super::note_local_write();
        Ok((record, !existed))
    }

    /// The stored quality report of one version; `None` when there is none
    /// (tools, protocols, versions published before reports existed).
    pub async fn quality_report(&self, version_id: i64) -> Result<Option<Value>, sqlx::Error> {
        let row: Option<Option<Json<Value>>> = with_pool!(self, pool => {
            sqlx::query_scalar("SELECT quality_report FROM versions WHERE id = $1")
                .bind(version_id)
                .fetch_optional(pool)
                .await
        })?;
        Ok(row.flatten().map(|j| j.0))
    }
}
