//! The web catalog: server-rendered HTML pages over the same storage the
//! API uses. Pages come from `agentlang_web` (askama templates, no IO); this
//! module fetches the data, fills the view models and answers HTML.
//!
//! Every catalog response carries `Content-Security-Policy: default-src
//! 'self'` (the pages have no inline script or style and load nothing from
//! another origin) and answers failures with an HTML page, never with
//! problem+json; the API under `/api` keeps problem+json, also for unknown
//! paths.
//!
//! Signed-in pages use a cookie session stored in the database
//! ([`session`]), so any replica serves it; every POST form carries the
//! session's CSRF token and a POST without the right one gets a 403 page.

pub mod account;
pub mod assets;
pub mod home;
pub mod keys;
pub mod packages;
pub mod problems;
pub mod protocols;
pub mod publishers;
pub mod replay;
pub mod search;
pub mod session;
pub mod views;

use actix_web::{
    HttpMessage, HttpRequest, HttpResponse, ResponseError,
    body::{BoxBody, MessageBody},
    dev::{ServiceRequest, ServiceResponse},
    http::{
        StatusCode,
        header::{self, HeaderValue},
    },
    middleware::{Next, from_fn},
    web,
};
use agentlang_web::{
    Template,
    model::Chrome,
    pages::{ErrorPage, NotFoundPage},
};

use crate::{error::ApiError, request_id::RequestId};

/// The catalog's Content-Security-Policy: only this origin, no framing, and
/// forms post only here.
pub const CONTENT_SECURITY_POLICY: &str =
    "default-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'";

/// Largest form body a catalog page accepts (a PEM key is about 120 bytes).
const FORM_BODY_LIMIT: usize = 64 * 1024;

/// Paths that belong to the API and protocol endpoints: unknown ones there
/// answer problem+json, not an HTML page.
const MACHINE_PREFIXES: [&str; 6] = [
    "/api/",
    "/clowl",
    "/moltspeak/",
    "/.well-known/",
    "/healthz",
    "/metrics",
];

/// Registers every catalog route. Call it after the API's routes: its scope
/// has an empty prefix and answers whatever nothing else matched.
pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(
        web::scope("")
            .app_data(web::PayloadConfig::new(FORM_BODY_LIMIT))
            .wrap(from_fn(catalog_responses))
            .route("/", web::get().to(home::home))
            .route("/docs", web::get().to(home::docs))
            .route("/problems/", web::get().to(problems::list_problems))
            .route("/problems", web::get().to(problems::list_problems))
            .route("/problems/{slug}", web::get().to(problems::show_problem))
            .route("/search", web::get().to(search::search))
            .route("/static/{file}", web::get().to(assets::static_file))
            .route("/agents/{name}", web::get().to(packages::agent_latest))
            // Before `/agents/{name}/{version}`, which would take "diff".
            .route("/agents/{name}/diff", web::get().to(packages::agent_diff))
            .route(
                "/agents/{name}/{version}",
                web::get().to(packages::agent_version),
            )
            .route("/tools/{name}", web::get().to(packages::tool_latest))
            .route(
                "/tools/{name}/{version}",
                web::get().to(packages::tool_version),
            )
            .route(
                "/{kind}/{name}/{version}/yank",
                web::post().to(account::yank),
            )
            .route(
                "/{kind}/{name}/{version}/unyank",
                web::post().to(account::unyank),
            )
            .route("/protocols/{name}", web::get().to(protocols::protocol))
            .route(
                "/protocols/{name}/{version}",
                web::get().to(protocols::protocol_version),
            )
            .route("/replay", web::get().to(replay::replay_form))
            .route("/replay", web::post().to(replay::replay))
            .route("/publishers/{name}", web::get().to(publishers::publisher))
            .route("/keys/{key_id}", web::get().to(keys::key))
            .route("/login", web::get().to(session::login_form))
            .route("/login", web::post().to(session::login))
            .route("/logout", web::post().to(session::logout))
            .route("/account", web::get().to(account::account))
            .route("/account/tokens", web::post().to(account::create_token))
            .route(
                "/account/password",
                web::post().to(account::change_password),
            )
            .route(
                "/account/sessions/end-all",
                web::post().to(session::logout_everywhere),
            )
            .route(
                "/account/invitations/{kind}/{name}/{answer}",
                web::post().to(account::answer_invitation),
            )
            .route(
                "/account/tokens/{id}/revoke",
                web::post().to(account::revoke_token),
            )
            .route("/account/keys", web::post().to(account::register_key))
            .route(
                "/account/keys/{key_id}/revoke",
                web::post().to(account::revoke_key),
            )
            .route(
                "/account/{kind}/{name}/owners",
                web::post().to(account::add_owner),
            )
            .route(
                "/account/{kind}/{name}/owners/remove",
                web::post().to(account::remove_owner),
            )
            .default_service(web::to(fallback)),
    );
}

