//! A package's publishing policy (docs/publishing-policy.md): who reads
//! it, who changes it, and the one place a change is checked. What each
//! switch refuses is enforced where that act happens (publish, approve).

use agentlang_core::{Kind, PackageName};
use serde::{Deserialize, Serialize};

use crate::{
    Registry, ServiceError, audit,
    owners::{find_package, package_for_token, require_owner},
    tokens::Authenticated,
};
pub use store::publishing_policy::PublishingPolicy;

/// What `PATCH /api/v1/{kind}/{name}/publishing` takes: each switch sent is
/// set, each absent one kept.
#[derive(Debug, Clone, Default, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct PolicyChange {
    /// Only trusted-publishing tokens (OpenID Connect) may publish.
    pub trusted_publishing_only: Option<bool>,
    /// Owners need a second factor for sensitive actions; a publish needs a
    /// token minted with one, or a trusted-publishing token.
    pub two_factor_required: Option<bool>,
    /// Every new version is staged and published only when an owner
    /// approves it.
    pub staging_required: Option<bool>,
}

impl PolicyChange {
    fn apply(&self, mut policy: PublishingPolicy) -> PublishingPolicy {
        if let Some(on) = self.trusted_publishing_only {
            policy.trusted_publishing_only = on;
        }
        if let Some(on) = self.two_factor_required {
            policy.two_factor_required = on;
        }
        if let Some(on) = self.staging_required {
            policy.staging_required = on;
        }
        policy
    }
}

/// A package's policy as served.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct PolicyAnswer {
    #[cfg_attr(feature = "openapi", schema(value_type = String, example = "tool"))]
    pub kind: Kind,
    #[cfg_attr(feature = "openapi", schema(value_type = String))]
    pub name: PackageName,
    pub trusted_publishing_only: bool,
    pub two_factor_required: bool,
    pub staging_required: bool,
}

impl PolicyAnswer {
    fn new(kind: Kind, name: PackageName, policy: PublishingPolicy) -> Self {
        Self {
            kind,
            name,
            trusted_publishing_only: policy.trusted_publishing_only,
            two_factor_required: policy.two_factor_required,
            staging_required: policy.staging_required,
        }
    }
}

/// The policy of the package with this id (the default when it has gone).
pub async fn policy_of_package(
    registry: &Registry,
    package_id: i64,
) -> Result<PublishingPolicy, ServiceError> {
    Ok(registry
        .db
        .publishing_policy(package_id)
        .await?
        .unwrap_or_default())
}

/// The policy of `kind`/`name`; `None` when no such package exists (its
/// first publish has the default policy).
pub async fn policy_of(
    registry: &Registry,
    kind: Kind,
    name: &PackageName,
) -> Result<Option<PublishingPolicy>, ServiceError> {
    match registry.db.find_package(kind, name).await? {
        Some(package) => Ok(Some(policy_of_package(registry, package.id).await?)),
        None => Ok(None),
    }
}

/// Anyone may read a package's policy: a consumer may want to know that
/// its versions only come from a trusted CI run. 404 when no package.
pub async fn get_policy(
    registry: &Registry,
    kind: Kind,
    name: &PackageName,
) -> Result<PolicyAnswer, ServiceError> {
    let package = find_package(registry, kind, name.as_str()).await?;
    let policy = policy_of_package(registry, package.id).await?;
    Ok(PolicyAnswer::new(kind, package.name, policy))
}

/// Changes the policy: owners with token scope `owners`.
pub async fn set_policy(
    registry: &Registry,
    auth: &Authenticated,
    kind: Kind,
    name: &PackageName,
    change: &PolicyChange,
    otp: Option<&str>,
) -> Result<PolicyAnswer, ServiceError> {
    let package = package_for_token(registry, auth, kind, name).await?;
    require_owner(registry, auth.account_id, &package).await?;
    let before = policy_of_package(registry, package.id).await?;
    let after = change.apply(before);
    // Second factor: turning the requirement on needs an enrolled owner,
    // turning it off needs the code.
    let guarded = PublishingPolicy {
        two_factor_required: before.two_factor_required || after.two_factor_required,
        ..after
    };
    crate::two_factor::step_up(registry, auth.account_id, Some(&guarded), otp).await?;
    if after != before {
        if !registry
            .db
            .set_publishing_policy(package.id, &after)
            .await?
        {
            return Err(ServiceError::NotFound(format!("{kind} {name:?}")));
        }
        audit::record(
            registry,
            auth.account_id,
            "publishing_policy_changed",
            &format!("{kind}/{} {after:?}", package.name),
        )
        .await;
        tracing::info!(username = %auth.username, %kind, name = %package.name, ?after, "publishing policy changed");
    }
    Ok(PolicyAnswer::new(kind, package.name, after))
}
