//! One HTTP error type, rendered as RFC 9457 `application/problem+json`.
//!
//! Problem `type`s are stable absolute URIs,
//! `https://agentlang.dev/problems/<slug>`, one slug per [`ApiError`] variant;
//! clients match on them, never on `title` or `detail`.
//!
//! [`ApiError::error_response`] cannot see the request, so it leaves the
//! rendered [`Problem`] in the response's extensions; the [`problem_details`]
//! middleware then fills in `instance` (the request path) and `request_id` and
//! writes the body.

use actix_web::{
    HttpMessage, HttpRequest, HttpResponse, ResponseError,
    body::{BoxBody, MessageBody},
    dev::{ServiceRequest, ServiceResponse},
    error::{JsonPayloadError, PathError, QueryPayloadError},
    http::{StatusCode, header},
    middleware::Next,
};
use serde::Serialize;
use utoipa::ToSchema;

use crate::request_id::RequestId;

/// The prefix of every problem `type` URI.
pub const PROBLEM_TYPE_BASE: &str = "https://agentlang.dev/problems/";

/// One invalid input, named by its JSON field path (`scopes[1]`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ToSchema)]
pub struct FieldError {
    pub field: String,
    pub message: String,
}

impl FieldError {
    pub fn new(field: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            field: field.into(),
            message: message.into(),
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    #[error("the request failed validation")]
    Validation(Vec<FieldError>),
    #[error("malformed request: {0}")]
    BadRequest(String),
    #[error("the request body must be {expected}")]
    UnsupportedMediaType { expected: &'static str },
    #[error("the request body is larger than {limit} bytes")]
    PayloadTooLarge { limit: usize },
    #[error("authentication required: {0}")]
    Unauthenticated(String),
    #[error("wrong username or password")]
    InvalidCredentials,
    #[error("forbidden: {0}")]
    Forbidden(String),
    #[error("registration of new accounts is closed on this registry")]
    RegistrationClosed,
    #[error("{0} not found")]
    NotFound(String),
    #[error("{0}")]
    Conflict(String),
    #[error("too many requests; retry in {retry_after_secs} s")]
    RateLimited { retry_after_secs: u64 },
    #[error("not ready: {0}")]
    Unavailable(String),
    /// The upload is not a valid container; the core error's text.
    #[error("{0}")]
    ContainerInvalid(String),
    #[error("{0}")]
    SignatureInvalid(String),
    #[error("{0}")]
    KeyRevoked(String),
    #[error("{0}")]
    UnknownKey(String),
    #[error("{0}")]
    NotOwner(String),
    /// A look-alike of an existing name; the message names its spelling.
    #[error("{0}")]
    NameTaken(String),
    #[error("{0}")]
    VersionExists(String),
    /// An agent.lock pins tool versions the registry does not hold; one
    /// field error per bad pin (`tools.<name>`).
    #[error("agent.lock pins tool versions this registry does not hold")]
    LockMismatch(Vec<FieldError>),
    /// No versions meet the requirements: the explanation, and the facts
    /// behind it as the `conflicts` extension member.
    #[error("{explanation}")]
    Unsatisfiable {
        explanation: String,
        conflicts: serde_json::Value,
    },
    #[error("resolution did not finish within {0} ms")]
    ResolveTimeout(u64),
    /// Anything the client cannot fix. Its cause is logged, never sent.
    #[error("internal error")]
    Internal(#[source] anyhow::Error),
}

impl ApiError {
    pub fn internal(err: impl Into<anyhow::Error>) -> Self {
        Self::Internal(err.into())
    }

    /// The stable slug of the problem `type` URI.
    pub fn slug(&self) -> &'static str {
        match self {
            Self::Validation(_) => "validation-failed",
            Self::BadRequest(_) => "malformed-request",
            Self::UnsupportedMediaType { .. } => "unsupported-media-type",
            Self::PayloadTooLarge { .. } => "payload-too-large",
            Self::Unauthenticated(_) => "unauthenticated",
            Self::InvalidCredentials => "invalid-credentials",
            Self::Forbidden(_) => "forbidden",
            Self::RegistrationClosed => "registration-closed",
            Self::NotFound(_) => "not-found",
            Self::Conflict(_) => "conflict",
            Self::RateLimited { .. } => "rate-limited",
            Self::Unavailable(_) => "unavailable",
            Self::ContainerInvalid(_) => "container-invalid",
            Self::SignatureInvalid(_) => "signature-invalid",
            Self::KeyRevoked(_) => "key-revoked",
            Self::UnknownKey(_) => "unknown-key",
            Self::NotOwner(_) => "not-owner",
            Self::NameTaken(_) => "name-taken",
            Self::VersionExists(_) => "version-exists",
            Self::LockMismatch(_) => "lock-mismatch",
            Self::Unsatisfiable { .. } => "unsatisfiable",
            Self::ResolveTimeout(_) => "resolve-timeout",
            Self::Internal(_) => "internal",
        }
    }

    fn title(&self) -> &'static str {
        match self {
            Self::Validation(_) => "The request failed validation",
            Self::BadRequest(_) => "Malformed request",
            Self::UnsupportedMediaType { .. } => "Unsupported media type",
            Self::PayloadTooLarge { .. } => "Payload too large",
            Self::Unauthenticated(_) => "Authentication required",
            Self::InvalidCredentials => "Invalid credentials",
            Self::Forbidden(_) => "Forbidden",
            Self::RegistrationClosed => "Registration is closed",
            Self::NotFound(_) => "Not found",
            Self::Conflict(_) => "Conflict",
            Self::RateLimited { .. } => "Too many requests",
            Self::Unavailable(_) => "Service unavailable",
            Self::ContainerInvalid(_) => "The container is invalid",
            Self::SignatureInvalid(_) => "The signature does not verify",
            Self::KeyRevoked(_) => "The signing key is revoked",
            Self::UnknownKey(_) => "Unknown signing key",
            Self::NotOwner(_) => "Not an owner",
            Self::NameTaken(_) => "The name is taken",
            Self::VersionExists(_) => "The version exists",
            Self::LockMismatch(_) => "agent.lock does not match the registry",
            Self::Unsatisfiable { .. } => "The requirements cannot be met",
            Self::ResolveTimeout(_) => "Resolution timed out",
            Self::Internal(_) => "Internal server error",
        }
    }

    fn problem(&self) -> Problem {
        let status = self.status_code();
        let detail = match self {
            Self::Validation(errors) if errors.len() == 1 => {
                format!("{}: {}", errors[0].field, errors[0].message)
            }
            Self::Validation(errors) => format!("{} fields are invalid", errors.len()),
            // The cause may hold SQL, paths or hostnames: it goes to the log.
            Self::Internal(_) => {
                "the registry failed to handle this request; it has been logged".to_owned()
            }
            // The title already says what kind of failure it is; the detail
            // says which.
            Self::BadRequest(detail)
            | Self::Unauthenticated(detail)
            | Self::Forbidden(detail)
            | Self::Unavailable(detail) => detail.clone(),
            other => other.to_string(),
        };
        Problem {
            problem_type: format!("{PROBLEM_TYPE_BASE}{}", self.slug()),
            title: self.title().to_owned(),
            status: status.as_u16(),
            detail,
            instance: None,
            request_id: None,
            errors: match self {
                Self::Validation(errors) | Self::LockMismatch(errors) => errors.clone(),
                _ => Vec::new(),
            },
            conflicts: match self {
                Self::Unsatisfiable { conflicts, .. } => Some(conflicts.clone()),
                _ => None,
            },
        }
    }
}

impl ResponseError for ApiError {
    fn status_code(&self) -> StatusCode {
        match self {
            Self::Validation(_) => StatusCode::UNPROCESSABLE_ENTITY,
            Self::BadRequest(_) => StatusCode::BAD_REQUEST,
            Self::UnsupportedMediaType { .. } => StatusCode::UNSUPPORTED_MEDIA_TYPE,
            Self::PayloadTooLarge { .. } => StatusCode::PAYLOAD_TOO_LARGE,
            Self::Unauthenticated(_) | Self::InvalidCredentials => StatusCode::UNAUTHORIZED,
            Self::Forbidden(_) | Self::RegistrationClosed => StatusCode::FORBIDDEN,
            Self::NotFound(_) => StatusCode::NOT_FOUND,
            Self::Conflict(_) => StatusCode::CONFLICT,
            Self::RateLimited { .. } => StatusCode::TOO_MANY_REQUESTS,
            Self::Unavailable(_) | Self::ResolveTimeout(_) => StatusCode::SERVICE_UNAVAILABLE,
            Self::ContainerInvalid(_)
            | Self::SignatureInvalid(_)
            | Self::KeyRevoked(_)
            | Self::UnknownKey(_)
            | Self::LockMismatch(_)
            | Self::Unsatisfiable { .. } => StatusCode::UNPROCESSABLE_ENTITY,
            Self::NotOwner(_) => StatusCode::FORBIDDEN,
            Self::NameTaken(_) | Self::VersionExists(_) => StatusCode::CONFLICT,
            Self::Internal(_) => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }

    fn error_response(&self) -> HttpResponse {
        if let Self::Internal(cause) = self {
            tracing::error!(error = format!("{cause:#}"), "request failed");
        }
        let problem = self.problem();
        let mut response = HttpResponse::build(self.status_code());
        match self {
            Self::Unauthenticated(reason) => {
                response.insert_header((
                    header::WWW_AUTHENTICATE,
                    format!(
                        "Bearer realm=\"agentlang-registry\", error=\"invalid_token\", error_description=\"{}\"",
                        reason.replace(['"', '\\'], "'")
                    ),
                ));
            }
            Self::RateLimited { retry_after_secs } => {
                response.insert_header((header::RETRY_AFTER, retry_after_secs.to_string()));
            }
            _ => {}
        }
        // Rendered here too, so a response that escapes the middleware still
        // carries a complete (if instance-less) problem.
        let mut response = response
            .content_type(PROBLEM_JSON)
            .body(serde_json::to_vec(&problem).unwrap_or_default());
        response.extensions_mut().insert(problem);
        response
    }
}

pub const PROBLEM_JSON: &str = "application/problem+json";

/// An RFC 9457 problem document.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Problem {
    #[serde(rename = "type")]
    pub problem_type: String,
    pub title: String,
    pub status: u16,
    pub detail: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub instance: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub request_id: Option<String>,
    /// Every invalid field, for `validation-failed` and `lock-mismatch`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub errors: Vec<FieldError>,
    /// For `unsatisfiable`: the requirements that clash, structured.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Vec<Object>>)]
    pub conflicts: Option<serde_json::Value>,
}

/// Middleware: completes problem documents with the request's path and id.
pub async fn problem_details(
    req: ServiceRequest,
    next: Next<impl MessageBody + 'static>,
) -> Result<ServiceResponse<BoxBody>, actix_web::Error> {
    let instance = req.path().to_owned();
    let request_id = req.extensions().get::<RequestId>().cloned();
    let response = next.call(req).await?;
    let Some(mut problem) = response.response().extensions().get::<Problem>().cloned() else {
        return Ok(response.map_into_boxed_body());
    };
    problem.instance = Some(instance);
    problem.request_id = request_id.map(|id| id.0);
    let body = serde_json::to_vec(&problem).map_err(actix_web::error::ErrorInternalServerError)?;
    Ok(response.map_body(|_, _| BoxBody::new(body)))
}

/// JSON body errors as problems: wrong content type 415, too large 413,
/// anything else 400 with serde's message (which names the field).
pub fn json_error(err: JsonPayloadError, _req: &HttpRequest) -> actix_web::Error {
    match err {
        JsonPayloadError::ContentType => ApiError::UnsupportedMediaType {
            expected: "application/json",
        },
        JsonPayloadError::Overflow { limit }
        | JsonPayloadError::OverflowKnownLength { limit, .. } => {
            ApiError::PayloadTooLarge { limit }
        }
        JsonPayloadError::Deserialize(e) => ApiError::BadRequest(format!("invalid JSON body: {e}")),
        other => ApiError::BadRequest(other.to_string()),
    }
    .into()
}

#[expect(
    clippy::needless_pass_by_value,
    reason = "the signature actix's error_handler takes"
)]
pub fn path_error(err: PathError, _req: &HttpRequest) -> actix_web::Error {
    ApiError::BadRequest(format!("invalid path: {err}")).into()
}

