//! Trusted publishing (docs/trusted-publishing.md): a package's owners
//! trust a CI identity, an OpenID Connect issuer plus repository, workflow
//! file and optionally environment; a CI run proves that identity with an
//! ID token signed by the issuer and gets a 30-minute publish token for
//! exactly the packages that trust it. The trust configuration is the
//! authorization: the token publishes without its account being an owner.
//!
//! Issuers' keys are fetched from `<issuer>/.well-known/openid-configuration`
//! → `jwks_uri`, with a timeout and a size bound, cached per issuer for
//! [`KEYS_TTL`] and refetched on an unknown `kid` at most once per
//! [`REFETCH_INTERVAL`], so a flood of forged kids costs no fetch each.

use std::{
    collections::HashMap,
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

use agentlang_core::{Kind, PackageName};
use base64::Engine;
use jsonwebtoken::{DecodingKey, Validation, errors::ErrorKind, jwk::JwkSet};
use serde::{Deserialize, Serialize};

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
const KEYS_TTL: Duration = Duration::from_secs(3600);
const REFETCH_INTERVAL: Duration = Duration::from_secs(60);
const FETCH_TIMEOUT: Duration = Duration::from_secs(10);
/// Discovery documents and JWKS are a few KiB.
const MAX_FETCH_BYTES: usize = 256 * 1024;
/// Clock skew allowed on `exp`/`nbf`/`iat`.
const LEEWAY_SECS: u64 = 60;

pub use crate::error::OidcRefusal;

fn refuse(kind: OidcRefusal, detail: impl Into<String>) -> ServiceError {
    ServiceError::Oidc(kind, detail.into())
}

/// Checks configured issuers: https URLs, or http on a loopback host (so
/// tests can run an issuer), without a trailing slash or query.
pub fn check_issuers(issuers: &[String]) -> Result<(), String> {
    for issuer in issuers {
        let url = url::Url::parse(issuer).map_err(|e| format!("{issuer:?}: {e}"))?;
        let loopback = match url.host() {
            Some(url::Host::Domain(d)) => d == "localhost",
            Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
            Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
            None => false,
        };
        let scheme_ok = url.scheme() == "https" || (url.scheme() == "http" && loopback);
        if !scheme_ok {
            return Err(format!(
                "{issuer:?}: an issuer must be https (http only on a loopback host)"
            ));
        }
        if issuer.ends_with('/') || url.query().is_some() || url.fragment().is_some() {
            return Err(format!(
                "{issuer:?}: no trailing slash, query or fragment (the exact `iss` of its tokens)"
            ));
        }
    }
    Ok(())
}

/// The identity an ID token proved, as recorded on the token and on each
/// version it publishes (`versions.publisher_identity`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct TrustedIdentity {
    pub issuer: String,
    /// `owner/repo` (GitHub) or `group/project` (GitLab).
    pub repository: String,
    /// The workflow file name (`release.yml`, `.gitlab-ci.yml`).
    pub workflow: String,
    /// The full workflow reference as the token gave it.
    pub workflow_ref: String,
    pub environment: Option<String>,
    #[serde(rename = "ref")]
    pub git_ref: Option<String>,
    pub sha: Option<String>,
    pub run_id: Option<String>,
    pub subject: String,
    pub jti: String,
}

/// The claims read from GitHub Actions' and GitLab CI's ID tokens.
#[derive(Debug, Deserialize)]
struct IdClaims {
    iss: String,
    sub: Option<String>,
    exp: i64,
    jti: Option<String>,
    // GitHub Actions.
    repository: Option<String>,
    workflow_ref: Option<String>,
    // GitLab CI.
    project_path: Option<String>,
    ci_config_ref_uri: Option<String>,
    pipeline_id: Option<String>,
    // Both.
    environment: Option<String>,
    #[serde(rename = "ref")]
    git_ref: Option<String>,
    sha: Option<String>,
    run_id: Option<String>,
}

/// The workflow file of a `workflow_ref` (`owner/repo/.github/workflows/release.yml@refs/heads/main`)
/// or `ci_config_ref_uri` (`gitlab.com/group/project//.gitlab-ci.yml@refs/heads/main`).
fn workflow_file(reference: &str) -> Option<&str> {
    let path = reference.split('@').next()?;
    let file = path.rsplit('/').next()?;
    (!file.is_empty()).then_some(file)
}

