//! Staged releases (docs/staged-releases.md): owners list, inspect,
//! download, approve and reject the versions staged with
//! `POST /api/v1/publish?stage=true`. The rules are [`app::staging`]'.

use actix_web::{HttpRequest, HttpResponse, get, http::header, post, web};
use futures_util::TryStreamExt;
use serde::Deserialize;

use crate::{
    auth::{Caller, Otp},
    error::ApiError,
    state::AppState,
};
use app::packages::BlobBody;
use app::{
    ServiceError,
    packages::VersionView,
    staging::{self, RejectBody, StagedPage, StagedQuery, StagedView},
};

/// A reason of 500 characters fits in far less.
const MAX_REJECT_BODY_BYTES: usize = 4 * 1024;

/// One staged version.
#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Path)]
pub struct StagedPath {
    /// The staged version's id.
    pub id: String,
}

/// The staged versions of the caller's packages (and the first versions of
/// new names the caller staged), oldest first, `pending` unless `state`
/// says otherwise. Nobody else sees them.
#[utoipa::path(
    tag = "staging",
    params(StagedQuery),
    security(("bearer" = [])),
    responses(
        (status = 200, description = "A page of staged versions", body = StagedPage),
        (status = 400, description = "An unknown `state` or a `limit` out of 1 to 100 (`malformed-request`)", body = crate::error::Problem, content_type = "application/problem+json"),
        (status = 401, description = "Missing or invalid token", body = crate::error::Problem, content_type = "application/problem+json"),
    )
)]
#[get("/api/v1/staged")]
pub async fn list_staged(
    state: web::Data<AppState>,
    auth: Caller,
    query: web::Query<StagedQuery>,
) -> Result<HttpResponse, ApiError> {
    let page = staging::list(&state, &auth, &query).await?;
    Ok(HttpResponse::Ok()
        .insert_header((header::CACHE_CONTROL, "private, no-store"))
        .json(page))
}

/// One staged version, for its package's owners (404 for anyone else).
#[utoipa::path(
    tag = "staging",
    params(StagedPath),
    security(("bearer" = [])),
    responses(
        (status = 200, description = "The staged version", body = StagedView),
        (status = 401, description = "Missing or invalid token", body = crate::error::Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such staged version, or not the caller's to see", body = crate::error::Problem, content_type = "application/problem+json"),
    )
)]
#[get("/api/v1/staged/{id}")]
pub async fn get_staged(
    state: web::Data<AppState>,
    auth: Caller,
    path: web::Path<StagedPath>,
) -> Result<HttpResponse, ApiError> {
    let view = staging::get(&state, &auth, &path.id).await?;
    Ok(HttpResponse::Ok()
        .insert_header((header::CACHE_CONTROL, "private, no-store"))
        .json(view))
}

/// The staged container, for its package's owners to inspect before they
/// decide (a rejected one's is gone: 404).
#[utoipa::path(
    tag = "staging",
    params(StagedPath),
    security(("bearer" = [])),
    responses(
        (status = 200, description = "The container (gzip tar)", content_type = "application/gzip", body = super::packages::ContainerBytes,
         headers(
            ("ETag" = String, description = "`\"<sha256 hex>\"`"),
            ("Content-Disposition" = String, description = "`attachment; filename=\"name@version.agent\"`"),
         )),
        (status = 401, description = "Missing or invalid token", body = crate::error::Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such staged version, not the caller's to see, or rejected", body = crate::error::Problem, content_type = "application/problem+json"),
    )
)]
#[get("/api/v1/staged/{id}/download")]
pub async fn download_staged(
    state: web::Data<AppState>,
    auth: Caller,
    path: web::Path<StagedPath>,
) -> Result<HttpResponse, ApiError> {
    let (download, body) = staging::download(&state, &auth, &path.id).await?;
    let mut response = HttpResponse::Ok();
    response
        .insert_header((header::ETAG, format!("\"{}\"", download.digest.hex())))
        // Never in a shared cache: only owners may fetch it.
        .insert_header((header::CACHE_CONTROL, "private, no-store"))
        .insert_header((header::X_CONTENT_TYPE_OPTIONS, "nosniff"))
        .insert_header((header::CONTENT_DISPOSITION, download.disposition))
        .content_type("application/gzip");
    Ok(match body {
        BlobBody::Bytes(bytes) => response.body(bytes),
        BlobBody::Stream(stream) => response
            .no_chunking(download.size)
            .streaming(stream.map_err(|e| {
                tracing::error!(error = %e, "a staged download stream failed");
                std::io::Error::other(e)
            })),
    })
}

