//! OpenID Connect for trusted publishing (docs/trusted-publishing.md):
//! the issuers' keys (discovery, then `jwks_uri`, fetched with a timeout
//! and a size bound, cached per issuer, refetched on an unknown `kid` at
//! most once a minute) and the verification of an ID token into the
//! identity it proves. No rule of who may publish what: that is
//! [`crate::trusted_publishing`]'s, which builds on this.

use std::{
    collections::HashMap,
    sync::Mutex,
    time::{Duration, Instant},
};

use base64::Engine;
use jsonwebtoken::{DecodingKey, Validation, errors::ErrorKind, jwk::JwkSet};
use serde::{Deserialize, Serialize};

use crate::ServiceError;

const KEYS_TTL: Duration = Duration::from_secs(3600);
const REFETCH_INTERVAL: Duration = Duration::from_secs(60);
const FETCH_TIMEOUT: Duration = Duration::from_secs(10);
/// Discovery documents and JWKS are a few KiB.
const MAX_FETCH_BYTES: usize = 256 * 1024;
/// Clock skew allowed on `exp`/`nbf`/`iat`.
pub(crate) const LEEWAY_SECS: u64 = 60;

pub use crate::error::OidcRefusal;

pub(crate) fn refuse(kind: OidcRefusal, detail: impl Into<String>) -> ServiceError {
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
    pub(crate) async fn verify(&self, jwt: &str) -> Result<(TrustedIdentity, i64), ServiceError> {
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
