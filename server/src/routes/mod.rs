//! HTTP handlers, one module per resource. Each handler carries its
//! `#[utoipa::path]`, and [`configure`] registers every one with
//! `.service()` so the OpenAPI document sees them all.

pub mod accounts;
pub mod advisories;
pub mod agent_cards;
pub mod clowl;
pub mod grants;
pub mod health;
mod http;
pub mod index;
pub mod keys;
pub mod mcp;
pub mod models;
pub mod moltspeak;
pub mod owners;
pub mod packages;
pub mod protocols;
pub mod provenance;
pub mod publish;
pub mod publishing_policy;
pub mod quality;
pub mod resolve;
pub mod schemas;
pub mod search;
pub mod skills;
pub mod statuses;
pub mod tlog;
pub mod tokens;
// Trusted publishing (OpenID Connect).
pub mod trusted_publishing;
// Second factor (TOTP).
pub mod two_factor;
// Staged releases.
pub mod staging;

use actix_web::web;

pub use http::{etag_of, if_none_match, json_with_etag, read_body, read_json};

/// Registers every API route.
pub fn configure(cfg: &mut web::ServiceConfig) {
    // First: health checks (fixed paths, cheap to match) and what a
    // registry serves most, before the other patterns are tried one by one
    // (each is a regex). Their kind and version segments
    // are constrained (`agents|tools|protocols|skills`, a version starts with a
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
        .service(moltspeak::get_stream)
        .service(agent_cards::get_agent_card)
        .service(agent_cards::get_latest_agent_card)
        .service(agent_cards::get_jwks)
        .service(skills::get_skills_index)
        .service(keys::create_key)
        .service(keys::list_keys)
        .service(keys::get_key)
        .service(keys::revoke_key)
        .service(grants::create_recipient_challenge)
        .service(grants::create_prompt_recipient)
        .service(grants::list_prompt_recipients)
        .service(grants::delete_prompt_recipient)
        .service(grants::list_account_prompt_recipients)
        .service(grants::put_grant)
        .service(grants::revoke_grant)
        .service(grants::list_agent_grants)
        .service(grants::list_account_grants)
        .service(grants::get_prompt_key)
        .service(publish::publish_version)
        // Trusted publishing.
        .service(trusted_publishing::add_trusted_publisher)
        .service(trusted_publishing::list_trusted_publishers)
        .service(trusted_publishing::remove_trusted_publisher)
        .service(trusted_publishing::exchange_token)
        .service(resolve::resolve_lock)
        .service(search::search_packages)
        .service(quality::get_quality_report)
        .service(packages::yank_version)
        .service(packages::unyank_version)
        .service(statuses::put_package_status)
        .service(statuses::put_version_status)
        .service(publishing_policy::get_publishing_policy)
        .service(publishing_policy::patch_publishing_policy)
        // Second factor (TOTP).
        .service(two_factor::get_two_factor)
        .service(two_factor::enrol_two_factor)
        .service(two_factor::confirm_two_factor)
        .service(two_factor::disable_two_factor)
        // Staged releases.
        .service(staging::list_staged)
        .service(staging::get_staged)
        .service(staging::download_staged)
        .service(staging::approve_staged)
        .service(staging::reject_staged)
        .service(provenance::get_provenance)
        // `all.zip` before `{id}`, which it would match.
        .service(advisories::publish_advisory)
        .service(advisories::list_advisories)
        .service(advisories::export_advisories)
        .service(advisories::get_advisory)
        .service(advisories::audit_lock)
        .service(tlog::get_checkpoint)
        .service(tlog::get_log_key)
        .service(tlog::get_tile)
        .service(tlog::get_proof)
        .service(tlog::post_cosignature)
        .service(mcp::list_mcp_servers)
        .service(mcp::list_mcp_server_versions)
        .service(mcp::get_mcp_server_version)
        .service(mcp::put_mcp_server_version)
        .service(mcp::delete_mcp_server_version)
        .service(mcp::patch_mcp_server_version_status)
        .service(mcp::patch_mcp_server_status)
        .service(mcp::publish_mcp_server);
}
