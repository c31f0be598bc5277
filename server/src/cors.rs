//! Cross-origin reads: what anyone may fetch from a browser on another
//! origin. A route the OpenAPI document lists as a `GET` with no security
//! requirement (the read API, the MCP v0.1 API, Agent Cards, the JWKS, the
//! skills index, the log) answers `Access-Control-Allow-Origin: *` and its
//! preflight; a route that needs a credential answers neither, so a page
//! elsewhere can never read what a signed-in user sees. `/metrics` is the
//! operator's and stays same-origin.
//!
//! Two pieces, because `actix-cors` decides from the request head alone
//! (method, URI, headers) and cannot see the router:
//! [`mark_public_reads`] looks the path up in the document's templates
//! (`openapi::is_anonymous_read`, the matcher the 405 fallback uses) and
//! marks the head with a header of ours, having first removed any such
//! header the client sent; [`cors`] is `actix-cors` configured to allow
//! exactly what is marked.

use crate::openapi;
use actix_cors::Cors;
use actix_web::{
    Error,
    body::MessageBody,
    dev::{ServiceRequest, ServiceResponse},
    http::{Method, header},
    middleware::Next,
};

/// Paths the document lists as anonymous reads that stay same-origin.
const SAME_ORIGIN_ONLY: [&str; 1] = ["/metrics"];

/// How long a browser may keep a preflight's answer (the longest Chromium
/// honours is two hours).
const PREFLIGHT_MAX_AGE_SECS: usize = 7200;

/// On a request's head, set only by [`mark_public_reads`]: the request is
/// an anonymous read.
const PUBLIC_READ: header::HeaderName = header::HeaderName::from_static("x-agentlang-public-read");

/// The method a request reads with: its own, or for a preflight the one it
/// asks about.
fn read_method(req: &ServiceRequest) -> Option<Method> {
    if req.method() == Method::OPTIONS {
        req.headers()
            .get(header::ACCESS_CONTROL_REQUEST_METHOD)
            .and_then(|m| Method::from_bytes(m.as_bytes()).ok())
    } else {
        Some(req.method().clone())
    }
}

/// Middleware: marks a `GET`/`HEAD` (or its preflight) of an anonymous
/// route as a public read. Runs outside [`cors`].
pub async fn mark_public_reads(
    mut req: ServiceRequest,
    next: Next<impl MessageBody>,
) -> Result<ServiceResponse<impl MessageBody>, Error> {
    req.headers_mut().remove(&PUBLIC_READ);
    let reads = matches!(read_method(&req), Some(Method::GET | Method::HEAD));
    if reads
        && req.headers().contains_key(header::ORIGIN)
        && !SAME_ORIGIN_ONLY.contains(&req.path())
        && openapi::is_anonymous_read(req.path())
    {
        req.headers_mut()
            .insert(PUBLIC_READ, header::HeaderValue::from_static("1"));
    }
    next.call(req).await
}

/// `actix-cors` allowing any origin (answered as `*`, never with
/// credentials) on what [`mark_public_reads`] marked, and adding nothing
/// elsewhere: a request from another origin to any other route is served
/// as if it came from `curl`, and the browser keeps its answer from the
/// page.
pub fn cors() -> Cors {
    Cors::default()
        .allow_any_origin()
        .allowed_origin_fn(|_, head| head.headers().contains_key(&PUBLIC_READ))
        .send_wildcard()
        .allowed_methods([Method::GET, Method::HEAD])
        // What a cached read sends; never `Authorization`.
        .allowed_headers([
            header::ACCEPT,
            header::IF_NONE_MATCH,
            header::IF_MODIFIED_SINCE,
            header::RANGE,
        ])
        .expose_headers([
            header::ETAG,
            header::LINK,
            header::RETRY_AFTER,
            header::CONTENT_LENGTH,
            header::HeaderName::from_static("x-request-id"),
        ])
        .max_age(PREFLIGHT_MAX_AGE_SECS)
        .block_on_origin_mismatch(false)
}
