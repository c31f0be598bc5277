//! Trusted publishing (docs/trusted-publishing.md): a package's owners
//! trust a CI identity, an OpenID Connect issuer plus repository, workflow
//! file and optionally environment; a CI run proves that identity with an
//! ID token signed by the issuer and gets a 30-minute publish token for
//! exactly the packages that trust it. The trust configuration is the
//! authorization: the token publishes without its account being an owner.
//!
//! Issuers' keys and the verification of an ID token are [`crate::oidc`]'s.

use std::sync::Arc;

use agentlang_core::{Kind, PackageName};
use serde::{Deserialize, Serialize};

use crate::oidc::{LEEWAY_SECS, refuse};
pub use crate::oidc::{OidcKeys, OidcRefusal, TrustedIdentity, check_issuers};
use crate::{
    FieldError, Registry, ServiceError, audit,
    owners::{find_package, package_for_token, require_owner},
    rate_limits::{Bucket, ClientAddr},
    secrets::{random_hex, secret_hash},
    tokens::{Authenticated, NamePattern, Scope},
};
use store::{
    now,
    tokens::NewToken,
    trusted_publishing::{NewTrustedPublisher, TrustedCandidate},
};

/// How long a minted token lives.
pub const TRUSTED_TOKEN_SECS: i64 = 30 * 60;
/// Trusted publishers one package may have.
pub const MAX_TRUSTED_PUBLISHERS: usize = 16;
/// Longest repository, workflow or environment accepted.
pub const MAX_FIELD_LEN: usize = 200;
/// Minted tokens the listing shows.
pub const LISTED_TOKENS: i64 = 50;

/// Whether the trusted publisher matches the identity (issuer and
/// repository were matched by the query).
fn trusts(candidate: &TrustedCandidate, identity: &TrustedIdentity) -> bool {
    candidate.workflow == identity.workflow
        && candidate
            .environment
            .as_ref()
            .is_none_or(|e| identity.environment.as_ref() == Some(e))
}

/// The publish rule for a trusted-publishing token: the package exists and
/// one of its live trusted publishers matches the token's identity (a
/// token's patterns are names, which another kind's package may share; a
/// publisher removed since minting has revoked the token already). 403
/// `token-not-for-package` otherwise. Ordinary tokens pass.
pub async fn check_trusted_package(
    registry: &Registry,
    auth: &Authenticated,
    kind: Kind,
    name: &PackageName,
    package_id: Option<i64>,
) -> Result<(), ServiceError> {
    let Some(identity) = auth.trusted.as_deref() else {
        return Ok(());
    };
    let trusted = match package_id {
        None => false,
        Some(id) => registry
            .db
            .trusted_candidates(&identity.issuer, &identity.repository)
            .await?
            .iter()
            .any(|c| c.package_id == id && trusts(c, identity)),
    };
    if trusted {
        Ok(())
    } else {
        Err(ServiceError::TokenNotForPackage(format!(
            "{kind} {name}, which does not trust this token's identity ({} {} {})",
            identity.issuer, identity.repository, identity.workflow
        )))
    }
}

/// A minted trusted-publishing token.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct MintedToken {
    /// The bearer token: `AGENTLANG_TOKEN` for `agentlang publish`.
    pub token: String,
    pub expires_at: i64,
    /// The packages it may publish (`kind/name`).
    pub packages: Vec<String>,
}