#[expect(
    clippy::needless_pass_by_value,
    reason = "the signature actix's error_handler takes"
)]
pub fn query_error(err: QueryPayloadError, _req: &HttpRequest) -> actix_web::Error {
    ApiError::BadRequest(format!("invalid query string: {err}")).into()
}

/// The default service: unknown routes are problems too.
pub async fn route_not_found(req: HttpRequest) -> Result<HttpResponse, ApiError> {
    Err(ApiError::NotFound(format!("route {}", req.path())))
}

impl From<sqlx::Error> for ApiError {
    fn from(err: sqlx::Error) -> Self {
        Self::Internal(err.into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses_and_slugs_are_stable() {
        let cases = [
            (ApiError::Validation(vec![]), 422, "validation-failed"),
            (
                ApiError::Unauthenticated("x".into()),
                401,
                "unauthenticated",
            ),
            (ApiError::InvalidCredentials, 401, "invalid-credentials"),
            (ApiError::Forbidden("x".into()), 403, "forbidden"),
            (ApiError::RegistrationClosed, 403, "registration-closed"),
            (ApiError::Conflict("x".into()), 409, "conflict"),
            (
                ApiError::RateLimited {
                    retry_after_secs: 3,
                },
                429,
                "rate-limited",
            ),
            (
                ApiError::internal(anyhow::anyhow!("db password is hunter2")),
                500,
                "internal",
            ),
        ];
        for (err, status, slug) in cases {
            assert_eq!(err.status_code().as_u16(), status, "{err}");
            assert_eq!(err.slug(), slug);
        }
    }

    #[test]
    fn internal_errors_carry_no_internal_text() {
        let problem = ApiError::internal(anyhow::anyhow!("db password is hunter2")).problem();
        let json = serde_json::to_string(&problem).unwrap();
        assert!(!json.contains("hunter2"), "{json}");
    }
}
