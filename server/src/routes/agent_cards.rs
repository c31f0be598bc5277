//! Signed A2A Agent Cards of agents that declare an A2A endpoint, and the
//! key set their signatures verify with. Cacheable: a strong `ETag` over
//! the bytes, `If-None-Match` answers 304.

use actix_web::{HttpRequest, HttpResponse, get, http::header, web};
use agentlang_core::{
    PackageName, Version,
    a2a::{AgentCard, Jwks},
};
use app::{ServiceError, a2a, cache::Rendered};
use serde::Deserialize;
use utoipa::IntoParams;

use crate::{error::ApiError, state::AppState};

/// A version's card changes only if the registry's key or URL does (a
/// yank changes nothing it says): an hour.
const VERSION_CACHE: &str = "public, max-age=3600";
/// The newest version moves with a publish or a yank, and a key set
/// with a key change: five minutes.
const LATEST_CACHE: &str = "public, max-age=300";

/// `/agents/{name}/...` as it appears in a URL.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Path)]
pub struct AgentPath {
    /// The agent's name (any spelling: case and `-`/`_` are folded).
    pub name: String,
}

/// `/agents/{name}/{version}/...` as it appears in a URL.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Path)]
pub struct AgentVersionPath {
    /// The agent's name (any spelling: case and `-`/`_` are folded).
    pub name: String,
    /// A SemVer version.
    pub version: String,
}

/// What cannot name an agent or a version is a 404, like one that does
/// not exist.
fn agent_name(raw: &str) -> Result<PackageName, ApiError> {
    PackageName::new(raw).map_err(|_| ServiceError::NotFound(format!("agent {raw:?}")).into())
}

/// The card as sent, or 304 when the client's copy is current.
fn card_response(req: &HttpRequest, card: Rendered, cache_control: &str) -> HttpResponse {
    let current = super::if_none_match(req, &card.etag);
    let mut response = if current {
        HttpResponse::NotModified()
    } else {
        HttpResponse::Ok()
    };
    response
        .insert_header((header::ETAG, card.etag))
        .insert_header((header::CACHE_CONTROL, cache_control));
    if current {
        return response.finish();
    }
    response.content_type("application/json").body(card.body)
}

/// The signed A2A Agent Card of one agent version.
///
/// An A2A v1.0 `AgentCard` (ProtoJSON, RFC 8785 bytes) of a version whose
/// agent.yaml declares `protocols: [{name: a2a, endpoint: {url, binding}}]`
/// and whose agent.lock pins its a2a version: its interface, skills (the
/// agent's skills and tools), version, provider (the publisher), the
/// publication extension (container SHA-256, transparency-log index,
/// signing key) and one JWS signature (EdDSA, detached RFC 8785 payload)
/// by the registry's key, whose `kid` and `jku` name the key in
/// `GET /.well-known/jwks.json`. Yanked versions keep their card.
#[utoipa::path(
    tag = "a2a",
    params(AgentVersionPath),
    responses(
        (status = 200, body = AgentCard, description = "The signed card",
         headers(
             ("ETag" = String, description = "Strong: the quoted SHA-256 of the body"),
             ("Cache-Control" = String, description = "`public, max-age=3600`"),
         )),
        (status = 304, description = "The client's copy (`If-None-Match`) is current"),
        (status = 404, description = "No such agent or version (`not-found`), or the version declares no A2A interface (`no-a2a-interface`: the detail says why)", body = crate::error::Problem, content_type = "application/problem+json"),
    )
)]
#[get("/agents/{name}/{version:[0-9][^/]*}/agent-card.json")]
pub async fn get_agent_card(
    req: HttpRequest,
    state: web::Data<AppState>,
    path: web::Path<AgentVersionPath>,
) -> Result<HttpResponse, ApiError> {
    let name = agent_name(&path.name)?;
    let version = Version::parse(&path.version)
        .map_err(|_| ServiceError::NotFound(format!("agent {name} {:?}", path.version)))?;
    let card = a2a::version_card(&state, &name, &version).await?;
    Ok(card_response(&req, card, VERSION_CACHE))
}

/// The signed A2A Agent Card of an agent's newest version.
///
/// The card of the newest version that is not yanked (a release before a
/// prerelease, as the agent's page and `agentlang install` choose), as
/// `GET /agents/{name}/{version}/agent-card.json` serves it.
#[utoipa::path(
    tag = "a2a",
    params(AgentPath),
    responses(
        (status = 200, body = AgentCard, description = "The signed card of the newest version not yanked",
         headers(
             ("ETag" = String, description = "Strong: the quoted SHA-256 of the body"),
             ("Cache-Control" = String, description = "`public, max-age=300`"),
         )),
        (status = 304, description = "The client's copy (`If-None-Match`) is current"),
        (status = 404, description = "No such agent, or every version yanked (`not-found`), or the newest version declares no A2A interface (`no-a2a-interface`: the detail says why)", body = crate::error::Problem, content_type = "application/problem+json"),
    )
)]
#[get("/agents/{name}/.well-known/agent-card.json")]
pub async fn get_latest_agent_card(
    req: HttpRequest,
    state: web::Data<AppState>,
    path: web::Path<AgentPath>,
) -> Result<HttpResponse, ApiError> {
    let name = agent_name(&path.name)?;
    let card = a2a::latest_card(&state, &name).await?;
    Ok(card_response(&req, card, LATEST_CACHE))
}

/// The keys the registry signs Agent Cards with.
///
/// A JSON Web Key Set (RFC 7517) of the registry's Ed25519 key (RFC 8037:
/// `kty` `OKP`, `crv` `Ed25519`), the `jku` every card's signature names;
/// its `kid` is the key id (hex SHA-256 of the raw public key), the same
/// key `GET /.well-known/moltspeak.json` publishes.
#[utoipa::path(
    tag = "a2a",
    responses(
        (status = 200, body = Jwks, description = "The key set",
         headers(
             ("ETag" = String, description = "Strong: the quoted SHA-256 of the body"),
             ("Cache-Control" = String, description = "`public, max-age=300`"),
         )),
        (status = 304, description = "The client's copy (`If-None-Match`) is current"),
    )
)]
#[get("/.well-known/jwks.json")]
pub async fn get_jwks(
    req: HttpRequest,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let jwks = Rendered::json(&a2a::jwks(&state))?;
    Ok(card_response(&req, jwks, LATEST_CACHE))
}
