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
pub mod advisories;
pub mod assets;
pub mod docs;
pub mod home;
pub mod interfaces;
pub mod keys;
pub mod log;
pub mod packages;
pub mod page;
pub mod problems;
pub mod protocols;
pub mod publishers;
pub mod replay;
pub mod search;
pub mod session;
pub mod skills;
pub mod views;

use crate::request_id::RequestId;
use actix_web::{
    HttpMessage, HttpRequest, HttpResponse, Route,
    body::{BoxBody, MessageBody},
    dev::{ResourceDef, ServiceRequest, ServiceResponse},
    http::{
        Method, StatusCode,
        header::{self, HeaderValue},
    },
    middleware::{Next, from_fn},
    web::{self, Bytes},
};
pub use page::{
    CONTENT_SECURITY_POLICY, CatalogError, FormFields, HTML, html, html_status, see_other,
};
use page::{FailedPage, error_page};

/// Largest form body a catalog page accepts (a PEM key is about 120 bytes).
const FORM_BODY_LIMIT: usize = 64 * 1024;

/// Every catalog page: its path template, the method it answers and its
/// handler, in the order they are matched. [`configure`] registers them and
/// [`fallback`] reads the same list for `Allow`, so the two cannot differ.
fn pages() -> Vec<(&'static str, Method, Route)> {
    macro_rules! page {
        ($path:literal, $method:ident, $handler:expr) => {
            (
                $path,
                Method::$method,
                web::route().method(Method::$method).to($handler),
            )
        };
    }
    vec![
        page!("/", GET, home::home),
        page!("/docs", GET, home::docs),
        page!("/docs/", GET, docs::docs_slash),
        page!("/docs/{page}", GET, docs::show_doc),
        page!("/problems/", GET, problems::list_problems),
        page!("/problems", GET, problems::list_problems),
        page!("/problems/{slug}", GET, problems::show_problem),
        page!("/search", GET, search::search),
        page!("/log", GET, log::show_log),
        page!("/advisories", GET, advisories::list_advisories),
        page!("/advisories/{id}", GET, advisories::show_advisory),
        page!("/static/{file}", GET, assets::static_file),
        page!("/agents/{name}", GET, packages::agent_latest),
        // Before `/agents/{name}/{version}`, which would take "diff".
        page!("/agents/{name}/diff", GET, packages::agent_diff),
        page!("/agents/{name}/{version}", GET, packages::agent_version),
        page!("/tools/{name}", GET, packages::tool_latest),
        page!("/tools/{name}/{version}", GET, packages::tool_version),
        page!("/skills/{name}", GET, skills::skill_latest),
        page!("/skills/{name}/{version}", GET, skills::skill_version),
        page!("/{kind}/{name}/{version}/yank", POST, account::yank),
        page!("/{kind}/{name}/{version}/unyank", POST, account::unyank),
        page!("/interfaces/{name}", GET, interfaces::interface),
        page!("/protocols/{name}", GET, protocols::protocol),
        page!(
            "/protocols/{name}/{version}",
            GET,
            protocols::protocol_version
        ),
        page!("/replay", GET, replay::replay_form),
        page!("/replay", POST, replay::replay),
        page!("/publishers/{name}", GET, publishers::publisher),
        page!("/keys/{key_id}", GET, keys::key),
        page!("/login", GET, session::login_form),
        page!("/login", POST, session::login),
        page!("/logout", POST, session::logout),
        page!("/account", GET, account::account),
        page!("/account/tokens", POST, account::create_token),
        // Second factor (TOTP).
        page!("/account/2fa", POST, account::enable_two_factor),
        page!("/account/2fa/confirm", POST, account::confirm_two_factor),
        page!("/account/2fa/disable", POST, account::disable_two_factor),
        page!("/account/password", POST, account::change_password),
        page!(
            "/account/sessions/end-all",
            POST,
            session::logout_everywhere
        ),
        page!(
            "/account/invitations/{kind}/{name}/{answer}",
            POST,
            account::answer_invitation
        ),
        page!("/account/tokens/{id}/revoke", POST, account::revoke_token),
        page!("/account/keys", POST, account::register_key),
        page!("/account/keys/{key_id}/revoke", POST, account::revoke_key),
        page!("/account/{kind}/{name}/owners", POST, account::add_owner),
        page!(
            "/account/{kind}/{name}/owners/remove",
            POST,
            account::remove_owner
        ),
    ]
}