/// Exchanges a CI's ID token for a publish token naming every package
/// that trusts its identity. Rate-limited per client address.
pub async fn exchange(
    registry: &Registry,
    client: &ClientAddr,
    jwt: &str,
) -> Result<MintedToken, ServiceError> {
    registry
        .rate_limits
        .check(Bucket::Credentials, client.as_str())?;
    let (identity, exp) = registry.oidc.verify(jwt).await?;
    let candidates = registry
        .db
        .trusted_candidates(&identity.issuer, &identity.repository)
        .await?;
    let matching: Vec<_> = candidates
        .into_iter()
        .filter(|c| trusts(c, &identity))
        .collect();
    if matching.is_empty() {
        return Err(refuse(
            OidcRefusal::NoTrustedPublisher,
            format!(
                "no trusted publisher matches issuer {:?}, repository {:?}, workflow {:?}, environment {:?}",
                identity.issuer, identity.repository, identity.workflow, identity.environment
            ),
        ));
    }
    // Claimed only once it would mint: a token refused for its identity
    // may be retried after an owner adds the publisher.
    if !registry
        .db
        // Kept past `exp` by the leeway the token is still accepted within.
        .claim_oidc_jti(
            &identity.issuer,
            &identity.jti,
            exp.max(now()) + LEEWAY_SECS as i64,
        )
        .await?
    {
        return Err(refuse(
            OidcRefusal::Replayed,
            format!("the ID token {:?} was already exchanged", identity.jti),
        ));
    }
    let mut names: Vec<String> = matching.iter().map(|c| c.name.to_string()).collect();
    names.sort();
    names.dedup();
    let patterns = names
        .iter()
        .map(|n| NamePattern::parse(n))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| ServiceError::internal(anyhow::anyhow!(e)))?;
    let publisher_ids: Vec<i64> = matching.iter().map(|c| c.id).collect();
    // The account that added the (first) matching publisher, for audit.
    let account_id = matching[0].created_by;
    let jti = uuid::Uuid::now_v7().to_string();
    let secret = random_hex().map_err(|e| ServiceError::internal(anyhow::anyhow!("{e}")))?;
    let created_at = now();
    let expires_at = created_at + TRUSTED_TOKEN_SECS;
    let claims = serde_json::to_string(&identity).map_err(ServiceError::internal)?;
    registry
        .db
        .insert_trusted_token(
            &NewToken {
                jti: &jti,
                secret_hash: &secret_hash(&secret),
                account_id,
                name: &format!("trusted: {}", identity.repository),
                scopes: &[Scope::Publish],
                packages: Some(&patterns),
                created_at,
                expires_at,
                // Its identity, not a code, is what a trusted token proves.
                second_factor: false,
            },
            &claims,
            &publisher_ids,
        )
        .await?;
    let token = registry
        .tokens
        .issue(account_id, &jti, &secret, created_at, expires_at)
        .map_err(ServiceError::internal)?;
    let packages: Vec<String> = matching
        .iter()
        .map(|c| format!("{}/{}", c.kind, c.name))
        .collect();
    audit::record(
        registry,
        account_id,
        "trusted_token_minted",
        &format!("{jti} for {} {claims}", packages.join(", ")),
    )
    .await;
    tracing::info!(token_id = %jti, repository = %identity.repository, "trusted-publishing token minted");
    Ok(MintedToken {
        token,
        expires_at,
        packages,
    })
}

/// What `POST /api/v1/{kind}/{name}/trusted-publishers` takes.
#[derive(Debug, Clone, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct NewPublisher {
    /// One of the registry's configured issuers.
    pub issuer: String,
    /// `owner/repo` (GitHub) or `group/project` (GitLab).
    pub repository: String,
    /// The workflow file name: `release.yml`, `.gitlab-ci.yml`.
    pub workflow: String,
    /// When set, only runs in this deployment environment match.
    pub environment: Option<String>,
}

/// A trusted publisher as served.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct PublisherAnswer {
    pub id: i64,
    pub issuer: String,
    pub repository: String,
    pub workflow: String,
    pub environment: Option<String>,
    pub created_at: i64,
}

/// A token minted through a package's trusted publisher.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct MintedTokenAnswer {
    pub trusted_publisher_id: i64,
    /// The token's public id.
    pub token_id: String,
    /// The claims it was minted from.
    pub identity: Option<TrustedIdentity>,
    pub created_at: i64,
    pub expires_at: i64,
    pub revoked_at: Option<i64>,
}

/// A package's trusted publishers and the tokens minted through them.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct PublishersAnswer {
    #[cfg_attr(feature = "openapi", schema(value_type = String, example = "tool"))]
    pub kind: Kind,
    #[cfg_attr(feature = "openapi", schema(value_type = String))]
    pub name: PackageName,
    pub publishers: Vec<PublisherAnswer>,
    /// Recent first, at most 50.
    pub tokens: Vec<MintedTokenAnswer>,
}

fn check_field(errors: &mut Vec<FieldError>, field: &str, value: &str) {
    if value.trim().is_empty() || value.len() > MAX_FIELD_LEN || value.chars().any(char::is_control)
    {
        errors.push(FieldError::new(
            field,
            format!("1 to {MAX_FIELD_LEN} characters, no control characters"),
        ));
    }
}

