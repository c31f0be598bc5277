//! The OpenAPI document: every handler registered in
//! [`crate::routes::configure`] is listed here, served at
//! `/api/openapi.json`, browsable at `/api/docs`, and committed as
//! `openapi/openapi.json` (a test fails when that file is stale).

use utoipa::{
    Modify, OpenApi,
    openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme},
};

use crate::{auth, error, metrics, routes};

#[derive(Debug, OpenApi)]
#[openapi(
    info(
        title = "AgentLang Registry",
        description = "Publish, verify, resolve and find AI agents and their tools. \
                       Errors are RFC 9457 problem documents (`application/problem+json`) \
                       whose `type` is `https://agentlang.dev/problems/<slug>`."
    ),
    paths(
        routes::accounts::create_account,
        routes::tokens::create_token,
        routes::tokens::list_tokens,
        routes::tokens::revoke_token,
        routes::owners::list_owners,
        routes::owners::add_owners,
        routes::owners::remove_owners,
        routes::models::list_models,
        routes::models::get_model,
        routes::models::put_model,
        routes::health::get_healthz,
        routes::health::get_readyz,
        metrics::get_metrics,
        routes::keys::create_key,
        routes::keys::list_keys,
        routes::keys::get_key,
        routes::keys::revoke_key,
        routes::publish::publish_version,
        routes::packages::get_package,
        routes::packages::get_version,
        routes::packages::download_version,
        routes::packages::yank_version,
        routes::packages::unyank_version,
        routes::index::get_index,
        routes::resolve::resolve_lock,
        routes::search::search_packages,
    ),
    components(schemas(error::Problem, error::FieldError, auth::Scope)),
    modifiers(&BearerSecurity),
    tags(
        (name = "accounts", description = "Registration"),
        (name = "tokens", description = "API tokens: scoped, expiring, revocable JWTs"),
        (name = "owners", description = "Who may publish a package"),
        (name = "models", description = "The models catalog used in lockfiles"),
        (name = "operations", description = "Health, readiness and metrics"),
        (name = "keys", description = "Signing keys: register, list, look up, revoke"),
        (name = "publish", description = "Upload a signed container"),
        (name = "packages", description = "Package and version records, downloads, yanking"),
        (name = "index", description = "Per-package version index for client-side resolution"),
        (name = "resolve", description = "Requirements in, agent.lock out"),
        (name = "search", description = "Full-text search over packages"),
    )
)]
pub struct ApiDoc;

/// Declares the `bearer` scheme the authenticated operations name.
#[derive(Debug)]
struct BearerSecurity;

impl Modify for BearerSecurity {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let components = openapi.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "bearer",
            SecurityScheme::Http(
                HttpBuilder::new()
                    .scheme(HttpAuthScheme::Bearer)
                    .bearer_format("JWT")
                    .description(Some(
                        "A token from POST /api/v1/tokens: `Authorization: Bearer <token>`",
                    ))
                    .build(),
            ),
        );
    }
}

/// The document as committed: pretty JSON with a final newline.
pub fn document_json() -> String {
    let mut json = ApiDoc::openapi()
        .to_pretty_json()
        .unwrap_or_else(|e| format!("{{\"error\": \"{e}\"}}"));
    json.push('\n');
    json
}
