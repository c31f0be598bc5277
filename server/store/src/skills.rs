//! What the Agent Skills discovery index lists: each skill's newest
//! release.

use agentlang_core::{PackageName, Version, digest::Sha256Digest};

use super::{Db, with_pool};

/// A skill package's newest release that is neither yanked nor deleted.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct SkillRelease {
    pub name: PackageName,
    pub version: Version,
    /// The container's digest: what its download answers.
    pub sha256: Sha256Digest,
    pub description: String,
}

impl Db {
    /// Every skill's newest release (SemVer precedence over the stored
    /// `major`, `minor`, `patch`; prereleases are not releases here), by
    /// name, at most `limit`.
    pub async fn newest_skill_releases(
        &self,
        limit: i64,
    ) -> Result<Vec<SkillRelease>, sqlx::Error> {
        with_pool!(self, pool => {
            sqlx::query_as::<_, SkillRelease>(
                "SELECT name, version, sha256, description FROM (
                     SELECT p.name, p.normalized_name, v.version, v.sha256,
                            COALESCE(v.spec->>'description', '') AS description,
                            ROW_NUMBER() OVER (PARTITION BY p.id
                                ORDER BY v.major DESC, v.minor DESC, v.patch DESC) AS newest
                     FROM packages p JOIN versions v ON v.package_id = p.id
                     WHERE p.kind = 'skill' AND v.deleted_at IS NULL
                       AND NOT v.yanked AND v.prerelease = ''
                 ) releases
                 WHERE newest = 1
                 ORDER BY normalized_name
                 LIMIT $1",
            )
            .bind(limit)
            .fetch_all(pool)
            .await
        })
    }
}