/// Adds a trusted publisher: owners, token scope `owners`.
pub async fn add_publisher(
    registry: &Registry,
    auth: &Authenticated,
    kind: Kind,
    name: &PackageName,
    new: &NewPublisher,
    otp: Option<&str>,
) -> Result<PublisherAnswer, ServiceError> {
    let package = package_for_token(registry, auth, kind, name).await?;
    require_owner(registry, auth.account_id, &package).await?;
    // Who may publish is what a stolen token must not change alone.
    crate::owners::step_up_for(registry, auth.actor(), &package, otp).await?;
    let mut errors = Vec::new();
    if !registry.oidc.is_configured(&new.issuer) {
        errors.push(FieldError::new(
            "issuer",
            "not an issuer this registry trusts (AGENTLANG_REGISTRY_OIDC_ISSUERS)",
        ));
    }
    check_field(&mut errors, "repository", &new.repository);
    check_field(&mut errors, "workflow", &new.workflow);
    if new.workflow.contains('/') || new.workflow.contains('@') {
        errors.push(FieldError::new(
            "workflow",
            "the workflow file name only (release.yml), no path or ref",
        ));
    }
    if let Some(env) = &new.environment {
        check_field(&mut errors, "environment", env);
    }
    if !errors.is_empty() {
        return Err(ServiceError::Validation(errors));
    }
    let existing = registry.db.trusted_publishers(package.id).await?;
    if existing.len() >= MAX_TRUSTED_PUBLISHERS {
        return Err(ServiceError::Conflict(format!(
            "{kind} {:?} has {MAX_TRUSTED_PUBLISHERS} trusted publishers, the most it may have",
            package.name.as_str()
        )));
    }
    let record = registry
        .db
        .insert_trusted_publisher(&NewTrustedPublisher {
            package_id: package.id,
            issuer: &new.issuer,
            repository: &new.repository,
            workflow: &new.workflow,
            environment: new.environment.as_deref(),
            created_by: auth.account_id,
        })
        .await?;
    audit::record(
        registry,
        auth.account_id,
        "trusted_publisher_added",
        &format!(
            "{kind}/{} #{} {} {} {} {:?}",
            package.name,
            record.id,
            record.issuer,
            record.repository,
            record.workflow,
            record.environment
        ),
    )
    .await;
    Ok(answer(record))
}

fn answer(r: store::trusted_publishing::TrustedPublisherRecord) -> PublisherAnswer {
    PublisherAnswer {
        id: r.id,
        issuer: r.issuer,
        repository: r.repository,
        workflow: r.workflow,
        environment: r.environment,
        created_at: r.created_at,
    }
}

/// Lists a package's trusted publishers and recent tokens: owners.
pub async fn list_publishers(
    registry: &Registry,
    auth: &Authenticated,
    kind: Kind,
    name: &PackageName,
) -> Result<PublishersAnswer, ServiceError> {
    let package = find_package(registry, kind, name.as_str()).await?;
    require_owner(registry, auth.account_id, &package).await?;
    let publishers = registry.db.trusted_publishers(package.id).await?;
    let tokens = registry
        .db
        .trusted_tokens(package.id, LISTED_TOKENS)
        .await?;
    Ok(PublishersAnswer {
        kind,
        name: package.name,
        publishers: publishers.into_iter().map(answer).collect(),
        tokens: tokens
            .into_iter()
            .map(|t| MintedTokenAnswer {
                trusted_publisher_id: t.trusted_publisher_id,
                token_id: t.jti,
                identity: t
                    .oidc_claims
                    .as_deref()
                    .and_then(|c| serde_json::from_str(c).ok()),
                created_at: t.created_at,
                expires_at: t.expires_at,
                revoked_at: t.revoked_at,
            })
            .collect(),
    })
}

/// Removes a trusted publisher and revokes its live tokens: owners, token
/// scope `owners`.
pub async fn remove_publisher(
    registry: &Registry,
    auth: &Authenticated,
    kind: Kind,
    name: &PackageName,
    id: i64,
    otp: Option<&str>,
) -> Result<(), ServiceError> {
    let package = package_for_token(registry, auth, kind, name).await?;
    require_owner(registry, auth.account_id, &package).await?;
    crate::owners::step_up_for(registry, auth.actor(), &package, otp).await?;
    if !registry.db.remove_trusted_publisher(package.id, id).await? {
        return Err(ServiceError::NotFound(format!(
            "trusted publisher {id} of {kind} {:?}",
            package.name.as_str()
        )));
    }
    audit::record(
        registry,
        auth.account_id,
        "trusted_publisher_removed",
        &format!("{kind}/{} #{id}", package.name),
    )
    .await;
    Ok(())
}

/// The publish rule: with `trusted_publishing_only`, only a trusted token
/// publishes (403 `trusted-publishing-required`).
pub fn check_trusted_only(
    auth: &Authenticated,
    policy: Option<&store::publishing_policy::PublishingPolicy>,
    kind: Kind,
    name: &PackageName,
) -> Result<(), ServiceError> {
    if policy.is_some_and(|p| p.trusted_publishing_only) && auth.trusted.is_none() {
        return Err(ServiceError::TrustedPublishingRequired(format!(
            "{kind} {:?} is published only through trusted publishing",
            name.as_str()
        )));
    }
    Ok(())
}

/// The identity a version published with this token records (JSON);
/// `None` for an ordinary token.
pub fn publisher_identity(auth: &Authenticated) -> Option<String> {
    auth.trusted
        .as_ref()
        .and_then(|t| serde_json::to_string(t).ok())
}

/// Shared by every replica through the registry.
pub type SharedOidcKeys = Arc<crate::oidc::OidcKeys>;
