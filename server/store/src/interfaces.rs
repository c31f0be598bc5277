//! Abstract tools: the tool versions whose stored tool.yaml says
//! `provides: [...]` (`versions.spec->'provides'`, indexed by migration
//! 0034's partial index). One statement reads them all: the resolver's
//! pick, publish's rule that keeps interface names apart from tool names
//! and the catalog's interface pages each filter that list, which grows
//! with the versions that provide an interface, not with the catalog.

use agentlang_core::{PackageName, Version};
use sqlx::types::Json;

use super::Db;
use crate::dialect::Texts;

/// One live (not deleted) version of a tool that provides interfaces.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct ProvidingVersion {
    /// The tool's name as first published.
    pub name: PackageName,
    pub version: Version,
    pub yanked: bool,
    /// Unix seconds.
    pub published_at: i64,
    /// tool.yaml's `provides`, as stored.
    pub provides: Json<Vec<PackageName>>,
}

impl ProvidingVersion {
    /// Whether this version provides `interface` (any spelling).
    pub fn provides(&self, interface: &PackageName) -> bool {
        let wanted = interface.normalized();
        self.provides.0.iter().any(|i| i.normalized() == wanted)
    }
}

impl Db {
    /// Every live tool version that provides an interface, by normalized
    /// tool name then publish order. Quarantined ones are left out: no
    /// pick, not even a lock's, may land on one (docs/statuses.md).
    pub async fn providing_versions(&self) -> Result<Vec<ProvidingVersion>, sqlx::Error> {
        match self {
            Db::Sqlite { pool, .. } => {
                sqlx::query_as::<_, ProvidingVersion>(PROVIDING_VERSIONS.sqlite)
                    .fetch_all(pool)
                    .await
            }
            Db::Postgres(pools) => {
                sqlx::query_as::<_, ProvidingVersion>(PROVIDING_VERSIONS.postgres)
                    .fetch_all(pools.current())
                    .await
            }
        }
    }
}

/// [`Db::providing_versions`]. SQLite 3.51 without statistics walks every
/// version of every tool through its index of live versions and reads each
/// spec's JSON (2 s at 2,000,000 versions, and every first resolve of a
/// generation waits for it) rather than the partial index that holds only
/// the providing versions (7 ms); its text names that index. PostgreSQL
/// finds it from the expression's statistics (migration 0045).
macro_rules! providing_versions {
    ($versions:literal) => {
        concat!(
            "SELECT p.name, v.version, v.yanked, v.published_at, v.spec->'provides' AS provides
             FROM ",
            $versions,
            "
             JOIN packages p ON p.id = v.package_id
             WHERE p.kind = 'tool' AND v.spec->'provides' IS NOT NULL
               AND v.deleted_at IS NULL
               AND NOT EXISTS (SELECT 1 FROM statuses s
                               WHERE s.package_id = v.package_id
                                 AND s.status = 'quarantined'
                                 AND s.version_id IN (0, v.id))
             ORDER BY p.normalized_name, v.id"
        )
    };
}

const PROVIDING_VERSIONS: Texts = Texts {
    sqlite: providing_versions!("versions v INDEXED BY versions_providing_interfaces"),
    postgres: providing_versions!("versions v"),
};
