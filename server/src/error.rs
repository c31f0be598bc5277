//! One HTTP error type, rendered as RFC 9457 `application/problem+json`.
//!
//! Problem `type`s are `<public URL>/problems/<slug>`, one per
//! [`ProblemType`]; each is a catalog page saying what the problem means and
//! what to do. Clients match on the slug, never on `title` or `detail`.
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

use app::{
    FieldError, ServiceError,
    error::{LockProblemKind, Rule},
};

use crate::request_id::RequestId;

/// The path under which every problem type has its page: a problem's
/// `type` is this path under the registry's public URL.
pub const PROBLEMS_PATH: &str = "/problems/";

/// Every error a route answers: what a rule refused ([`ServiceError`]), or
/// what only HTTP can say about a request (its media type, method, body
/// speed, `Accept`). Each maps to one [`ProblemType`].
#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    #[error(transparent)]
    Service(#[from] ServiceError),
    /// The request itself cannot be read (path, query, JSON body).
    #[error("malformed request: {0}")]
    BadRequest(String),
    #[error("the request body must be {expected}")]
    UnsupportedMediaType { expected: &'static str },
    /// The body went silent, took too long in all, or (an upload) arrived
    /// too slowly; the text says which limit it passed.
    #[error("the request body {0}; send it again without pauses")]
    RequestTimeout(String),
    /// The path exists, not with this method; `allow` lists the methods it
    /// answers (the `Allow` header).
    #[error("{method} is not allowed here; use {}", .allow.join(", "))]
    MethodNotAllowed {
        method: String,
        allow: Vec<&'static str>,
    },
    /// `Accept` admits none of the forms the route answers in.
    #[error("this route answers in {available}; ask for one of them in Accept")]
    NotAcceptable { available: &'static str },
}

impl ApiError {
    pub fn internal(err: impl Into<anyhow::Error>) -> Self {
        Self::Service(ServiceError::internal(err))
    }

    /// A failure reading the request body: a timeout (the deadline
    /// middleware answers 408 for it anyway), else a broken body.
    pub fn from_payload(err: &actix_web::error::PayloadError) -> Self {
        match err {
            actix_web::error::PayloadError::Io(e) if e.kind() == std::io::ErrorKind::TimedOut => {
                Self::RequestTimeout(e.to_string())
            }
            other => Self::BadRequest(format!("cannot read the request body: {other}")),
        }
    }

    /// The kind of problem this is: one per fact a client can act on.
    pub fn problem_type(&self) -> ProblemType {
        match self {
            Self::Service(err) => service_problem(err),
            Self::BadRequest(_) => ProblemType::MalformedRequest,
            Self::UnsupportedMediaType { .. } => ProblemType::UnsupportedMediaType,
            Self::RequestTimeout(_) => ProblemType::RequestTimeout,
            Self::MethodNotAllowed { .. } => ProblemType::MethodNotAllowed,
            Self::NotAcceptable { .. } => ProblemType::NotAcceptable,
        }
    }

    /// The stable slug of the problem `type` URI.
    pub fn slug(&self) -> &'static str {
        self.problem_type().slug()
    }

    fn problem(&self) -> Problem {
        let status = self.status_code();
        let detail = match self {
            Self::Service(
                ServiceError::Validation(errors) | ServiceError::RuleBroken(_, errors),
            ) if errors.len() == 1 => {
                format!("{}: {}", errors[0].field, errors[0].message)
            }
            Self::Service(ServiceError::Validation(errors)) => {
                format!("{} fields are invalid", errors.len())
            }
            Self::Service(ServiceError::RuleBroken(rule, errors)) => {
                format!(
                    "{} problems, among them {}: {}",
                    errors.len(),
                    rule.slug(),
                    rule.title()
                )
            }
            // The cause may hold SQL, paths or hostnames: it goes to the log.
            Self::Service(ServiceError::Internal(_)) => {
                "the registry failed to handle this request; it has been logged".to_owned()
            }
            // The title already says what kind of failure it is; the detail
            // says which.
            Self::BadRequest(detail)
            | Self::Service(
                ServiceError::Malformed(detail)
                | ServiceError::Unauthenticated(detail)
                | ServiceError::Unavailable(detail),
            ) => detail.clone(),
            other => other.to_string(),
        };
        Problem {
            // Relative until the middleware, which knows the public URL,
            // makes it absolute.
            problem_type: format!("{PROBLEMS_PATH}{}", self.slug()),
            title: self.problem_type().title().to_owned(),
            status: status.as_u16(),
            detail,
            instance: None,
            request_id: None,
            errors: match self {
                Self::Service(
                    ServiceError::Validation(errors)
                    | ServiceError::RuleBroken(_, errors)
                    | ServiceError::Lock(_, errors),
                ) => errors.clone(),
                _ => Vec::new(),
            },
            conflicts: match self {
                Self::Service(ServiceError::Unsatisfiable { conflicts, .. }) => {
                    Some(conflicts.clone())
                }
                _ => None,
            },
        }
    }
}

/// The one problem type of each refusal of a rule.
fn service_problem(err: &ServiceError) -> ProblemType {
    use ServiceError as E;
    match err {
        E::Validation(_) => ProblemType::ValidationFailed,
        E::RuleBroken(rule, _) => ProblemType::Rule(*rule),
        E::Malformed(_) => ProblemType::MalformedRequest,
        E::PayloadTooLarge { .. } => ProblemType::PayloadTooLarge,
        E::Unauthenticated(_) => ProblemType::Unauthenticated,
        E::InvalidCredentials => ProblemType::InvalidCredentials,
        E::MissingScope(_) => ProblemType::MissingScope,
        E::TokenNotForPackage(_) => ProblemType::TokenNotForPackage,
        E::AdminRequired => ProblemType::AdminRequired,
        E::SeniorOwner(_) => ProblemType::SeniorOwner,
        E::RegistrationClosed => ProblemType::RegistrationClosed,
        E::NotFound(_) => ProblemType::NotFound,
        E::NoA2aInterface(_) => ProblemType::NoA2aInterface,
        E::RangeNotSatisfiable { .. } => ProblemType::RangeNotSatisfiable,
        E::Conflict(_) => ProblemType::Conflict,
        E::RateLimited { .. } => ProblemType::RateLimited,
        E::Unavailable(_) => ProblemType::Unavailable,
        E::ContainerInvalid(_) => ProblemType::ContainerInvalid,
        E::SignatureInvalid(_) => ProblemType::SignatureInvalid,
        E::KeyRevoked(_) => ProblemType::KeyRevoked,
        E::UnknownKey(_) => ProblemType::UnknownKey,
        E::CosignatureInvalid(_) => ProblemType::CosignatureInvalid,
        E::UnknownWitness(_) => ProblemType::UnknownWitness,
        E::NotOwner(_) => ProblemType::NotOwner,
        E::NoGrant(_) => ProblemType::NoGrant,
        E::ProofInvalid(_) => ProblemType::ProofInvalid,
        E::TooManyRecipients(_) => ProblemType::TooManyRecipients,
        E::TooManyGrants(_) => ProblemType::TooManyGrants,
        E::AgentOpen(_) => ProblemType::AgentOpen,
        E::NoRecipients(_) => ProblemType::NoRecipients,
        E::NameTaken(_) => ProblemType::NameTaken,
        E::VersionExists(_) => ProblemType::VersionExists,
        E::Quarantined(_) => ProblemType::Quarantined,
        E::Archived(_) => ProblemType::PackageArchived,
        E::TwoFactorCodeRequired(_) => ProblemType::TwoFactorCodeRequired,
        E::TwoFactorCodeInvalid(_) => ProblemType::TwoFactorCodeInvalid,
        E::TwoFactorEnrolmentRequired(_) => ProblemType::TwoFactorEnrolmentRequired,
        E::TwoFactorRequired(_) => ProblemType::TwoFactorRequired,
        E::Lock(kind, _) => ProblemType::from(*kind),
        E::Unsatisfiable { .. } => ProblemType::Unsatisfiable,
        E::ResolveTimeout(_) => ProblemType::ResolveTimeout,
        E::ResolveTooComplex(_) => ProblemType::ResolveTooComplex,
        E::Internal(_) => ProblemType::Internal,
        // Trusted publishing.
        E::Oidc(refusal, _) => ProblemType::from(*refusal),
        E::TrustedPublishingRequired(_) => ProblemType::TrustedPublishingRequired,
        // Staged releases.
        E::VersionStaged(_) => ProblemType::VersionStaged,
        E::StagingRequired(_) => ProblemType::StagingRequired,
        E::StagedDecided(_) => ProblemType::StagedDecided,
        E::ProvenanceInvalid(_) => ProblemType::ProvenanceInvalid,
    }
}

impl ResponseError for ApiError {
    fn status_code(&self) -> StatusCode {
        self.problem_type().status()
    }

    fn error_response(&self) -> HttpResponse {
        if let Self::Service(ServiceError::Internal(cause)) = self {
            tracing::error!(error = format!("{cause:#}"), "request failed");
        }
        let problem = self.problem();
        let mut response = HttpResponse::build(self.status_code());
        match self {
            Self::Service(ServiceError::Unauthenticated(reason)) => {
                response.insert_header((
                    header::WWW_AUTHENTICATE,
                    format!(
                        "Bearer realm=\"agentlang-registry\", error=\"invalid_token\", error_description=\"{}\"",
                        reason.replace(['"', '\\'], "'")
                    ),
                ));
            }
            Self::Service(ServiceError::RateLimited { retry_after_secs }) => {
                response.insert_header((header::RETRY_AFTER, retry_after_secs.to_string()));
            }
            Self::MethodNotAllowed { allow, .. } => {
                response.insert_header((header::ALLOW, allow.join(", ")));
            }
            Self::Service(ServiceError::RangeNotSatisfiable { size }) => {
                response.insert_header((header::CONTENT_RANGE, format!("bytes */{size}")));
            }
            Self::Service(ServiceError::Unavailable(_) | ServiceError::ResolveTimeout(_)) => {
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

/// Where every path of the MCP Registry API (`routes::mcp`) starts.
pub const MCP_PREFIX: &str = "/v0.1/";

/// An error on a `/v0.1` path, as the MCP Registry's document writes it.
#[derive(Debug, Serialize, ToSchema)]
#[schema(as = McpError)]
pub struct McpError {
    /// What went wrong, in words.
    #[schema(example = "server \"com.example.registry/weather\" not found")]
    pub error: String,
}

/// Middleware: completes problem documents with the request's path and id.
/// On the MCP Registry API's paths (`/v0.1/`), whose document gives every
/// error as `{"error": "..."}`, a problem is answered in that shape
/// instead, with the same status and headers (`Retry-After`, `Allow`).
pub async fn problem_details(
    req: ServiceRequest,
    next: Next<impl MessageBody + 'static>,
) -> Result<ServiceResponse<BoxBody>, actix_web::Error> {
    let response = next.call(req).await?;
    let Some(mut problem) = response.response().extensions().get::<Problem>().cloned() else {
        return Ok(response.map_into_boxed_body());
    };
    if response.request().path().starts_with(MCP_PREFIX) {
        let body = serde_json::to_vec(&McpError {
            error: problem.detail,
        })
        .map_err(actix_web::error::ErrorInternalServerError)?;
        let mut response = response.map_body(|_, _| BoxBody::new(body));
        response.headers_mut().insert(
            header::CONTENT_TYPE,
            header::HeaderValue::from_static("application/json"),
        );
        return Ok(response);
    }
    let req = response.request();
    problem.instance = Some(req.path().to_owned());
    problem.request_id = req.extensions().get::<RequestId>().map(|id| id.0.clone());
    if let Some(state) = req.app_data::<actix_web::web::Data<crate::state::AppState>>() {
        problem.problem_type = format!(
            "{}{}",
            state.public_url().trim_end_matches('/'),
            problem.problem_type
        );
    }
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
            ServiceError::PayloadTooLarge { limit }.into()
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses_and_slugs_are_stable() {
        let cases: [(ApiError, u16, &str); 11] = [
            (
                ServiceError::Validation(vec![]).into(),
                422,
                "validation-failed",
            ),
            (
                ServiceError::Unauthenticated("x".into()).into(),
                401,
                "unauthenticated",
            ),
            (
                ServiceError::InvalidCredentials.into(),
                401,
                "invalid-credentials",
            ),
            (
                ServiceError::MissingScope(app::tokens::Scope::Keys).into(),
                403,
                "missing-scope",
            ),
            (ServiceError::AdminRequired.into(), 403, "admin-required"),
            (
                ServiceError::SeniorOwner("x".into()).into(),
                403,
                "senior-owner",
            ),
            (
                ServiceError::RegistrationClosed.into(),
                403,
                "registration-closed",
            ),
            (ServiceError::Conflict("x".into()).into(), 409, "conflict"),
            (
                ApiError::NotAcceptable { available: "x" },
                406,
                "not-acceptable",
            ),
            (
                ServiceError::RateLimited {
                    retry_after_secs: 3,
                }
                .into(),
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

    /// The CLI prints a lock problem's slug from core; the registry answers
    /// with its own table: they must name each kind alike.
    #[test]
    fn lock_problem_slugs_are_cores() {
        use LockProblemKind as K;
        for kind in [
            K::Missing,
            K::Files,
            K::Agents,
            K::Models,
            K::ModelsUnlocked,
            K::NotInRegistry,
            K::Unpinned,
            K::Unsatisfied,
            K::InterfaceUnprovided,
            K::Unrelated,
            K::Yanked,
        ] {
            let problem = ProblemType::from(kind);
            assert_eq!(problem.slug(), kind.slug(), "{kind:?}");
            assert_eq!(problem.status().as_u16(), 422, "{kind:?}");
        }
    }

    #[test]
    fn internal_errors_carry_no_internal_text() {
        let problem = ApiError::internal(anyhow::anyhow!("db password is hunter2")).problem();
        let json = serde_json::to_string(&problem).unwrap();
        assert!(!json.contains("hunter2"), "{json}");
    }
}

/// Every kind of problem the registry answers with. The `type` URIs and
/// the catalog's pages under `/problems/` are generated from this list
/// (`ProblemType::iter()`), and every [`ApiError`] maps to one kind by an
/// exhaustive match, so documents, pages and errors cannot drift apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq, strum::EnumIter)]
pub enum ProblemType {
    ValidationFailed,
    /// A named rule of a package format ([`Rule`]): one type per rule,
    /// listed right after `validation-failed` by [`ProblemType::all`].
    #[strum(disabled)]
    Rule(Rule),
    MalformedRequest,
    UnsupportedMediaType,
    PayloadTooLarge,
    RequestTimeout,
    Unauthenticated,
    InvalidCredentials,
    MissingScope,
    TokenNotForPackage,
    AdminRequired,
    SeniorOwner,
    RegistrationClosed,
    NotFound,
    NoA2aInterface,
    MethodNotAllowed,
    NotAcceptable,
    RangeNotSatisfiable,
    Conflict,
    RateLimited,
    Unavailable,
    ContainerInvalid,
    SignatureInvalid,
    KeyRevoked,
    UnknownKey,
    CosignatureInvalid,
    UnknownWitness,
    NotOwner,
    NoGrant,
    ProofInvalid,
    TooManyRecipients,
    TooManyGrants,
    AgentOpen,
    NoRecipients,
    NameTaken,
    VersionExists,
    Quarantined,
    PackageArchived,
    // Second factor.
    TwoFactorCodeRequired,
    TwoFactorCodeInvalid,
    TwoFactorEnrolmentRequired,
    TwoFactorRequired,
    LockMissing,
    LockFilesMismatch,
    LockAgentsMismatch,
    LockModelsUndeclared,
    LockModelsMissing,
    LockMismatch,
    LockUnpinned,
    LockUnsatisfied,
    LockUnrelated,
    LockYanked,
    Unsatisfiable,
    ResolveTimeout,
    ResolveTooComplex,
    Internal,
    // Trusted publishing.
    OidcUnknownIssuer,
    OidcBadSignature,
    OidcWrongAudience,
    OidcExpired,
    OidcReplayed,
    OidcNoTrustedPublisher,
    OidcMalformed,
    TrustedPublishingRequired,
    // Staged releases.
    VersionStaged,
    StagingRequired,
    StagedDecided,
    // Provenance.
    ProvenanceInvalid,
}

impl From<app::trusted_publishing::OidcRefusal> for ProblemType {
    fn from(refusal: app::trusted_publishing::OidcRefusal) -> Self {
        use app::trusted_publishing::OidcRefusal as R;
        match refusal {
            R::UnknownIssuer => Self::OidcUnknownIssuer,
            R::BadSignature => Self::OidcBadSignature,
            R::WrongAudience => Self::OidcWrongAudience,
            R::Expired => Self::OidcExpired,
            R::Replayed => Self::OidcReplayed,
            R::NoTrustedPublisher => Self::OidcNoTrustedPublisher,
            R::Malformed => Self::OidcMalformed,
        }
    }
}

impl From<LockProblemKind> for ProblemType {
    fn from(kind: LockProblemKind) -> Self {
        match kind {
            LockProblemKind::Missing => Self::LockMissing,
            LockProblemKind::Files => Self::LockFilesMismatch,
            LockProblemKind::Agents => Self::LockAgentsMismatch,
            LockProblemKind::Models => Self::LockModelsUndeclared,
            LockProblemKind::ModelsUnlocked => Self::LockModelsMissing,
            LockProblemKind::NotInRegistry => Self::LockMismatch,
            LockProblemKind::Unpinned => Self::LockUnpinned,
            LockProblemKind::Unsatisfied => Self::LockUnsatisfied,
            LockProblemKind::InterfaceUnprovided => Self::Rule(Rule::InterfaceUnprovided),
            LockProblemKind::Unrelated => Self::LockUnrelated,
            LockProblemKind::Yanked => Self::LockYanked,
        }
    }
}

impl ProblemType {
    /// Every kind, in the order the `/problems/` index lists them.
    pub fn all() -> impl Iterator<Item = ProblemType> {
        <Self as strum::IntoEnumIterator>::iter().flat_map(|p| {
            let rules = match p {
                Self::ValidationFailed => Rule::ALL,
                _ => &[],
            };
            std::iter::once(p).chain(rules.iter().map(|r| Self::Rule(*r)))
        })
    }

    /// The kind whose slug this is.
    pub fn from_slug(slug: &str) -> Option<ProblemType> {
        Self::all().find(|p| p.slug() == slug)
    }

    /// The last segment of the `type` URI.
    pub fn slug(self) -> &'static str {
        self.facts().0
    }

    pub fn status(self) -> StatusCode {
        StatusCode::from_u16(self.facts().1).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR)
    }

    /// The problem document's `title`.
    pub fn title(self) -> &'static str {
        self.facts().2
    }

    /// What it means and what to do about it, for its page.
    pub fn advice(self) -> &'static str {
        self.facts().3
    }

    fn facts(self) -> (&'static str, u16, &'static str, &'static str) {
        match self {
            Self::Rule(rule) => (rule.slug(), 422, rule.title(), rule.advice()),
            Self::ValidationFailed => (
                "validation-failed",
                422,
                "The request failed validation",
                "One or more fields are invalid; `errors` lists each with its path and what is wrong. Fix every one and send the request again.",
            ),
            Self::MalformedRequest => (
                "malformed-request",
                400,
                "Malformed request",
                "The body is not the JSON (or YAML) the route reads, names a field the route does not know, or the query string is invalid. `detail` names the first thing that could not be read.",
            ),
            Self::UnsupportedMediaType => (
                "unsupported-media-type",
                415,
                "Unsupported media type",
                "The body's `Content-Type` is not one the route reads; `detail` names the one it expects.",
            ),
            Self::PayloadTooLarge => (
                "payload-too-large",
                413,
                "Payload too large",
                "The body is larger than the route accepts. Containers are limited by the registry's upload limit; JSON bodies to a few hundred KiB.",
            ),
            Self::RequestTimeout => (
                "request-timeout",
                408,
                "Request timeout",
                "The body stopped arriving, or took longer than the registry waits. Send it again without pauses.",
            ),
            Self::Unauthenticated => (
                "unauthenticated",
                401,
                "Authentication required",
                "The route needs a token (`Authorization: Bearer …`) and none was sent, or it is malformed, expired or revoked. Create one with `agentlang login` or on your account page.",
            ),
            Self::InvalidCredentials => (
                "invalid-credentials",
                401,
                "Invalid credentials",
                "The username or the password is wrong. After repeated failures the registry slows further attempts for that username and address.",
            ),
            Self::MissingScope => (
                "missing-scope",
                403,
                "The token lacks a scope",
                "The token is valid but was created without the scope this route needs (`publish`, `yank`, `owners`, `keys`, `tokens`, `grants` or `admin`). Create a token with that scope.",
            ),
            Self::TokenNotForPackage => (
                "token-not-for-package",
                403,
                "The token is not valid for this package",
                "The token is restricted to other packages. Use a token created for this package, or one without a package restriction.",
            ),
            Self::AdminRequired => (
                "admin-required",
                403,
                "Admin required",
                "Only the registry's admins may do this (edit the model or protocol catalog). An operator makes admins with `AGENTLANG_REGISTRY_ADMINS` or `agentlang-registry admin grant USER`.",
            ),
            Self::SeniorOwner => (
                "senior-owner",
                403,
                "The owner has been an owner longer",
                "An owner may remove only owners who joined after them, so a package cannot be taken from its founder.",
            ),
            Self::RegistrationClosed => (
                "registration-closed",
                403,
                "Registration is closed",
                "This registry does not accept new accounts. Ask its operator for one.",
            ),
            Self::NotFound => (
                "not-found",
                404,
                "Not found",
                "No such route, package, version, key, token or account. Names are compared with case and `-`/`_` folded.",
            ),
            Self::NoA2aInterface => (
                "no-a2a-interface",
                404,
                "The agent has no A2A interface",
                "The registry serves a signed A2A Agent Card only for an agent version whose agent.yaml declares where it answers A2A (`protocols: [{name: a2a, endpoint: {url, binding}}]`) and whose agent.lock pins its a2a version. `detail` says which of these this version lacks; the newest version's card is the one not yanked. See /docs/a2a.",
            ),
            Self::MethodNotAllowed => (
                "method-not-allowed",
                405,
                "Method not allowed",
                "The path exists but does not answer this method; the `Allow` header lists the methods it does answer.",
            ),
            Self::NotAcceptable => (
                "not-acceptable",
                406,
                "Not acceptable",
                "The `Accept` header admits none of the forms the route answers in; `detail` lists them. Resolve answers `application/yaml` (the default) or `application/json`.",
            ),
            Self::RangeNotSatisfiable => (
                "range-not-satisfiable",
                416,
                "Range not satisfiable",
                "The `Range` header asks for bytes past the end of the download; `Content-Range: bytes */<size>` says how many there are. Ask again for a range inside them, or without `Range` for all of it.",
            ),
            Self::Conflict => (
                "conflict",
                409,
                "Conflict",
                "The request clashes with the registry's current state (an account or key that already exists, an invitation already answered). `detail` says which.",
            ),
            Self::RateLimited => (
                "rate-limited",
                429,
                "Too many requests",
                "This client sent more requests than the registry allows per minute. Wait the seconds `Retry-After` gives and try again.",
            ),
            Self::Unavailable => (
                "unavailable",
                503,
                "Service unavailable",
                "A backend (database or object storage) is out of reach, or the registry is at its limit of uploads in flight. Nothing was written; retry after `Retry-After` seconds.",
            ),
            Self::ContainerInvalid => (
                "container-invalid",
                422,
                "The container is invalid",
                "The upload is not a valid `.agent`, `.tool` or `.protocol` container, or its package does not validate; `detail` and `errors` say where. `agentlang validate` and `agentlang verify` report the same locally.",
            ),
            Self::SignatureInvalid => (
                "signature-invalid",
                422,
                "The signature does not verify",
                "The container's Ed25519 signature does not verify against the key it names: the manifest was changed after signing, or it was signed with another key.",
            ),
            Self::KeyRevoked => (
                "key-revoked",
                422,
                "The signing key is revoked",
                "The container is signed with a key its owner revoked. Sign with a key in force (`agentlang keys list`).",
            ),
            Self::CosignatureInvalid => (
                "cosignature-invalid",
                422,
                "The cosignature does not verify",
                "`POST /log/witness` takes the checkpoint `GET /log/checkpoint` serves with the witness's `cosignature/v1` signature line added (c2sp.org/tlog-cosignature). A signature in it does not verify, or the note is not the registry's checkpoint; `detail` says which.",
            ),
            Self::UnknownWitness => (
                "unknown-witness",
                403,
                "Not a configured witness",
                "No signature in the note is by a witness this registry is configured to accept (`AGENTLANG_REGISTRY_TLOG_WITNESSES`). Ask the operator to add your witness's verifier key.",
            ),
            Self::UnknownKey => (
                "unknown-key",
                422,
                "Unknown signing key",
                "The container is signed with a key not registered to the publishing account. Register it first with `agentlang keys register`.",
            ),
            Self::NotOwner => (
                "not-owner",
                403,
                "Not an owner",
                "Only the package's owners may publish, yank, manage owners or grant a sealed agent's prompt key. An owner can invite you.",
            ),
            Self::NoGrant => (
                "no-grant",
                404,
                "No grant covers this version",
                "The agent is sealed, and you hold no live grant of its prompt key that covers this version. `detail` names its owners: ask one to run `agentlang grant NAME --to USERNAME` (after you registered a prompt recipient with `agentlang keygen --prompt` and `agentlang keys register --prompt`).",
            ),
            Self::ProofInvalid => (
                "proof-invalid",
                422,
                "The recipient proof is invalid",
                "A prompt recipient is registered with the plaintext of the challenge the registry encrypted to it (`POST /api/v1/account/prompt-recipients/challenge`), within ten minutes. This proof is for another account, recipient or registry, was altered, or has expired. Ask for a new challenge; `agentlang keys register --prompt` does both steps.",
            ),
            Self::TooManyRecipients => (
                "too-many-recipients",
                409,
                "Too many prompt recipients",
                "An account has at most 8 prompt recipients. Remove one you no longer use (`DELETE /api/v1/account/prompt-recipients/{recipient}`) and register the new one.",
            ),
            Self::TooManyGrants => (
                "too-many-grants",
                409,
                "Too many grants",
                "An agent has at most 1,000 live grants of its prompt key. Revoke grants no longer needed (`agentlang grant NAME --to USERNAME --revoke`) first.",
            ),
            Self::AgentOpen => (
                "agent-open",
                409,
                "The agent is open",
                "The agent (or this version of it) was built open: its prompt.yaml is in plaintext, so anyone who downloads it can read and run it, and there is no prompt key to grant or fetch.",
            ),
            Self::NoRecipients => (
                "no-recipients",
                422,
                "The account has no prompt recipient",
                "A grant is wrapped to the grantee's prompt recipients, and this account has registered none. They must run `agentlang keygen --prompt` and `agentlang keys register --prompt` first.",
            ),
            Self::NameTaken => (
                "name-taken",
                409,
                "The name is taken",
                "Another package has this name, or one that differs only in case or `-`/`_`. Choose another name.",
            ),
            Self::VersionExists => (
                "version-exists",
                409,
                "The version exists",
                "Versions are never reused, even after a yank. Publish a new version; identical bytes of the same version are accepted as a retry.",
            ),
            Self::Quarantined => (
                "quarantined",
                410,
                "Quarantined",
                "An admin quarantined the package or version (`detail` names it and why): it cannot be downloaded, resolved or given new versions until an admin lifts the quarantine. Unlike a yanked version, which existing lockfiles still install, a quarantined one installs nowhere. Pin or require another version, or another package. See /docs/statuses.",
            ),
            Self::PackageArchived => (
                "package-archived",
                409,
                "The package is archived",
                "Its owners archived the package: it takes no new versions, while the ones published still install. An owner can set it `active` again (`agentlang status NAME active`). See /docs/statuses.",
            ),
            Self::TwoFactorCodeRequired => (
                "two-factor-code-required",
                401,
                "A second-factor code is required",
                "The account has a second factor (TOTP): this act needs a current code from its authenticator app, or one of its recovery codes, in the `AgentLang-OTP` header (the `otp` field when minting a token or in the catalog's forms). The CLI takes `--otp CODE` or `AGENTLANG_OTP`, or asks on a terminal. See /docs/two-factor.",
            ),
            Self::TwoFactorCodeInvalid => (
                "two-factor-code-invalid",
                401,
                "The second-factor code is not valid",
                "The code is wrong, outside its 30-second window (one window either side is accepted), or was used already: each code, and each recovery code, works once. Wait for the next code and try again. Wrong codes spend the account's attempts. See /docs/two-factor.",
            ),
            Self::TwoFactorEnrolmentRequired => (
                "two-factor-enrolment-required",
                403,
                "A second factor is required",
                "The package's publishing policy requires its owners to use a second factor, and this account has none. Enable one (`agentlang 2fa enable`) and try again. See /docs/two-factor.",
            ),
            Self::TwoFactorRequired => (
                "two-factor-required",
                403,
                "The token was not minted with a second factor",
                "The package's publishing policy requires a second factor: a publish needs a token minted with a TOTP code (`agentlang login --otp CODE`, or `otp` in POST /api/v1/tokens) or a trusted-publishing token. See /docs/two-factor.",
            ),
            Self::LockMissing => (
                "lock-missing",
                422,
                "The agent has no agent.lock",
                "Every agent carries an agent.lock, whether or not it requires registry tools: it hashes the package's files and locks its models. Run `agentlang lock` (or `agentlang build`, which locks) and publish again.",
            ),
            Self::LockFilesMismatch => (
                "lock-files-mismatch",
                422,
                "agent.lock does not hash the package's files",
                "agent.lock's `files` section must hash exactly the members `agentlang lock` hashes (every member but agent.lock and the subagents' files; an encrypted prompt under its plaintext name): an entry that differs, one for no member, and a member without one are each refused. Run `agentlang lock` after editing files.",
            ),
            Self::LockAgentsMismatch => (
                "lock-agents-mismatch",
                422,
                "agent.lock does not pin the subagents",
                "agent.lock's `agents` section does not pin the co-located subagents by hash. Run `agentlang lock`.",
            ),
            Self::LockModelsUndeclared => (
                "lock-models-undeclared",
                422,
                "agent.lock names undeclared models",
                "agent.lock's `models` section names models agent.yaml does not declare. Run `agentlang lock`.",
            ),
            Self::LockModelsMissing => (
                "lock-models-missing",
                422,
                "agent.lock does not lock a declared model",
                "agent.lock's `models` section must name every model agent.yaml and the subagents declare. Run `agentlang lock`.",
            ),
            Self::LockMismatch => (
                "lock-mismatch",
                422,
                "agent.lock does not match the registry",
                "agent.lock pins tool versions, hashes or protocol versions this registry does not hold. Run `agentlang lock --update` against this registry.",
            ),
            Self::LockUnpinned => (
                "lock-unpinned",
                422,
                "agent.lock leaves a requirement unpinned",
                "A tool requirement of the agent or of a pinned tool has no pin. Run `agentlang lock`.",
            ),
            Self::LockUnsatisfied => (
                "lock-unsatisfied",
                422,
                "agent.lock does not satisfy a requirement",
                "A pin does not satisfy the requirement it answers. Run `agentlang lock`.",
            ),
            Self::LockUnrelated => (
                "lock-unrelated",
                422,
                "agent.lock pins an unrelated tool",
                "agent.lock pins tools no requirement leads to. Run `agentlang lock`.",
            ),
            Self::LockYanked => (
                "lock-yanked",
                422,
                "agent.lock pins a yanked version",
                "A newly pinned version was yanked. Run `agentlang lock --update` to move to a live version.",
            ),
            Self::Unsatisfiable => (
                "unsatisfiable",
                422,
                "The requirements cannot be met",
                "No set of published versions meets every requirement; `detail` explains why and `conflicts` lists the clashing requirements. Relax a requirement or publish a version that fits.",
            ),
            Self::ResolveTooComplex => (
                "resolve-too-complex",
                422,
                "The requirements are too intricate to resolve",
                "The solver stopped after its bound on work without an answer. Pin some tools (a lock's pins are kept) or narrow their requirements.",
            ),
            Self::ResolveTimeout => (
                "resolve-timeout",
                503,
                "Resolution timed out",
                "Resolution did not finish within the registry's time limit. Retry; if it keeps happening, narrow the requirements.",
            ),
            Self::Internal => (
                "internal",
                500,
                "Internal server error",
                "The registry failed; the cause is in its log under the request id. Nothing half-done is visible. Report it to the operator with the `request_id`.",
            ),
            // Trusted publishing (docs/trusted-publishing.md).
            Self::OidcUnknownIssuer => (
                "oidc-unknown-issuer",
                401,
                "The ID token's issuer is not trusted",
                "The registry exchanges ID tokens only from the OpenID Connect issuers its operator configured (`AGENTLANG_REGISTRY_OIDC_ISSUERS`); `detail` names the issuer the token claims. See /docs/trusted-publishing.",
            ),
            Self::OidcBadSignature => (
                "oidc-bad-signature",
                401,
                "The ID token's signature does not verify",
                "The token is not signed by a key its issuer publishes (in its JWKS), or uses an algorithm other than RS256 or ES256. Send the ID token exactly as the CI issued it.",
            ),
            Self::OidcWrongAudience => (
                "oidc-wrong-audience",
                401,
                "The ID token is for another audience",
                "Its `aud` must be this registry's audience (`detail` names it): request the ID token with that audience (GitHub: `core.getIDToken(aud)` or `&audience=` on the request URL; GitLab: `id_tokens: ...: aud:`).",
            ),
            Self::OidcExpired => (
                "oidc-expired",
                401,
                "The ID token has expired or is not yet valid",
                "ID tokens live minutes; request a fresh one from the CI and exchange it at once.",
            ),
            Self::OidcReplayed => (
                "oidc-replayed",
                401,
                "The ID token was already exchanged",
                "An ID token (its `jti`) is exchanged once. Request a new one from the CI.",
            ),
            Self::OidcNoTrustedPublisher => (
                "oidc-no-trusted-publisher",
                403,
                "No package trusts this identity",
                "No trusted publisher matches the token's issuer, repository, workflow file and environment (`detail` lists the claims seen). An owner adds one with `agentlang trust add`. See /docs/trusted-publishing.",
            ),
            Self::OidcMalformed => (
                "oidc-malformed",
                400,
                "The ID token is malformed",
                "The body must be `{\"jwt\": \"...\"}` holding a signed JWT with `iss`, `aud`, `exp`, `jti` and the repository and workflow claims of GitHub Actions or GitLab CI; `detail` names what is missing.",
            ),
            Self::TrustedPublishingRequired => (
                "trusted-publishing-required",
                403,
                "The package takes only trusted publishing",
                "Its owners set `trusted_publishing_only`: new versions are published only from a trusted CI run, with a token exchanged at `POST /api/v1/trusted-publishing/tokens`. See /docs/trusted-publishing.",
            ),
            Self::VersionStaged => (
                "version-staged",
                409,
                "The version is staged",
                "A staged version holds this number (pending an owner's decision, or rejected): a staged number is taken for good, like a published one. Publish or stage another version; an owner approves a pending one with `agentlang stage approve ID`. See /docs/staged-releases.",
            ),
            Self::StagingRequired => (
                "staging-required",
                403,
                "The package takes only staged versions",
                "Its owners set `staging_required`: a new version is staged (`agentlang publish --stage`, `POST /api/v1/publish?stage=true`) and published when an owner approves it. See /docs/staged-releases.",
            ),
            Self::StagedDecided => (
                "staged-decided",
                409,
                "The staged version was decided",
                "It was approved or rejected already (`detail` says which); a decision is final. `GET /api/v1/staged/{id}` shows its state. See /docs/staged-releases.",
            ),
            Self::ProvenanceInvalid => (
                "provenance-invalid",
                422,
                "The provenance does not verify",
                "The `provenance` part of the publish is not a DSSE envelope of an in-toto Statement v1 (at most 64 KiB and 4 signatures), no signature verifies with a registered, unrevoked key of the publisher, or no subject names the container's SHA-256 (`detail` says which). Nothing was published. See /docs/provenance.",
            ),
        }
    }
}
