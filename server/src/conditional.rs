//! Conditional requests: the `ETag` of a body and whether the client's
//! `If-None-Match` already names it. Shared by the API and the catalog.

use actix_web::{HttpRequest, http::header};
pub use app::cache::etag_of;

/// Whether `If-None-Match` names `etag` (weakly compared) or is `*`.
pub fn if_none_match(req: &HttpRequest, etag: &str) -> bool {
    req.headers()
        .get_all(header::IF_NONE_MATCH)
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(str::trim)
        .any(|tag| tag == "*" || tag.strip_prefix("W/").unwrap_or(tag) == etag)
}
