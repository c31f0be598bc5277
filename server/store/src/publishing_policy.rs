//! A package's publishing policy (migration 0038): three switches its
//! owners set. What each one refuses is the app's.

use super::{Db, with_pool};

/// How a package's versions may be published. The default (all off) is
/// every package's until an owner changes it, and a new package's.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, sqlx::FromRow)]
pub struct PublishingPolicy {
    /// Only trusted-publishing tokens (OpenID Connect) may publish.
    pub trusted_publishing_only: bool,
    /// Owners' sensitive actions need a second factor, and a publish needs
    /// a token minted with one (or a trusted-publishing token).
    pub two_factor_required: bool,
    /// Every new version is staged first and published when an owner
    /// approves it.
    pub staging_required: bool,
}

impl Db {
    /// The package's policy; `None` when there is no such package.
    pub async fn publishing_policy(
        &self,
        package_id: i64,
    ) -> Result<Option<PublishingPolicy>, sqlx::Error> {
        with_pool!(self, pool => {
            sqlx::query_as(
                "SELECT trusted_publishing_only, two_factor_required, staging_required
                 FROM packages WHERE id = $1",
            )
            .bind(package_id)
            .fetch_optional(pool)
            .await
        })
    }

    /// Stores the package's policy whole; false when there is no such
    /// package.
    pub async fn set_publishing_policy(
        &self,
        package_id: i64,
        policy: &PublishingPolicy,
    ) -> Result<bool, sqlx::Error> {
        with_pool!(self, pool => {
            sqlx::query(
                "UPDATE packages
                 SET trusted_publishing_only = $1, two_factor_required = $2, staging_required = $3
                 WHERE id = $4",
            )
            .bind(policy.trusted_publishing_only)
            .bind(policy.two_factor_required)
            .bind(policy.staging_required)
            .bind(package_id)
            .execute(pool)
            .await
            .map(|r| r.rows_affected() == 1)
        })
    }
}