impl IdClaims {
    fn identity(self) -> Result<TrustedIdentity, ServiceError> {
        let malformed = |what: &str| refuse(OidcRefusal::Malformed, format!("no {what} claim"));
        let jti = self.jti.ok_or_else(|| malformed("jti"))?;
        let (repository, workflow_ref, run_id) = match (self.repository, self.project_path) {
            (Some(repo), _) => (
                repo,
                self.workflow_ref.ok_or_else(|| malformed("workflow_ref"))?,
                self.run_id,
            ),
            (None, Some(project)) => (
                project,
                self.ci_config_ref_uri
                    .ok_or_else(|| malformed("ci_config_ref_uri"))?,
                self.pipeline_id,
            ),
            (None, None) => return Err(malformed("repository (or project_path)")),
        };
        let workflow = workflow_file(&workflow_ref)
            .ok_or_else(|| {
                refuse(
                    OidcRefusal::Malformed,
                    "the workflow reference names no file",
                )
            })?
            .to_owned();
        Ok(TrustedIdentity {
            issuer: self.iss,
            repository,
            workflow,
            workflow_ref,
            environment: self.environment.filter(|e| !e.is_empty()),
            git_ref: self.git_ref,
            sha: self.sha,
            run_id,
            subject: self.sub.unwrap_or_default(),
            jti,
        })
    }
}

/// One issuer's keys as last fetched.
struct IssuerKeys {
    keys: JwkSet,
    fetched_at: Instant,
}

/// The configured issuers and their cached keys.
pub struct OidcKeys {
    issuers: Vec<String>,
    audience: String,
    http: Option<reqwest::Client>,
    cache: Mutex<HashMap<String, IssuerKeys>>,
    /// Serializes fetches, so concurrent exchanges do not each fetch.
    fetching: tokio::sync::Mutex<()>,
}

impl std::fmt::Debug for OidcKeys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OidcKeys")
            .field("issuers", &self.issuers)
            .field("audience", &self.audience)
            .finish_non_exhaustive()
    }
}

impl OidcKeys {
    pub fn new(issuers: Vec<String>, audience: Option<String>, public_url: &str) -> Self {
        let audience = audience.unwrap_or_else(|| {
            url::Url::parse(public_url)
                .ok()
                .and_then(|u| {
                    u.host_str().map(|h| match u.port() {
                        Some(p) => format!("{h}:{p}"),
                        None => h.to_owned(),
                    })
                })
                .unwrap_or_else(|| public_url.to_owned())
        });
        let http = reqwest::Client::builder()
            .timeout(FETCH_TIMEOUT)
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .ok();
        Self {
            issuers,
            audience,
            http,
            cache: Mutex::new(HashMap::new()),
            fetching: tokio::sync::Mutex::new(()),
        }
    }

    pub fn audience(&self) -> &str {
        &self.audience
    }

    pub fn is_configured(&self, issuer: &str) -> bool {
        self.issuers.iter().any(|i| i == issuer)
    }

    /// The key `kid` of `issuer`, from the cache, fetching when the cache
    /// is stale or lacks it (at most once per [`REFETCH_INTERVAL`]).
    async fn key(&self, issuer: &str, kid: Option<&str>) -> Result<DecodingKey, ServiceError> {
        if let Some(key) = self.cached(issuer, kid, KEYS_TTL) {
            return key;
        }
        let _one_fetch = self.fetching.lock().await;
        // Another exchange may have fetched while this one waited; a fetch
        // within the interval is as fresh as it gets.
        if let Some(key) = self.cached(issuer, kid, REFETCH_INTERVAL) {
            return key;
        }
        let recent = self
            .cache
            .lock()
            .map_err(|_| ServiceError::internal(anyhow::anyhow!("oidc cache poisoned")))?
            .get(issuer)
            .is_some_and(|k| k.fetched_at.elapsed() < REFETCH_INTERVAL);
        if !recent {
            let keys = self.fetch(issuer).await?;
            self.cache
                .lock()
                .map_err(|_| ServiceError::internal(anyhow::anyhow!("oidc cache poisoned")))?
                .insert(
                    issuer.to_owned(),
                    IssuerKeys {
                        keys,
                        fetched_at: Instant::now(),
                    },
                );
        }
        self.cached(issuer, kid, Duration::MAX).unwrap_or_else(|| {
            Err(refuse(
                OidcRefusal::BadSignature,
                format!("the issuer publishes no key {:?}", kid.unwrap_or("")),
            ))
        })
    }

    /// The cached key when the issuer's keys are younger than `fresh` and
    /// hold it; `None` to fetch.
    fn cached(
        &self,
        issuer: &str,
        kid: Option<&str>,
        fresh: Duration,
    ) -> Option<Result<DecodingKey, ServiceError>> {
        let cache = self.cache.lock().ok()?;
        let entry = cache.get(issuer)?;
        if entry.fetched_at.elapsed() >= fresh {
            return None;
        }
        let jwk = match kid {
            Some(kid) => entry.keys.find(kid)?,
            None if entry.keys.keys.len() == 1 => &entry.keys.keys[0],
            None => return None,
        };
        Some(DecodingKey::from_jwk(jwk).map_err(|e| {
            refuse(
                OidcRefusal::BadSignature,
                format!("the issuer's key cannot be used: {e}"),
            )
        }))
    }

