//! A package's publishing policy (docs/publishing-policy.md): read by
//! anyone, changed by its owners. The rules are [`app::publishing_policy`]'.

use actix_web::{HttpRequest, HttpResponse, get, patch, web};

use crate::{
    auth::{Caller, Otp},
    error::ApiError,
    routes::owners::PackagePath,
    state::AppState,
};
use app::publishing_policy::{self, PolicyAnswer, PolicyChange};

/// Three optional booleans: 1 KiB is plenty.
const MAX_POLICY_BODY_BYTES: usize = 1024;

/// A package's publishing policy: whether only trusted publishing may
/// publish, whether its owners need a second factor, and whether every new
/// version is staged first.
#[utoipa::path(
    tag = "packages",
    params(PackagePath),
    responses(
        (status = 200, description = "The package's policy", body = PolicyAnswer),
        (status = 404, description = "No such package", body = crate::error::Problem, content_type = "application/problem+json"),
        (status = 429, description = "Too many requests", body = crate::error::Problem, content_type = "application/problem+json"),
    )
)]
#[get("/api/v1/{kind}/{name}/publishing")]
pub async fn get_publishing_policy(
    state: web::Data<AppState>,
    path: web::Path<PackagePath>,
) -> Result<HttpResponse, ApiError> {
    let (kind, name) = path.parse()?;
    let answer = publishing_policy::get_policy(&state, kind, &name).await?;
    Ok(HttpResponse::Ok().json(answer))
}

/// Changes a package's publishing policy: each switch sent is set, each
/// absent one kept. Owners, with token scope `owners`.
#[utoipa::path(
    tag = "packages",
    params(PackagePath, ("AgentLang-OTP" = Option<String>, Header, description = "Second factor: a TOTP code or a recovery code, required when the account has enabled one")),
    request_body = PolicyChange,
    security(("bearer" = ["owners"])),
    responses(
        (status = 200, description = "The policy now in force", body = PolicyAnswer),
        (status = 400, description = "The body is not the JSON object described (`malformed-request`)", body = crate::error::Problem, content_type = "application/problem+json"),
        (status = 401, description = "Missing or invalid token; or the account has a second factor and the `AgentLang-OTP` code is missing (`two-factor-code-required`) or wrong, expired or used (`two-factor-code-invalid`)", body = crate::error::Problem, content_type = "application/problem+json"),
        (status = 403, description = "The package requires a second factor and the account has none (`two-factor-enrolment-required`); not an owner (`not-owner`), or the token lacks the scope (`missing-scope`) or is not for this package (`token-not-for-package`)", body = crate::error::Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such package", body = crate::error::Problem, content_type = "application/problem+json"),
        (status = 413, description = "The body is over 1 KiB", body = crate::error::Problem, content_type = "application/problem+json"),
        (status = 429, description = "Too many requests", body = crate::error::Problem, content_type = "application/problem+json"),
    )
)]
#[patch("/api/v1/{kind}/{name}/publishing")]
pub async fn patch_publishing_policy(
    req: HttpRequest,
    state: web::Data<AppState>,
    auth: Caller,
    otp: Otp,
    path: web::Path<PackagePath>,
    payload: web::Payload,
) -> Result<HttpResponse, ApiError> {
    let (kind, name) = path.parse()?;
    let change: PolicyChange = super::read_json(&req, payload, MAX_POLICY_BODY_BYTES).await?;
    let answer =
        publishing_policy::set_policy(&state, &auth, kind, &name, &change, otp.as_deref()).await?;
    Ok(HttpResponse::Ok().json(answer))
}
