//! HTTP handlers, one module per resource. Each handler carries its
//! `#[utoipa::path]`, and [`configure`] registers every one with
//! `.service()` so the OpenAPI document sees them all.

pub mod accounts;
pub mod agent_tasks;
pub mod clowl;
pub mod health;
pub mod index;
pub mod keys;
pub mod models;
pub mod moltspeak;
pub mod owners;
pub mod packages;
pub mod protocols;
pub mod publish;
pub mod quality;
pub mod resolve;
pub mod schemas;
pub mod search;
pub mod tlog;
pub mod tokens;

use actix_web::{HttpRequest, HttpResponse, http::header, web};
use bytes::{Bytes, BytesMut};
use futures_util::StreamExt;

use crate::error::ApiError;

/// Registers every API route.
pub fn configure(cfg: &mut web::ServiceConfig) {
    // First: health checks (fixed paths, cheap to match) and what a
    // registry serves most, before the other patterns are tried one by one
    // (each is a regex). Their kind and version segments
    // are constrained (`agents|tools|protocols`, a version starts with a
    // digit), so no path of the routes below can match them.
    cfg.service(health::get_healthz)
        .service(health::get_readyz)
        .service(health::get_metrics)
        .service(packages::download_version)
        .service(packages::get_version)
        .service(packages::get_package)
        .service(index::get_index)
        .service(accounts::create_account)
        .service(accounts::get_account)
        .service(accounts::change_password)
        .service(accounts::list_audit_events)
        .service(owners::list_invitations)
        .service(owners::accept_invitation)
        .service(owners::decline_invitation)
        .service(tokens::create_token)
        .service(tokens::list_tokens)
        .service(tokens::revoke_token)
        .service(owners::list_owners)
        .service(owners::add_owners)
        .service(owners::remove_owners)
        .service(models::list_models)
        .service(models::get_model)
        .service(models::put_model)
        // Before the package routes: `/api/v1/protocols/{name}` is the
        // protocol's catalog view, for a catalog entry or a package alike.
        .service(protocols::list_protocols)
        .service(protocols::get_protocol)
        .service(protocols::put_protocol)
        .service(schemas::get_events_schema)
        .service(clowl::post_clowl)
        .service(clowl::get_agent_caps)
        .service(moltspeak::post_message)
        .service(moltspeak::post_batch)
        .service(moltspeak::get_well_known)
        .service(keys::create_key)
        .service(keys::list_keys)
        .service(keys::get_key)
        .service(keys::revoke_key)
        .service(publish::publish_version)
        .service(resolve::resolve_lock)
        .service(search::search_packages)
        .service(quality::get_quality_report)
        .service(packages::yank_version)
        .service(packages::unyank_version)
        .service(tlog::get_checkpoint)
        .service(tlog::get_log_key)
        .service(tlog::get_tile)
        .service(tlog::post_cosignature);
}

/// What no route matched (the catalog takes every other path): 405 with
/// `Allow` for a path the OpenAPI document lists with other methods, else
/// 404, both as problems.
pub async fn unmatched(req: HttpRequest) -> Result<HttpResponse, ApiError> {
    let path = req.path();
    let method = req.method().as_str();
    match crate::openapi::allowed_methods(path).filter(|allow| !allow.contains(&method)) {
        Some(allow) => Err(ApiError::MethodNotAllowed {
            method: method.to_owned(),
            allow,
        }),
        None => Err(ApiError::NotFound(format!("route {path}"))),
    }
}

/// A request body read whole, refused with 413 past `limit` bytes: at once
/// when `Content-Length` says so, else as soon as the bytes do (chunked
/// bodies). Any content type is read; callers check it.
pub async fn read_body(
    req: &HttpRequest,
    mut payload: web::Payload,
    limit: usize,
) -> Result<Bytes, ApiError> {
    let declared = req
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|n| n > limit as u64) {
        return Err(ApiError::PayloadTooLarge { limit });
    }
    let mut body = BytesMut::new();
    while let Some(chunk) = payload.next().await {
        let chunk = chunk.map_err(|e| ApiError::from_payload(&e))?;
        if body.len() + chunk.len() > limit {
            return Err(ApiError::PayloadTooLarge { limit });
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body.freeze())
}

pub use crate::common::conditional::{etag_of, if_none_match};

/// A JSON answer that may change (a record with its download count), with
/// its `ETag` and `Cache-Control: no-cache`: a client or cache revalidates
/// every time and gets 304 without the body while it is current.
pub fn json_with_etag(req: &HttpRequest, body: Bytes, etag: &str) -> HttpResponse {
    let mut response = if if_none_match(req, etag) {
        HttpResponse::NotModified()
    } else {
        HttpResponse::Ok()
    };
    response
        .insert_header((header::ETAG, etag))
        .insert_header((header::CACHE_CONTROL, "public, no-cache"));
    if if_none_match(req, etag) {
        return response.finish();
    }
    response.content_type("application/json").body(body)
}
