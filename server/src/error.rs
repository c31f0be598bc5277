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
pub use agentlang_core::lockcheck::ProblemKind as LockProblemKind;

/// The prefix of every problem `type` URI.
pub const PROBLEM_TYPE_BASE: &str = "https://agentlang.dev/problems/";

/// One invalid input, named by its JSON field path (`scopes[1]`). A
/// problem inside an uploaded package also names the package file and the
/// path in it, exactly as `agentlang validate` prints them; `field` is then
/// `file:path`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ToSchema)]
pub struct FieldError {
    pub field: String,
    pub message: String,
    /// The package member the problem is in (`specialists/x.yaml`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
    /// The path inside that file (`tools[0].version`); empty for the
    /// document as a whole.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
}

impl FieldError {
    pub fn new(field: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            field: field.into(),
            message: message.into(),
            file: None,
            path: None,
        }
    }

    /// A problem at `path` inside the package member `file`.
    pub fn in_file(file: &str, path: &str, message: impl Into<String>) -> Self {
        Self {
            field: if path.is_empty() {
                file.to_owned()
            } else {
                format!("{file}:{path}")
            },
            message: message.into(),
            file: Some(file.to_owned()),
            path: Some(path.to_owned()),
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
    /// The body went silent, or took too long in all; the number is the
    /// limit passed, in seconds.
    #[error("the request body took too long (limit: {0} s); send it again without pauses")]
    RequestTimeout(u64),
    #[error("authentication required: {0}")]
    Unauthenticated(String),
    #[error("wrong username or password")]
    InvalidCredentials,
    /// The token does not carry the scope the route needs.
    #[error("the token lacks the {:?} scope", .0.as_str())]
    MissingScope(crate::common::names::Scope),
    /// The token is restricted to packages this one is not among.
    #[error("the token is not valid for the package {0}")]
    TokenNotForPackage(String),
    #[error("only an admin may do this")]
    AdminRequired,
    /// An owner tried to remove one who has been an owner longer.
    #[error("{0}")]
    SeniorOwner(String),
    #[error("registration of new accounts is closed on this registry")]
    RegistrationClosed,
    #[error("{0} not found")]
    NotFound(String),
    /// The path exists, not with this method; `allow` lists the methods it
    /// answers (the `Allow` header).
    #[error("{method} is not allowed here; use {}", .allow.join(", "))]
    MethodNotAllowed {
        method: String,
        allow: Vec<&'static str>,
    },
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
    /// agent.lock does not tell the truth about the package or the
    /// registry: one problem type per kind of failure, one field error per
    /// tool or file (`tools.<name>`, `files.<path>`, `agents.<name>`,
    /// `models.<id>`).
    #[error("{}", lock_detail(*.0))]
    Lock(LockProblemKind, Vec<FieldError>),
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

    /// A failure reading the request body: a timeout (the deadline
    /// middleware answers 408 for it anyway), else a broken body.
    pub fn from_payload(err: &actix_web::error::PayloadError) -> Self {
        match err {
            actix_web::error::PayloadError::Io(e) if e.kind() == std::io::ErrorKind::TimedOut => {
                Self::RequestTimeout(0)
            }
            other => Self::BadRequest(format!("cannot read the request body: {other}")),
        }
    }

    /// The stable slug of the problem `type` URI.
    pub fn slug(&self) -> &'static str {
        match self {
            Self::Validation(_) => "validation-failed",
            Self::BadRequest(_) => "malformed-request",
            Self::UnsupportedMediaType { .. } => "unsupported-media-type",
            Self::PayloadTooLarge { .. } => "payload-too-large",
            Self::RequestTimeout(_) => "request-timeout",
            Self::Unauthenticated(_) => "unauthenticated",
            Self::InvalidCredentials => "invalid-credentials",
            Self::MissingScope(_) => "missing-scope",
            Self::TokenNotForPackage(_) => "token-not-for-package",
            Self::AdminRequired => "admin-required",
            Self::SeniorOwner(_) => "senior-owner",
            Self::RegistrationClosed => "registration-closed",
            Self::NotFound(_) => "not-found",
            Self::MethodNotAllowed { .. } => "method-not-allowed",
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
            Self::Lock(kind, _) => lock_slug(*kind),
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
            Self::RequestTimeout(_) => "Request timeout",
            Self::Unauthenticated(_) => "Authentication required",
            Self::InvalidCredentials => "Invalid credentials",
            Self::MissingScope(_) => "The token lacks a scope",
            Self::TokenNotForPackage(_) => "The token is not valid for this package",
            Self::AdminRequired => "Admin required",
            Self::SeniorOwner(_) => "The owner has been an owner longer",
            Self::RegistrationClosed => "Registration is closed",
            Self::NotFound(_) => "Not found",
            Self::MethodNotAllowed { .. } => "Method not allowed",
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
            Self::Lock(kind, _) => lock_title(*kind),
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
                Self::Validation(errors) | Self::Lock(_, errors) => errors.clone(),
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
            Self::RequestTimeout(_) => StatusCode::REQUEST_TIMEOUT,
            Self::Unauthenticated(_) | Self::InvalidCredentials => StatusCode::UNAUTHORIZED,
            Self::MissingScope(_)
            | Self::TokenNotForPackage(_)
            | Self::AdminRequired
            | Self::SeniorOwner(_)
            | Self::RegistrationClosed => StatusCode::FORBIDDEN,
            Self::NotFound(_) => StatusCode::NOT_FOUND,
            Self::MethodNotAllowed { .. } => StatusCode::METHOD_NOT_ALLOWED,
            Self::Conflict(_) => StatusCode::CONFLICT,
            Self::RateLimited { .. } => StatusCode::TOO_MANY_REQUESTS,
            Self::Unavailable(_) | Self::ResolveTimeout(_) => StatusCode::SERVICE_UNAVAILABLE,
            Self::ContainerInvalid(_)
            | Self::SignatureInvalid(_)
            | Self::KeyRevoked(_)
            | Self::UnknownKey(_)
            | Self::Lock(..)
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
            Self::MethodNotAllowed { allow, .. } => {
                response.insert_header((header::ALLOW, allow.join(", ")));
            }
            Self::Unavailable(_) | Self::ResolveTimeout(_) => {
                response.insert_header((header::RETRY_AFTER, "5"));
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

impl ApiError {
    /// The whole response, its problem completed with the request's path
    /// and id, for a middleware that answers without the request in hand
    /// (it went into the handler that was given up on).
    pub fn complete_response(&self, instance: &str, request_id: Option<&str>) -> HttpResponse {
        let mut response = self.error_response();
        let mut problem = self.problem();
        problem.instance = Some(instance.to_owned());
        problem.request_id = request_id.map(str::to_owned);
        if let Some(id) = request_id.and_then(|id| header::HeaderValue::from_str(id).ok()) {
            response
                .headers_mut()
                .insert(crate::request_id::REQUEST_ID_HEADER, id);
        }
        response.set_body(BoxBody::new(
            serde_json::to_vec(&problem).unwrap_or_default(),
        ))
    }
}

pub const PROBLEM_JSON: &str = "application/problem+json";

/// The problem type of each kind of lock failure.
fn lock_slug(kind: LockProblemKind) -> &'static str {
    match kind {
        LockProblemKind::Missing => "lock-missing",
        LockProblemKind::Files => "lock-files-mismatch",
        LockProblemKind::Agents => "lock-agents-mismatch",
        LockProblemKind::Models => "lock-models-undeclared",
        LockProblemKind::NotInRegistry => "lock-mismatch",
        LockProblemKind::Unpinned => "lock-unpinned",
        LockProblemKind::Unsatisfied => "lock-unsatisfied",
        LockProblemKind::Unrelated => "lock-unrelated",
        LockProblemKind::Yanked => "lock-yanked",
    }
}

fn lock_title(kind: LockProblemKind) -> &'static str {
    match kind {
        LockProblemKind::Missing => "The agent has no agent.lock",
        LockProblemKind::Files => "agent.lock does not hash the package's files",
        LockProblemKind::Agents => "agent.lock does not pin the subagents",
        LockProblemKind::Models => "agent.lock names undeclared models",
        LockProblemKind::NotInRegistry => "agent.lock does not match the registry",
        LockProblemKind::Unpinned => "agent.lock leaves a requirement unpinned",
        LockProblemKind::Unsatisfied => "agent.lock does not satisfy a requirement",
        LockProblemKind::Unrelated => "agent.lock pins an unrelated tool",
        LockProblemKind::Yanked => "agent.lock pins a yanked version",
    }
}

fn lock_detail(kind: LockProblemKind) -> &'static str {
    match kind {
        LockProblemKind::Missing => {
            "an agent that requires registry tools must carry an agent.lock"
        }
        LockProblemKind::Files => "agent.lock's files section does not match the package's members",
        LockProblemKind::Agents => {
            "agent.lock's agents section does not pin the co-located subagents by hash"
        }
        LockProblemKind::Models => {
            "agent.lock's models section names models the agent does not declare"
        }
        LockProblemKind::NotInRegistry => {
            "agent.lock pins tool versions this registry does not hold"
        }
        LockProblemKind::Unpinned => {
            "a tool requirement of the agent or of a pinned tool has no pin in agent.lock"
        }
        LockProblemKind::Unsatisfied => {
            "a pin in agent.lock does not satisfy the requirement it answers"
        }
        LockProblemKind::Unrelated => "agent.lock pins tools no requirement leads to",
        LockProblemKind::Yanked => {
            "agent.lock pins yanked versions the previous version did not pin"
        }
    }
}

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
        JsonPayloadError::Payload(e) => ApiError::from_payload(&e),
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
    /// A database that cannot be reached (no connection within the
    /// configured timeout, a refused or broken connection) is 503: the
    /// client may retry, and nothing was written. Anything else is a bug.
    fn from(err: sqlx::Error) -> Self {
        if is_unreachable(&err) {
            tracing::warn!(error = %err, "the database is unreachable");
            Self::Unavailable("the database is unavailable; retry shortly".to_owned())
        } else {
            Self::Internal(err.into())
        }
    }
}

impl From<crate::blobs::BlobError> for ApiError {
    /// Object storage failing (unreachable, timing out, answering 5xx) is
    /// 503: nothing was written that a retry would not write again. A blob
    /// whose bytes no longer match its key is a bug, 500.
    fn from(err: crate::blobs::BlobError) -> Self {
        match err {
            crate::blobs::BlobError::Corrupt(_) => Self::internal(err),
            other => {
                tracing::warn!(error = %other, "object storage failed");
                Self::Unavailable("blob storage is unavailable; retry shortly".to_owned())
            }
        }
    }
}

/// Whether a database error says the database is out of reach rather than
/// that a query is wrong.
pub fn is_unreachable(err: &sqlx::Error) -> bool {
    matches!(
        err,
        sqlx::Error::PoolTimedOut
            | sqlx::Error::PoolClosed
            | sqlx::Error::Io(_)
            | sqlx::Error::Tls(_)
            | sqlx::Error::WorkerCrashed
    )
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
            (
                ApiError::MissingScope(crate::common::names::Scope::Keys),
                403,
                "missing-scope",
            ),
            (ApiError::AdminRequired, 403, "admin-required"),
            (ApiError::SeniorOwner("x".into()), 403, "senior-owner"),
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
