//! The OpenAPI document: every handler registered in
//! [`crate::routes::configure`] is listed here, served at
//! `/api/openapi.json`, browsable at `/api/docs`, and committed as
//! `openapi/openapi.json` (a test fails when that file is stale).

use utoipa::{
    Modify, OpenApi,
    openapi::{
        ContentBuilder, Ref, RefOr, ResponseBuilder,
        header::HeaderBuilder,
        path::Operation,
        schema::{KnownFormat, ObjectBuilder, SchemaFormat, Type},
        security::{HttpAuthScheme, HttpBuilder, SecurityScheme},
    },
};

use crate::{common, error, routes};

#[derive(Debug, OpenApi)]
#[openapi(
    info(
        title = "AgentLang Registry",
        description = "Publish, verify, resolve and find AI agents and their tools. \
                       Errors are RFC 9457 problem documents (`application/problem+json`) \
                       whose `type` is `<registry URL>/problems/<slug>`, a page that \
                       says what the problem means and what to do."
    ),
    paths(
        routes::accounts::create_account,
        routes::tokens::create_token,
        routes::tokens::list_tokens,
        routes::tokens::revoke_token,
        routes::accounts::get_account,
        routes::accounts::change_password,
        routes::accounts::list_audit_events,
        routes::owners::list_invitations,
        routes::owners::accept_invitation,
        routes::owners::decline_invitation,
        routes::owners::list_owners,
        routes::owners::add_owners,
        routes::owners::remove_owners,
        routes::models::list_models,
        routes::models::get_model,
        routes::models::put_model,
        routes::protocols::list_protocols,
        routes::protocols::get_protocol,
        routes::protocols::put_protocol,
        routes::schemas::get_events_schema,
        routes::health::get_healthz,
        routes::health::get_readyz,
        routes::health::get_metrics,
        routes::clowl::post_clowl,
        routes::clowl::get_agent_caps,
        routes::moltspeak::post_message,
        routes::moltspeak::post_batch,
        routes::moltspeak::get_well_known,
        routes::keys::create_key,
        routes::keys::list_keys,
        routes::keys::get_key,
        routes::keys::revoke_key,
        routes::publish::publish_version,
        routes::packages::get_package,
        routes::packages::get_version,
        routes::packages::download_version,
        routes::quality::get_quality_report,
        routes::packages::yank_version,
        routes::packages::unyank_version,
        routes::index::get_index,
        routes::resolve::resolve_lock,
        routes::search::search_packages,
    ),
    components(schemas(
        error::Problem,
        error::FieldError,
        common::names::Scope,
        routes::clowl::ClowlMessage,
        routes::clowl::ClowlBody,
        routes::clowl::ClowlErrorData,
        routes::moltspeak::MoltSpeakMessage,
        routes::moltspeak::MoltSpeakIdentity,
    )),
    modifiers(&BearerSecurity, &CommonResponses),
    tags(
        (name = "accounts", description = "Registration"),
        (name = "tokens", description = "API tokens: scoped, expiring, revocable JWTs"),
        (name = "owners", description = "Who may publish a package"),
        (name = "models", description = "The models catalog used in lockfiles"),
        (name = "protocols", description = "The protocol catalog: versions with their status (stable, deprecated with a successor, removed); custom protocols are packages of kind `protocol`"),
        (name = "schemas", description = "JSON Schemas of the formats agents and runtimes exchange, such as the event format"),
        (name = "operations", description = "Health, readiness and metrics"),
        (name = "agent protocols", description = "Agents talk to the registry in CLowl 0.2 and MoltSpeak 0.1. \
            Protocol answers are HTTP 200 whatever they say (errors travel in the protocol); \
            413 only past the size limits."),
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

/// The answers any route can give whatever it does, documented once as
/// shared responses and named by every operation that lacks its own: 429
/// past a rate limit and 503 when a backend is out of reach or the request
/// ran past its deadline (both with `Retry-After`), and 408 for a request
/// body that goes silent or arrives too slowly. Health and metrics are
/// never limited and read no backend but readiness's own.
#[derive(Debug)]
struct CommonResponses;

const UNLIMITED: [&str; 3] = ["/healthz", "/readyz", "/metrics"];

impl Modify for CommonResponses {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let retry_after = || {
            HeaderBuilder::new()
                .schema(Some(
                    ObjectBuilder::new()
                        .schema_type(Type::Integer)
                        .format(Some(SchemaFormat::KnownFormat(KnownFormat::Int64)))
                        .minimum(Some(0)),
                ))
                .description(Some("Seconds to wait before retrying"))
                .build()
        };
        let problem = || {
            ContentBuilder::new()
                .schema(Some(Ref::from_schema_name(
                    <error::Problem as utoipa::ToSchema>::name(),
                )))
                .build()
        };
        let shared = [
            (
                "RateLimited",
                "Too many requests from this client or token (`rate-limited`)",
                true,
            ),
            (
                "Unavailable",
                "A backend is out of reach, or the request ran past its deadline (`unavailable`)",
                true,
            ),
            (
                "RequestTimeout",
                "The request body went silent for 30 s, or took longer than the request's time in all (`request-timeout`); the connection is closed",
                false,
            ),
        ];
        let components = openapi.components.get_or_insert_with(Default::default);
        for (name, description, retry) in shared {
            let mut response = ResponseBuilder::new()
                .description(description)
                .content(error::PROBLEM_JSON, problem());
            if retry {
                response = response.header("Retry-After", retry_after());
            }
            components
                .responses
                .insert(name.to_owned(), RefOr::T(response.build()));
        }
        for (path, item) in &mut openapi.paths.paths {
            if UNLIMITED.contains(&path.as_str()) {
                continue;
            }
            let operations = [
                item.get.as_mut(),
                item.put.as_mut(),
                item.post.as_mut(),
                item.delete.as_mut(),
                item.patch.as_mut(),
            ];
            for operation in operations.into_iter().flatten() {
                add_common(operation);
            }
        }
    }
}