    async fn fetch(&self, issuer: &str) -> Result<JwkSet, ServiceError> {
        #[derive(Deserialize)]
        struct Discovery {
            issuer: String,
            jwks_uri: String,
        }
        let discovery: Discovery = self
            .get_json(&format!("{issuer}/.well-known/openid-configuration"))
            .await?;
        if discovery.issuer != issuer {
            return Err(ServiceError::Unavailable(format!(
                "the issuer's discovery document names another issuer ({:?})",
                discovery.issuer
            )));
        }
        self.get_json(&discovery.jwks_uri).await
    }

    async fn get_json<T: serde::de::DeserializeOwned>(&self, url: &str) -> Result<T, ServiceError> {
        let unavailable =
            |e: &dyn std::fmt::Display| ServiceError::Unavailable(format!("{url}: {e}"));
        let http = self
            .http
            .as_ref()
            .ok_or_else(|| unavailable(&"no HTTP client"))?;
        let mut response = http.get(url).send().await.map_err(|e| unavailable(&e))?;
        if !response.status().is_success() {
            return Err(unavailable(&response.status()));
        }
        let mut body = Vec::new();
        while let Some(chunk) = response.chunk().await.map_err(|e| unavailable(&e))? {
            if body.len() + chunk.len() > MAX_FETCH_BYTES {
                return Err(unavailable(&"the document is too large"));
            }
            body.extend_from_slice(&chunk);
        }
        serde_json::from_slice(&body).map_err(|e| unavailable(&e))
    }

    /// Verifies an ID token: a configured issuer, a key it publishes,
    /// RS256 or ES256, this registry's audience, within its lifetime.
    async fn verify(&self, jwt: &str) -> Result<(TrustedIdentity, i64), ServiceError> {
        // Only asymmetric algorithms: a symmetric one would let anyone who
        // read the JWKS sign, and `none` is no signature at all. Read raw,
        // so an algorithm the library does not know (`none`) is refused as
        // a signature, not as a malformed token.
        let alg = unverified_segment::<AlgOnly>(jwt, 0)?.alg;
        if alg != "RS256" && alg != "ES256" {
            return Err(refuse(
                OidcRefusal::BadSignature,
                format!("algorithm {alg:?} is not accepted (RS256, ES256)"),
            ));
        }
        let header = jsonwebtoken::decode_header(jwt)
            .map_err(|e| refuse(OidcRefusal::Malformed, format!("not a JWT: {e}")))?;
        let issuer = unverified_segment::<IssOnly>(jwt, 1)?.iss;
        if !self.is_configured(&issuer) {
            return Err(refuse(
                OidcRefusal::UnknownIssuer,
                format!("issuer {issuer:?} is not trusted by this registry"),
            ));
        }
        let key = self.key(&issuer, header.kid.as_deref()).await?;
        let mut validation = Validation::new(header.alg);
        validation.set_audience(&[&self.audience]);
        validation.set_issuer(&[&issuer]);
        validation.set_required_spec_claims(&["exp", "iss", "aud"]);
        validation.leeway = LEEWAY_SECS;
        validation.validate_nbf = true;
        let data = jsonwebtoken::decode::<IdClaims>(jwt, &key, &validation).map_err(|e| match e
            .kind()
        {
            ErrorKind::ExpiredSignature | ErrorKind::ImmatureSignature => refuse(
                OidcRefusal::Expired,
                "the ID token has expired or is not yet valid",
            ),
            ErrorKind::InvalidAudience => refuse(
                OidcRefusal::WrongAudience,
                format!("the ID token's aud must be {:?}", self.audience),
            ),
            ErrorKind::InvalidSignature | ErrorKind::InvalidAlgorithm => {
                refuse(OidcRefusal::BadSignature, "the signature does not verify")
            }
            _ => refuse(OidcRefusal::Malformed, format!("the ID token: {e}")),
        })?;
        let exp = data.claims.exp;
        Ok((data.claims.identity()?, exp))
    }
}

#[derive(Deserialize)]
struct AlgOnly {
    alg: String,
}

#[derive(Deserialize)]
struct IssOnly {
    iss: String,
}

/// A segment (0: header, 1: claims) of a token not yet verified: only to
/// pick the algorithm and the keys that then verify it.
fn unverified_segment<T: serde::de::DeserializeOwned>(
    jwt: &str,
    index: usize,
) -> Result<T, ServiceError> {
    let malformed = |what: &str| refuse(OidcRefusal::Malformed, what.to_owned());
    let segment = jwt
        .split('.')
        .nth(index)
        .ok_or_else(|| malformed("not a JWT"))?;
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(segment)
        .map_err(|_| malformed("not a JWT: a segment is not base64url"))?;
    serde_json::from_slice(&bytes).map_err(|_| {
        malformed(if index == 0 {
            "not a JWT: no alg in the header"
        } else {
            "no iss claim"
        })
    })
}

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
pub type SharedOidcKeys = Arc<OidcKeys>;
