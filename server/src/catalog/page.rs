//! What every catalog page answers with: the HTML of a page, the page of
//! a failure ([`CatalogError`]), a redirect, and the forms they read.

use actix_web::{
    HttpResponse, ResponseError,
    http::{
        StatusCode,
        header::{self, HeaderValue},
    },
};
use agentlang_web::{
    Template,
    model::Chrome,
    pages::{ErrorPage, NotFoundPage},
};
use app::ServiceError;

use crate::error::ApiError;

/// The catalog's Content-Security-Policy: only this origin, no framing, and
/// forms post only here.
pub const CONTENT_SECURITY_POLICY: &str =
    "default-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'";

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
    /// The page exists, not with this method; the methods it answers.
    #[error("method not allowed")]
    MethodNotAllowed(Vec<&'static str>),
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

/// A rule's refusal as the page it shows. Only refusals a page can meet
/// through a rule it calls are mapped; the rest are bugs.
impl From<ServiceError> for CatalogError {
    fn from(err: ServiceError) -> Self {
        match err {
            ServiceError::NotFound(_) => Self::NotFound,
            ServiceError::RateLimited { .. } => Self::RateLimited,
            ServiceError::Unavailable(_) | ServiceError::ResolveTimeout(_) => Self::Unavailable,
            ServiceError::Internal(cause) => Self::Internal(cause),
            other => Self::internal(anyhow::anyhow!("{other}")),
        }
    }
}

impl From<ApiError> for CatalogError {
    fn from(err: ApiError) -> Self {
        match err {
            ApiError::Service(err) => err.into(),
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
pub(super) struct FailedPage(pub(super) StatusCode);

impl ResponseError for CatalogError {
    fn status_code(&self) -> StatusCode {
        match self {
            Self::NotFound => StatusCode::NOT_FOUND,
            Self::BadRequest(_) => StatusCode::BAD_REQUEST,
            Self::Forbidden(_) => StatusCode::FORBIDDEN,
            Self::MethodNotAllowed(_) => StatusCode::METHOD_NOT_ALLOWED,
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
        if let Self::MethodNotAllowed(allow) = self
            && let Ok(value) = HeaderValue::from_str(&allow.join(", "))
        {
            response.headers_mut().insert(header::ALLOW, value);
        }
        response.extensions_mut().insert(FailedPage(status));
        response
    }
}

/// The HTML page for a failure status.
pub(super) fn error_page(status: StatusCode, request_id: Option<String>) -> HttpResponse {
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