fn add_common(operation: &mut Operation) {
    let mut common = vec![("429", "RateLimited"), ("503", "Unavailable")];
    if operation.request_body.is_some() {
        common.push(("408", "RequestTimeout"));
    }
    for (status, name) in common {
        operation
            .responses
            .responses
            .entry(status.to_owned())
            .or_insert_with(|| RefOr::Ref(Ref::from_response_name(name)));
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

/// The methods the document lists for `path` (with `HEAD` wherever `GET`
/// is), from the most specific path templates that match it (fewest
/// `{parameters}`); `None` when no template matches. Read once from the
/// document, so a route and its `Allow` header cannot disagree.
pub fn allowed_methods(path: &str) -> Option<Vec<&'static str>> {
    use std::sync::OnceLock;
    type Template = (Vec<Option<String>>, Vec<&'static str>);
    static TABLE: OnceLock<Vec<Template>> = OnceLock::new();
    let table = TABLE.get_or_init(|| {
        ApiDoc::openapi()
            .paths
            .paths
            .iter()
            .map(|(template, item)| {
                let segments = template
                    .split('/')
                    .map(|s| (!s.starts_with('{')).then(|| s.to_owned()))
                    .collect();
                let mut methods = Vec::new();
                for (method, op) in [
                    ("GET", &item.get),
                    ("HEAD", &item.get),
                    ("POST", &item.post),
                    ("PUT", &item.put),
                    ("PATCH", &item.patch),
                    ("DELETE", &item.delete),
                ] {
                    if op.is_some() {
                        methods.push(method);
                    }
                }
                (segments, methods)
            })
            .collect()
    });
    let wanted: Vec<&str> = path.split('/').collect();
    let matching = table.iter().filter(|(segments, _)| {
        segments.len() == wanted.len()
            && segments
                .iter()
                .zip(&wanted)
                .all(|(t, w)| t.as_deref().map_or(!w.is_empty(), |t| t == *w))
    });
    let params = |segments: &Vec<Option<String>>| segments.iter().filter(|s| s.is_none()).count();
    let fewest = matching.clone().map(|(s, _)| params(s)).min()?;
    let mut allow: Vec<&'static str> = matching
        .filter(|(s, _)| params(s) == fewest)
        .flat_map(|(_, m)| m.iter().copied())
        .collect();
    allow.sort_by_key(|m| {
        ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE"]
            .iter()
            .position(|x| x == m)
    });
    allow.dedup();
    Some(allow)
}