/// Approves a pending staged version: owners (for a first version, the
/// account that staged it), token scope `publish`; never a
/// trusted-publishing token. The version is checked again as a publish
/// would be now and published: its `publish` log entry names the stage
/// entry and the approver. Afterwards it is listed, searched, resolved and
/// installed like any version.
#[utoipa::path(
    tag = "staging",
    params(StagedPath),
    security(("bearer" = ["publish"])),
    responses(
        (status = 201, description = "Published", body = VersionView,
         headers(("Location" = String, description = "The version's record"))),
        (status = 401, description = "Missing or invalid token; or the account has a second factor and the `AgentLang-OTP` code is missing (`two-factor-code-required`) or wrong, expired or used (`two-factor-code-invalid`)", body = crate::error::Problem, content_type = "application/problem+json"),
        (status = 403, description = "The package requires a second factor and the account has none (`two-factor-enrolment-required`); the token lacks the scope or the package, or is a trusted-publishing token, or the stager is no longer an owner (`not-owner`)", body = crate::error::Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such staged version, or not the caller's", body = crate::error::Problem, content_type = "application/problem+json"),
        (status = 409, description = "Decided already (`staged-decided`), the version exists (`version-exists`), or the name is taken (`name-taken`), or the package is archived (`package-archived`)", body = crate::error::Problem, content_type = "application/problem+json"),
        (status = 410, description = "The package is quarantined (`quarantined`)", body = crate::error::Problem, content_type = "application/problem+json"),
        (status = 422, description = "The version no longer passes a publish's checks: `unknown-key` or `key-revoked` (the signer's key), `signature-invalid`, `validation-failed` or a `lock-*` problem against the registry as it is now", body = crate::error::Problem, content_type = "application/problem+json"),
    )
)]
#[post("/api/v1/staged/{id}/approve")]
pub async fn approve_staged(
    state: web::Data<AppState>,
    auth: Caller,
    otp: Otp,
    path: web::Path<StagedPath>,
) -> Result<HttpResponse, ApiError> {
    let view = staging::approve(&state, &auth, &path.id, otp.as_deref()).await?;
    let location = format!(
        "/api/v1/{}/{}/{}",
        view.kind.plural(),
        view.name,
        view.version
    );
    Ok(HttpResponse::Created()
        .insert_header((header::LOCATION, location))
        .json(view))
}

/// Rejects a pending staged version: owners (for a first version, the
/// account that staged it), token scope `publish`; never a
/// trusted-publishing token. Logged as a `reject` entry naming the stage
/// entry; the container is deleted; the number stays taken.
#[utoipa::path(
    tag = "staging",
    params(StagedPath),
    request_body(content = RejectBody, description = "Optional: `{\"reason\": \"...\"}`"),
    security(("bearer" = ["publish"])),
    responses(
        (status = 200, description = "Rejected", body = StagedView),
        (status = 400, description = "The body is not the JSON object described (`malformed-request`)", body = crate::error::Problem, content_type = "application/problem+json"),
        (status = 401, description = "Missing or invalid token; or the account has a second factor and the `AgentLang-OTP` code is missing (`two-factor-code-required`) or wrong, expired or used (`two-factor-code-invalid`)", body = crate::error::Problem, content_type = "application/problem+json"),
        (status = 403, description = "The package requires a second factor and the account has none (`two-factor-enrolment-required`); the token lacks the scope or the package, or is a trusted-publishing token", body = crate::error::Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such staged version, or not the caller's", body = crate::error::Problem, content_type = "application/problem+json"),
        (status = 409, description = "Decided already (`staged-decided`)", body = crate::error::Problem, content_type = "application/problem+json"),
        (status = 413, description = "The body is over 4 KiB", body = crate::error::Problem, content_type = "application/problem+json"),
        (status = 422, description = "The reason is over 500 characters (`validation-failed`)", body = crate::error::Problem, content_type = "application/problem+json"),
    )
)]
#[post("/api/v1/staged/{id}/reject")]
pub async fn reject_staged(
    req: HttpRequest,
    state: web::Data<AppState>,
    auth: Caller,
    otp: Otp,
    path: web::Path<StagedPath>,
    payload: web::Payload,
) -> Result<HttpResponse, ApiError> {
    let raw = super::read_body(&req, payload, MAX_REJECT_BODY_BYTES).await?;
    let body: RejectBody = if raw.iter().all(u8::is_ascii_whitespace) {
        RejectBody::default()
    } else {
        serde_json::from_slice(&raw).map_err(|e| ServiceError::Malformed(e.to_string()))?
    };
    let view = staging::reject(
        &state,
        &auth,
        &path.id,
        body.reason.as_deref(),
        otp.as_deref(),
    )
    .await?;
    Ok(HttpResponse::Ok().json(view))
}