/// Registers every catalog route. Call it after the API's routes: its scope
/// has an empty prefix and answers whatever nothing else matched.
pub fn configure(cfg: &mut web::ServiceConfig) {
    // Every path but the API's: registered before the API's routes, so a
    // page is found without trying each of their patterns, and the API's
    // paths (unknown ones included) never reach the catalog.
    let mut scope = web::scope("")
        .guard(actix_web::guard::fn_guard(|ctx| {
            !crate::openapi::is_machine_path(ctx.head().uri.path())
        }))
        .app_data(web::PayloadConfig::new(FORM_BODY_LIMIT))
        .wrap(from_fn(catalog_responses));
    for (path, _, route) in pages() {
        scope = scope.route(path, route);
    }
    cfg.service(scope.default_service(web::to(fallback)));
}

/// The methods the catalog answers at `path` (`HEAD` wherever `GET`), or
/// `None` when no page template matches it.
fn catalog_methods(path: &str) -> Option<Vec<&'static str>> {
    use std::sync::OnceLock;
    static TABLE: OnceLock<Vec<(ResourceDef, Method)>> = OnceLock::new();
    let table = TABLE.get_or_init(|| {
        pages()
            .into_iter()
            .map(|(path, method, _)| (ResourceDef::new(path), method))
            .collect()
    });
    let mut allow = Vec::new();
    for (_, method) in table.iter().filter(|(def, _)| def.is_match(path)) {
        let names: &[&'static str] = match *method {
            Method::GET => &["GET", "HEAD"],
            Method::POST => &["POST"],
            _ => &[],
        };
        for name in names {
            if !allow.contains(name) {
                allow.push(*name);
            }
        }
    }
    (!allow.is_empty()).then_some(allow)
}

/// Whatever no page matched: an HTML 404 page, or a 405 page with `Allow`
/// for a page asked with another method.
async fn fallback(req: HttpRequest) -> Result<HttpResponse, CatalogError> {
    let method = req.method().as_str();
    match catalog_methods(req.path()).filter(|allow| !allow.contains(&method)) {
        // A page asked with another method (OPTIONS too).
        Some(allow) => Err(CatalogError::MethodNotAllowed(allow)),
        None => Err(CatalogError::NotFound),
    }
}

/// Middleware on every catalog response: security headers, and the request
/// id on error pages.
async fn catalog_responses(
    req: ServiceRequest,
    next: Next<impl MessageBody + 'static>,
) -> Result<ServiceResponse<BoxBody>, actix_web::Error> {
    let request_id = req.extensions().get::<RequestId>().map(|id| id.0.clone());
    let is_get = req.method() == Method::GET;
    let response = next.call(req).await?;
    let response = if is_get {
        with_etag(response).await?
    } else {
        response.map_into_boxed_body()
    };
    let failed = response
        .response()
        .extensions()
        .get::<FailedPage>()
        .copied();
    let mut response = match failed {
        Some(FailedPage(status)) if status != StatusCode::NOT_FOUND => {
            // The page again with the request id; its `Allow` carried over.
            let allow = response.headers().get(header::ALLOW).cloned();
            let (req, _) = response.into_parts();
            let mut page = error_page(status, request_id);
            if let Some(allow) = allow {
                page.headers_mut().insert(header::ALLOW, allow);
            }
            ServiceResponse::new(req, page)
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

/// A rendered page with the `ETag` of its bytes, or 304 when the client's
/// copy (`If-None-Match`) is current: a revisit costs the rendering, not
/// the transfer. Pages that set a cookie (sign-in) or carry their own tag
/// (static files) are left as they are.
async fn with_etag(
    response: ServiceResponse<impl MessageBody + 'static>,
) -> Result<ServiceResponse<BoxBody>, actix_web::Error> {
    if response.status() != StatusCode::OK
        || response.headers().contains_key(header::ETAG)
        || response.headers().contains_key(header::SET_COOKIE)
    {
        return Ok(response.map_into_boxed_body());
    }
    let (req, response) = response.into_parts();
    let (head, body) = response.into_parts();
    let body = actix_web::body::to_bytes(body)
        .await
        .map_err(|_| actix_web::error::ErrorInternalServerError("page body"))?;
    let etag = crate::conditional::etag_of(&body);
    let current = crate::conditional::if_none_match(&req, &etag);
    // A 304 keeps the page's headers (Cache-Control, Vary) without its body.
    let mut response = head.set_body(BoxBody::new(if current { Bytes::new() } else { body }));
    if current {
        *response.status_mut() = StatusCode::NOT_MODIFIED;
    }
    if let Ok(value) = HeaderValue::from_str(&etag) {
        response.headers_mut().insert(header::ETAG, value);
    }
    Ok(ServiceResponse::new(req, response))
}
