//! Trusted publishing (docs/trusted-publishing.md): owners manage the CI
//! identities their package trusts; a CI run exchanges its OpenID Connect
//! ID token for a short-lived publish token. The rules are
//! [`app::trusted_publishing`]'.

use actix_web::{HttpRequest, HttpResponse, delete, get, post, web};
use serde::Deserialize;

use crate::{
    auth::{Caller, Otp},
    error::ApiError,
    rate_limit::Client,
    routes::owners::PackagePath,
    state::AppState,
};
use app::{
    ServiceError,
    trusted_publishing::{self, MintedToken, NewPublisher, PublisherAnswer, PublishersAnswer},
};

/// Four bounded strings: 4 KiB is plenty.
const MAX_PUBLISHER_BODY_BYTES: usize = 4 * 1024;
/// An ID token is one or two KiB.
const MAX_EXCHANGE_BODY_BYTES: usize = 16 * 1024;

/// A package and one of its trusted publishers.
#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Path)]
pub struct PublisherPath {
    /// `agents`, `tools`, `protocols` or `skills`.
    #[param(value_type = crate::routes::owners::KindSegment)]
    pub kind: String,
    /// The package name (any spelling).
    pub name: String,
    /// The trusted publisher's id.
    // Read as text: an id that is no number, or too big for one, names no
    // trusted publisher (404), rather than failing as a malformed path.
    #[param(value_type = i64)]
    pub id: String,
}

/// What `POST /api/v1/trusted-publishing/tokens` takes.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ExchangeRequest {
    /// The CI's OpenID Connect ID token, with this registry's audience.
    pub jwt: String,
}

/// Trusts a CI identity to publish the package: owners, token scope
/// `owners`. The issuer must be one the registry is configured with.
#[utoipa::path(
    tag = "trusted-publishing",
    params(PackagePath),
    request_body = NewPublisher,
    security(("bearer" = ["owners"])),
    responses(
        (status = 201, description = "The trusted publisher added", body = PublisherAnswer),
        (status = 400, description = "The body is not the JSON object described (`malformed-request`)", body = crate::error::Problem, content_type = "application/problem+json"),
        (status = 401, description = "Missing or invalid token; or the account has a second factor and the `AgentLang-OTP` code is missing (`two-factor-code-required`) or wrong, expired or used (`two-factor-code-invalid`)", body = crate::error::Problem, content_type = "application/problem+json"),
        (status = 403, description = "The package requires a second factor and the account has none (`two-factor-enrolment-required`); not an owner (`not-owner`), or the token lacks the scope (`missing-scope`) or is not for this package (`token-not-for-package`)", body = crate::error::Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such package", body = crate::error::Problem, content_type = "application/problem+json"),
        (status = 409, description = "The package has 16 trusted publishers already", body = crate::error::Problem, content_type = "application/problem+json"),
        (status = 413, description = "The body is over 4 KiB", body = crate::error::Problem, content_type = "application/problem+json"),
        (status = 422, description = "An unconfigured issuer or an invalid field (`validation-failed`)", body = crate::error::Problem, content_type = "application/problem+json"),
        (status = 429, description = "Too many requests", body = crate::error::Problem, content_type = "application/problem+json"),
    )
)]
#[post("/api/v1/{kind}/{name}/trusted-publishers")]
pub async fn add_trusted_publisher(
    req: HttpRequest,
    state: web::Data<AppState>,
    auth: Caller,
    otp: Otp,
    path: web::Path<PackagePath>,
    payload: web::Payload,
) -> Result<HttpResponse, ApiError> {
    let (kind, name) = path.parse()?;
    let new: NewPublisher = super::read_json(&req, payload, MAX_PUBLISHER_BODY_BYTES).await?;
    let answer =
        trusted_publishing::add_publisher(&state, &auth, kind, &name, &new, otp.as_deref()).await?;
    Ok(HttpResponse::Created().json(answer))
}

