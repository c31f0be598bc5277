//! The caller's own second factor (TOTP): enrol with the password, confirm
//! with a first code (which answers the recovery codes, once), read its
//! state, disable it with a code. The rules are [`app::two_factor`]'s.

use actix_web::{HttpRequest, HttpResponse, delete, get, post, web};
use serde::Deserialize;
use utoipa::ToSchema;

use crate::{
    auth::{Caller, Otp},
    error::ApiError,
    rate_limit::Client,
    state::AppState,
};
use app::{
    FieldError, ServiceError,
    two_factor::{self, Enrolment, RecoveryCodes, TwoFactorStatus},
};

/// A password or a code, and nothing else: 1 KiB is plenty.
const MAX_BODY_BYTES: usize = 1024;

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct EnrolRequest {
    /// The account's password, re-entered.
    pub password: String,
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CodeRequest {
    /// A current TOTP code (6 digits), or for disabling a recovery code.
    #[schema(example = "123456")]
    pub code: Option<String>,
}

async fn json_body<T: serde::de::DeserializeOwned>(
    req: &HttpRequest,
    payload: web::Payload,
) -> Result<Option<T>, ApiError> {
    let raw = super::read_body(req, payload, MAX_BODY_BYTES).await?;
    if raw.is_empty() {
        return Ok(None);
    }
    serde_json::from_slice(&raw)
        .map(Some)
        .map_err(|e| ServiceError::Malformed(e.to_string()).into())
}

/// The caller's second factor: whether it is enrolled (or pending), and
/// how many recovery codes are left.
#[utoipa::path(
    tag = "two-factor",
    security(("bearer" = [])),
    responses(
        (status = 200, body = TwoFactorStatus, description = "The account's second factor"),
        (status = 401, description = "Missing or invalid token", body = crate::error::Problem, content_type = "application/problem+json"),
        (status = 429, description = "Too many requests", body = crate::error::Problem, content_type = "application/problem+json"),
    )
)]
#[get("/api/v1/account/2fa")]
pub async fn get_two_factor(
    state: web::Data<AppState>,
    auth: Caller,
) -> Result<HttpResponse, ApiError> {
    Ok(HttpResponse::Ok().json(two_factor::status(&state, auth.account_id).await?))
}

/// Starts enrolling a second factor: any token of the account, with the
/// password re-entered (a token alone binds no second factor): answers the secret and its `otpauth://` URI for an
/// authenticator app. Pending until confirmed; starting again replaces a
/// pending secret.
#[utoipa::path(
    tag = "two-factor",
    security(("bearer" = [])),
    request_body = EnrolRequest,
    responses(
        (status = 201, body = Enrolment, description = "The secret, shown once; confirm it with a code"),
        (status = 400, description = "The body is not the JSON object described (`malformed-request`)", body = crate::error::Problem, content_type = "application/problem+json"),
        (status = 401, description = "Missing or invalid token, or a wrong password (`invalid-credentials`)", body = crate::error::Problem, content_type = "application/problem+json"),
        (status = 409, description = "The account has a confirmed second factor already", body = crate::error::Problem, content_type = "application/problem+json"),
        (status = 413, description = "The body is over 1 KiB", body = crate::error::Problem, content_type = "application/problem+json"),
        (status = 422, description = "No password (`validation-failed`)", body = crate::error::Problem, content_type = "application/problem+json"),
        (status = 429, description = "Too many requests or password checks", body = crate::error::Problem, content_type = "application/problem+json"),
    )
)]
#[post("/api/v1/account/2fa")]
pub async fn enrol_two_factor(
    req: HttpRequest,
    state: web::Data<AppState>,
    auth: Caller,
    Client(client): Client,
    payload: web::Payload,
) -> Result<HttpResponse, ApiError> {
    let body: Option<EnrolRequest> = json_body(&req, payload).await?;
    let password = body.map(|b| b.password).unwrap_or_default();
    if password.is_empty() {
        return Err(
            ServiceError::Validation(vec![FieldError::new("password", "is required")]).into(),
        );
    }
    let enrolment = two_factor::enrol(
        &state,
        &client,
        auth.account_id,
        auth.username.as_str(),
        &password,
    )
    .await?;
    Ok(HttpResponse::Created()
        .insert_header((actix_web::http::header::CACHE_CONTROL, "no-store"))
        .json(enrolment))
}

