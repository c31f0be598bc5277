//! Statuses of packages and versions (PEP 792; docs/statuses.md): owners
//! deprecate or archive, admins quarantine. The rules are
//! [`app::status_changes`]'; records, the index and pages show the result.

use actix_web::{HttpRequest, HttpResponse, put, web};

use crate::{
    auth::{Caller, Otp},
    error::ApiError,
    routes::{owners::PackagePath, packages::VersionPath},
    state::AppState,
};
use app::status_changes::{self as statuses, StatusAnswer, StatusRequest};

/// A status request is a status, a reason of at most 500 characters and a
/// package name: 4 KiB is plenty.
const MAX_STATUS_BODY_BYTES: usize = 4 * 1024;

/// The body as JSON, within its bound.
async fn status_body(req: &HttpRequest, payload: web::Payload) -> Result<StatusRequest, ApiError> {
    super::read_json(req, payload, MAX_STATUS_BODY_BYTES).await
}

/// Sets a package's status: `active`, `deprecated` (a reason, and perhaps
/// a `successor`: a package of the same kind to use instead), `archived`
/// (no new versions) or, for admins, `quarantined` (no downloads, no
/// resolution, no new versions). Owners with token scope `yank`; admins
/// with scope `admin`, who alone set or lift a quarantine. Each change is
/// one transparency-log entry (`op: status`); asking for the status in
/// force writes none and answers the entry that recorded it.
#[utoipa::path(
    tag = "packages",
    params(PackagePath, ("AgentLang-OTP" = Option<String>, Header, description = "Second factor: a TOTP code or a recovery code, required when the account has enabled one")),
    request_body = StatusRequest,
    security(("bearer" = ["yank"]), ("bearer" = ["admin"])),
    responses(
        (status = 200, description = "The status in force, with the log entry that recorded it", body = StatusAnswer),
        (status = 400, description = "The body is not the JSON object described (`malformed-request`)", body = crate::error::Problem, content_type = "application/problem+json"),
        (status = 401, description = "Missing or invalid token; or the account has a second factor and the `AgentLang-OTP` code is missing (`two-factor-code-required`) or wrong, expired or used (`two-factor-code-invalid`)", body = crate::error::Problem, content_type = "application/problem+json"),
        (status = 403, description = "The package requires a second factor and the account has none (`two-factor-enrolment-required`); not an owner (`not-owner`), the token lacks the scope (`missing-scope`) or is not for this package (`token-not-for-package`), or only an admin may set or lift a quarantine (`admin-required`)", body = crate::error::Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such package", body = crate::error::Problem, content_type = "application/problem+json"),
        (status = 413, description = "The body is over 4 KiB", body = crate::error::Problem, content_type = "application/problem+json"),
        (status = 422, description = "An unknown status, a reason over 500 characters, or a successor that is not another published package of the same kind (`validation-failed`, naming each field)", body = crate::error::Problem, content_type = "application/problem+json"),
        (status = 429, description = "Too many status changes of this package or by this account", body = crate::error::Problem, content_type = "application/problem+json"),
    )
)]
#[put("/api/v1/{kind}/{name}/status")]
pub async fn put_package_status(
    req: HttpRequest,
    state: web::Data<AppState>,
    auth: Caller,
    otp: Otp,
    path: web::Path<PackagePath>,
    payload: web::Payload,
) -> Result<HttpResponse, ApiError> {
    let (kind, name) = path.parse()?;
    let body = status_body(&req, payload).await?;
    let answer =
        statuses::set_status(&state, &auth, kind, &name, None, &body, otp.as_deref()).await?;
    Ok(HttpResponse::Ok().json(answer))
}

/// Sets one version's status: `active`, `deprecated` (a reason, perhaps a
/// `successor` package) or, for admins, `quarantined` (`archived` is a
/// package's). Authorized, logged and bounded as a package's.
#[utoipa::path(
    tag = "packages",
    params(VersionPath, ("AgentLang-OTP" = Option<String>, Header, description = "Second factor: a TOTP code or a recovery code, required when the account has enabled one")),
    request_body = StatusRequest,
    security(("bearer" = ["yank"]), ("bearer" = ["admin"])),
    responses(
        (status = 200, description = "The status in force, with the log entry that recorded it", body = StatusAnswer),
        (status = 400, description = "The body is not the JSON object described (`malformed-request`)", body = crate::error::Problem, content_type = "application/problem+json"),
        (status = 401, description = "Missing or invalid token; or the account has a second factor and the `AgentLang-OTP` code is missing (`two-factor-code-required`) or wrong, expired or used (`two-factor-code-invalid`)", body = crate::error::Problem, content_type = "application/problem+json"),
        (status = 403, description = "The package requires a second factor and the account has none (`two-factor-enrolment-required`); not an owner (`not-owner`), the token lacks the scope (`missing-scope`) or is not for this package (`token-not-for-package`), or only an admin may set or lift a quarantine (`admin-required`)", body = crate::error::Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such package or version", body = crate::error::Problem, content_type = "application/problem+json"),
        (status = 413, description = "The body is over 4 KiB", body = crate::error::Problem, content_type = "application/problem+json"),
        (status = 422, description = "An unknown status (or `archived`), a reason over 500 characters, or a successor that is not another published package of the same kind (`validation-failed`, naming each field)", body = crate::error::Problem, content_type = "application/problem+json"),
        (status = 429, description = "Too many status changes of this version or by this account", body = crate::error::Problem, content_type = "application/problem+json"),
    )
)]
#[put("/api/v1/{kind}/{name}/{version}/status")]
pub async fn put_version_status(
    req: HttpRequest,
    state: web::Data<AppState>,
    auth: Caller,
    otp: Otp,
    path: web::Path<VersionPath>,
    payload: web::Payload,
) -> Result<HttpResponse, ApiError> {
    let (kind, name, version) = path.parse()?;
    let body = status_body(&req, payload).await?;
    let answer = statuses::set_status(
        &state,
        &auth,
        kind,
        &name,
        Some(&version),
        &body,
        otp.as_deref(),
    )
    .await?;
    Ok(HttpResponse::Ok().json(answer))
}
