//! HTTP handlers, one module per resource. Each handler carries its
//! `#[utoipa::path]`, and [`configure`] registers every one with
//! `.service()` so the OpenAPI document sees them all.

pub mod accounts;
pub mod health;
pub mod index;
pub mod keys;
pub mod models;
pub mod owners;
pub mod packages;
pub mod publish;
pub mod resolve;
pub mod search;
pub mod tokens;

use actix_web::web;
use time::{OffsetDateTime, format_description::well_known::Rfc3339};

/// Registers every API route.
pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(accounts::create_account)
        .service(tokens::create_token)
        .service(tokens::list_tokens)
        .service(tokens::revoke_token)
        .service(owners::list_owners)
        .service(owners::add_owners)
        .service(owners::remove_owners)
        .service(models::list_models)
        .service(models::get_model)
        .service(models::put_model)
        .service(health::get_healthz)
        .service(health::get_readyz)
        .service(crate::metrics::get_metrics)
        .service(keys::create_key)
        .service(keys::list_keys)
        .service(keys::get_key)
        .service(keys::revoke_key)
        .service(publish::publish_version)
        .service(resolve::resolve_lock)
        .service(search::search_packages)
        .service(index::get_index)
        // After every fixed `/api/v1/<word>/...` route above: these match
        // any first segment and answer 404 for one that is not a kind.
        .service(packages::get_package)
        .service(packages::get_version)
        .service(packages::download_version)
        .service(packages::yank_version)
        .service(packages::unyank_version);
}

/// Unix seconds as RFC 3339 (`2025-01-29T10:30:00Z`), the API's timestamp
/// format.
pub fn rfc3339(unix_seconds: i64) -> String {
    OffsetDateTime::from_unix_timestamp(unix_seconds)
        .ok()
        .and_then(|t| t.format(&Rfc3339).ok())
        .unwrap_or_default()
}