/// The package's trusted publishers and the tokens minted through them
/// (recent first, at most 50): owners.
#[utoipa::path(
    tag = "trusted-publishing",
    params(PackagePath),
    security(("bearer" = [])),
    responses(
        (status = 200, description = "The trusted publishers and recent tokens", body = PublishersAnswer),
        (status = 401, description = "Missing or invalid token", body = crate::error::Problem, content_type = "application/problem+json"),
        (status = 403, description = "Not an owner (`not-owner`)", body = crate::error::Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such package", body = crate::error::Problem, content_type = "application/problem+json"),
        (status = 429, description = "Too many requests", body = crate::error::Problem, content_type = "application/problem+json"),
    )
)]
#[get("/api/v1/{kind}/{name}/trusted-publishers")]
pub async fn list_trusted_publishers(
    state: web::Data<AppState>,
    auth: Caller,
    path: web::Path<PackagePath>,
) -> Result<HttpResponse, ApiError> {
    let (kind, name) = path.parse()?;
    let answer = trusted_publishing::list_publishers(&state, &auth, kind, &name).await?;
    Ok(HttpResponse::Ok().json(answer))
}

/// Removes a trusted publisher and revokes the live tokens minted through
/// it: owners, token scope `owners`.
#[utoipa::path(
    tag = "trusted-publishing",
    params(PublisherPath),
    security(("bearer" = ["owners"])),
    responses(
        (status = 204, description = "Removed; its tokens are revoked"),
        (status = 401, description = "Missing or invalid token; or the account has a second factor and the `AgentLang-OTP` code is missing (`two-factor-code-required`) or wrong, expired or used (`two-factor-code-invalid`)", body = crate::error::Problem, content_type = "application/problem+json"),
        (status = 403, description = "The package requires a second factor and the account has none (`two-factor-enrolment-required`); not an owner (`not-owner`), or the token lacks the scope (`missing-scope`) or is not for this package (`token-not-for-package`)", body = crate::error::Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such package, or no such trusted publisher of it", body = crate::error::Problem, content_type = "application/problem+json"),
        (status = 429, description = "Too many requests", body = crate::error::Problem, content_type = "application/problem+json"),
    )
)]
#[delete("/api/v1/{kind}/{name}/trusted-publishers/{id}")]
pub async fn remove_trusted_publisher(
    state: web::Data<AppState>,
    auth: Caller,
    otp: Otp,
    path: web::Path<PublisherPath>,
) -> Result<HttpResponse, ApiError> {
    let package = PackagePath {
        kind: path.kind.clone(),
        name: path.name.clone(),
    };
    let (kind, name) = package.parse()?;
    let id = path.id.parse::<i64>().map_err(|_| {
        ServiceError::NotFound(format!("trusted publisher {:?} of {kind} {name}", path.id))
    })?;
    trusted_publishing::remove_publisher(&state, &auth, kind, &name, id, otp.as_deref()).await?;
    Ok(HttpResponse::NoContent().finish())
}

/// Exchanges a CI's OpenID Connect ID token for a publish token valid 30
/// minutes for exactly the packages that trust its identity. No bearer
/// token: the ID token is the credential. Rate-limited per address.
#[utoipa::path(
    tag = "trusted-publishing",
    request_body = ExchangeRequest,
    responses(
        (status = 201, description = "The publish token", body = MintedToken),
        (status = 400, description = "The body or the ID token is malformed (`malformed-request`, `oidc-malformed`)", body = crate::error::Problem, content_type = "application/problem+json"),
        (status = 401, description = "An untrusted issuer (`oidc-unknown-issuer`), a signature that does not verify (`oidc-bad-signature`), another audience (`oidc-wrong-audience`), expired (`oidc-expired`) or already exchanged (`oidc-replayed`)", body = crate::error::Problem, content_type = "application/problem+json"),
        (status = 403, description = "No package trusts this identity (`oidc-no-trusted-publisher`)", body = crate::error::Problem, content_type = "application/problem+json"),
        (status = 413, description = "The body is over 16 KiB", body = crate::error::Problem, content_type = "application/problem+json"),
        (status = 429, description = "Too many requests", body = crate::error::Problem, content_type = "application/problem+json"),
        (status = 503, description = "The issuer's keys could not be fetched", body = crate::error::Problem, content_type = "application/problem+json"),
    )
)]
#[post("/api/v1/trusted-publishing/tokens")]
pub async fn exchange_token(
    req: HttpRequest,
    state: web::Data<AppState>,
    Client(client): Client,
    payload: web::Payload,
) -> Result<HttpResponse, ApiError> {
    let body: ExchangeRequest = super::read_json(&req, payload, MAX_EXCHANGE_BODY_BYTES).await?;
    let minted = trusted_publishing::exchange(&state, &client, &body.jwt).await?;
    Ok(HttpResponse::Created().json(minted))
}