/// Whatever no route matched: an HTML 404 page, or the API's problem for
/// machine paths.
async fn fallback(req: HttpRequest) -> Result<HttpResponse, actix_web::Error> {
    let path = req.path();
    if MACHINE_PREFIXES.iter().any(|p| path.starts_with(p)) {
        // A documented path asked with another method (OPTIONS included).
        if let Some(allow) = crate::openapi::allowed_methods(path)
            && !allow.contains(&req.method().as_str())
        {
            return Err(ApiError::MethodNotAllowed {
                method: req.method().to_string(),
                allow,
            }
            .into());
        }
        return Err(ApiError::NotFound(format!("route {path}")).into());
    }
    if req.method() != actix_web::http::Method::GET && req.method() != actix_web::http::Method::HEAD
    {
        return Err(CatalogError::MethodNotAllowed.into());
    }
    Err(CatalogError::NotFound.into())
}

/// Why a catalog page could not be shown. Each renders as an HTML page with
/// a fixed message; internal causes are logged, never shown.
#[derive(Debug, thiserror::Error)]
pub enum CatalogError {
    #[error("page not found")]
    NotFound,
    #[error("the request could not be understood: {0}")]
    BadRequest(String),
    #[error("forbidden: {0}")]
    Forbidden(&'static str),
    #[error("method not allowed")]
    MethodNotAllowed,
    #[error("too many requests")]
    RateLimited,
    #[error("the page needs a signed-in session")]
    SignInRequired,
    /// A backend is out of reach, or the registry is overloaded: retry.
    #[error("temporarily unavailable")]
    Unavailable,
    #[error("internal error")]
    Internal(#[source] anyhow::Error),
}

impl CatalogError {
    pub fn internal(err: impl Into<anyhow::Error>) -> Self {
        Self::Internal(err.into())
    }
}

impl From<sqlx::Error> for CatalogError {
    fn from(err: sqlx::Error) -> Self {
        ApiError::from(err).into()
    }
}

/// A service's refusal as the page it shows. Only refusals a page can meet
/// through a service call are mapped; the rest are bugs.
impl From<ApiError> for CatalogError {
    fn from(err: ApiError) -> Self {
        match err {
            ApiError::NotFound(_) => Self::NotFound,
            ApiError::RateLimited { .. } => Self::RateLimited,
            ApiError::Unavailable(_) | ApiError::ResolveTimeout(_) => Self::Unavailable,
            ApiError::Internal(cause) => Self::Internal(cause),
            other => Self::internal(anyhow::anyhow!("{other}")),
        }
    }
}

impl From<askama::Error> for CatalogError {
    fn from(err: askama::Error) -> Self {
        Self::internal(err)
    }
}

/// Left in a failed response's extensions so [`catalog_responses`] can add
/// the request id, which `error_response` cannot see.
#[derive(Debug, Clone, Copy)]
struct FailedPage(StatusCode);

impl ResponseError for CatalogError {
    fn status_code(&self) -> StatusCode {
        match self {
            Self::NotFound => StatusCode::NOT_FOUND,
            Self::BadRequest(_) => StatusCode::BAD_REQUEST,
            Self::Forbidden(_) => StatusCode::FORBIDDEN,
            Self::MethodNotAllowed => StatusCode::METHOD_NOT_ALLOWED,
            Self::RateLimited => StatusCode::TOO_MANY_REQUESTS,
            Self::SignInRequired => StatusCode::SEE_OTHER,
            Self::Unavailable => StatusCode::SERVICE_UNAVAILABLE,
            Self::Internal(_) => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }

    fn error_response(&self) -> HttpResponse {
        match self {
            Self::Internal(cause) => {
                tracing::error!(error = format!("{cause:#}"), "catalog page failed");
            }
            Self::Forbidden(why) => tracing::info!(reason = why, "catalog request refused"),
            _ => {}
        }
        if let Self::SignInRequired = self {
            return see_other("/login");
        }
        let status = self.status_code();
        let mut response = error_page(status, None);
        response.extensions_mut().insert(FailedPage(status));
        response
    }
}

/// The HTML page for a failure status.
fn error_page(status: StatusCode, request_id: Option<String>) -> HttpResponse {
    let body = if status == StatusCode::NOT_FOUND {
        NotFoundPage {
            chrome: Chrome::default(),
        }
        .render()
    } else {
        ErrorPage::new(Chrome::default(), status.as_u16(), request_id).render()
    };
    // Both templates take only fixed text; rendering cannot fail on data.
    HttpResponse::build(status)
        .content_type(HTML)
        .body(body.unwrap_or_else(|_| status.to_string()))
}

pub const HTML: &str = "text/html; charset=utf-8";

/// Renders a page with status 200.
pub fn html(page: &impl Template) -> Result<HttpResponse, CatalogError> {
    html_status(StatusCode::OK, page)
}

pub fn html_status(status: StatusCode, page: &impl Template) -> Result<HttpResponse, CatalogError> {
    Ok(HttpResponse::build(status)
        .content_type(HTML)
        .body(page.render()?))
}

/// 303 See Other: where a form POST sends the browser, so a reload does
/// not post again.
pub fn see_other(location: &str) -> HttpResponse {
    HttpResponse::SeeOther()
        .insert_header((header::LOCATION, location))
        .finish()
}

/// Middleware on every catalog response: security headers, and the request
/// id on error pages.
async fn catalog_responses(
    req: ServiceRequest,
    next: Next<impl MessageBody + 'static>,
) -> Result<ServiceResponse<BoxBody>, actix_web::Error> {
    let request_id = req.extensions().get::<RequestId>().map(|id| id.0.clone());
    let response = next.call(req).await?;
    let failed = response
        .response()
        .extensions()
        .get::<FailedPage>()
        .copied();
    let mut response = match failed {
        Some(FailedPage(status)) if status != StatusCode::NOT_FOUND => {
            let (req, _) = response.into_parts();
            ServiceResponse::new(req, error_page(status, request_id))
        }
        _ => response.map_into_boxed_body(),
    };
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(CONTENT_SECURITY_POLICY),
    );
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    headers.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("same-origin"),
    );
    headers.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    Ok(response)
}

/// A urlencoded form body: repeated fields (checkbox groups) keep every
/// value, which `web::Form` cannot express.
#[derive(Debug, Default)]
pub struct FormFields(Vec<(String, String)>);

impl FormFields {
    pub fn parse(body: &[u8]) -> Self {
        Self(
            form_urlencoded::parse(body)
                .map(|(k, v)| (k.into_owned(), v.into_owned()))
                .collect(),
        )
    }

    /// The first value of `name`, or "".
    pub fn get(&self, name: &str) -> &str {
        self.0
            .iter()
            .find(|(k, _)| k == name)
            .map_or("", |(_, v)| v.as_str())
    }

    pub fn get_all(&self, name: &str) -> Vec<&str> {
        self.0
            .iter()
            .filter(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn forms_keep_repeated_fields() {
        let form = FormFields::parse(b"name=CI+publish&scopes=publish&scopes=yank&x=%2F");
        assert_eq!(form.get("name"), "CI publish");
        assert_eq!(form.get_all("scopes"), ["publish", "yank"]);
        assert_eq!(form.get("x"), "/");
        assert_eq!(form.get("missing"), "");
    }
}