/// Confirms a pending second factor with a first code: answers the ten recovery codes, shown only here.
#[utoipa::path(
    tag = "two-factor",
    security(("bearer" = [])),
    request_body = CodeRequest,
    responses(
        (status = 200, body = RecoveryCodes, description = "Enabled; the recovery codes, shown once"),
        (status = 400, description = "The body is not the JSON object described (`malformed-request`)", body = crate::error::Problem, content_type = "application/problem+json"),
        (status = 401, description = "Missing or invalid token, or the code is wrong, expired or used (`two-factor-code-invalid`)", body = crate::error::Problem, content_type = "application/problem+json"),
        (status = 404, description = "No enrolment is pending", body = crate::error::Problem, content_type = "application/problem+json"),
        (status = 409, description = "The second factor is confirmed already", body = crate::error::Problem, content_type = "application/problem+json"),
        (status = 413, description = "The body is over 1 KiB", body = crate::error::Problem, content_type = "application/problem+json"),
        (status = 422, description = "No code (`validation-failed`)", body = crate::error::Problem, content_type = "application/problem+json"),
        (status = 429, description = "Too many requests or codes tried", body = crate::error::Problem, content_type = "application/problem+json"),
    )
)]
#[post("/api/v1/account/2fa/confirm")]
pub async fn confirm_two_factor(
    req: HttpRequest,
    state: web::Data<AppState>,
    auth: Caller,
    payload: web::Payload,
) -> Result<HttpResponse, ApiError> {
    let body: Option<CodeRequest> = json_body(&req, payload).await?;
    let Some(code) = body.and_then(|b| b.code).filter(|c| !c.trim().is_empty()) else {
        return Err(ServiceError::Validation(vec![FieldError::new("code", "is required")]).into());
    };
    let codes = two_factor::confirm(&state, auth.account_id, auth.username.as_str(), &code).await?;
    Ok(HttpResponse::Ok()
        .insert_header((actix_web::http::header::CACHE_CONTROL, "no-store"))
        .json(codes))
}

/// Disables the second factor, with a code or a recovery code in the `AgentLang-OTP` header or the body's `code`.
#[utoipa::path(
    tag = "two-factor",
    security(("bearer" = [])),
    params(("AgentLang-OTP" = Option<String>, Header, description = "A TOTP code or a recovery code (or send `code` in the body)")),
    request_body(content = CodeRequest, description = "Optional: the code, when not in the header"),
    responses(
        (status = 204, description = "Disabled; its recovery codes are gone"),
        (status = 400, description = "The body is not the JSON object described (`malformed-request`)", body = crate::error::Problem, content_type = "application/problem+json"),
        (status = 401, description = "Missing or invalid token; no code (`two-factor-code-required`), or a wrong, expired or used one (`two-factor-code-invalid`)", body = crate::error::Problem, content_type = "application/problem+json"),
        (status = 404, description = "The account has no second factor", body = crate::error::Problem, content_type = "application/problem+json"),
        (status = 413, description = "The body is over 1 KiB", body = crate::error::Problem, content_type = "application/problem+json"),
        (status = 429, description = "Too many requests or codes tried", body = crate::error::Problem, content_type = "application/problem+json"),
    )
)]
#[delete("/api/v1/account/2fa")]
pub async fn disable_two_factor(
    req: HttpRequest,
    state: web::Data<AppState>,
    auth: Caller,
    otp: Otp,
    payload: web::Payload,
) -> Result<HttpResponse, ApiError> {
    let body: Option<CodeRequest> = json_body(&req, payload).await?;
    let code = otp.0.or_else(|| body.and_then(|b| b.code));
    two_factor::disable(
        &state,
        auth.account_id,
        auth.username.as_str(),
        code.as_deref(),
    )
    .await?;
    Ok(HttpResponse::NoContent().finish())
}
