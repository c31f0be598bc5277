//! The OpenAPI document: every handler registered in
//! [`crate::routes::configure`] is listed here, served at
//! `/api/openapi.json`, browsable at `/api/docs`, and committed as
//! `openapi/openapi.json` (a test fails when that file is stale).

use utoipa::{
    Modify, OpenApi,
    openapi::{
        ContentBuilder, Ref, RefOr, ResponseBuilder,
        header::HeaderBuilder,
        link::LinkBuilder,
        path::{Operation, ParameterIn},
        schema::{KnownFormat, ObjectBuilder, SchemaFormat, Type},
        security::{HttpAuthScheme, HttpBuilder, SecurityScheme},
    },
};

use actix_web::{HttpRequest, HttpResponse};
use app::ServiceError;

use crate::{
    error::{self, ApiError},
    routes,
};

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
        routes::moltspeak::get_stream,
        routes::agent_cards::get_agent_card,
        routes::agent_cards::get_latest_agent_card,
        routes::agent_cards::get_jwks,
        routes::skills::get_skills_index,
        routes::keys::create_key,
        routes::keys::list_keys,
        routes::keys::get_key,
        routes::keys::revoke_key,
        routes::grants::create_recipient_challenge,
        routes::grants::create_prompt_recipient,
        routes::grants::list_prompt_recipients,
        routes::grants::delete_prompt_recipient,
        routes::grants::list_account_prompt_recipients,
        routes::grants::put_grant,
        routes::grants::revoke_grant,
        routes::grants::list_agent_grants,
        routes::grants::list_account_grants,
        routes::grants::get_prompt_key,
        routes::publish::publish_version,
        routes::packages::get_package,
        routes::packages::get_version,
        routes::packages::download_version,
        routes::quality::get_quality_report,
        routes::packages::yank_version,
        routes::packages::unyank_version,
        routes::statuses::put_package_status,
        routes::statuses::put_version_status,
        routes::publishing_policy::get_publishing_policy,
        routes::publishing_policy::patch_publishing_policy,
        // Second factor (TOTP).
        routes::two_factor::get_two_factor,
        routes::two_factor::enrol_two_factor,
        routes::two_factor::confirm_two_factor,
        routes::two_factor::disable_two_factor,
        routes::advisories::publish_advisory,
        routes::advisories::list_advisories,
        routes::advisories::export_advisories,
        routes::advisories::get_advisory,
        routes::advisories::audit_lock,
        routes::index::get_index,
        routes::resolve::resolve_lock,
        routes::search::search_packages,
        routes::tlog::get_checkpoint,
        routes::tlog::get_log_key,
        routes::tlog::get_tile,
        routes::tlog::get_proof,
        routes::tlog::post_cosignature,
        routes::mcp::list_mcp_servers,
        routes::mcp::list_mcp_server_versions,
        routes::mcp::get_mcp_server_version,
        routes::mcp::put_mcp_server_version,
        routes::mcp::delete_mcp_server_version,
        routes::mcp::patch_mcp_server_version_status,
        routes::mcp::patch_mcp_server_status,
        routes::mcp::publish_mcp_server,
        // Trusted publishing.
        routes::trusted_publishing::add_trusted_publisher,
        routes::trusted_publishing::list_trusted_publishers,
        routes::trusted_publishing::remove_trusted_publisher,
        routes::trusted_publishing::exchange_token,
        // Staged releases.
        routes::staging::list_staged,
        routes::staging::get_staged,
        routes::staging::download_staged,
        routes::staging::approve_staged,
        routes::staging::reject_staged,
        // Provenance.
        routes::provenance::get_provenance,
    ),
    components(schemas(
        error::Problem,
        app::FieldError,
        app::tokens::Scope,
        routes::owners::KindSegment,
        routes::packages::RecordKindSegment,
        routes::clowl::ClowlMessage,
        routes::clowl::ClowlBody,
        routes::clowl::ClowlErrorData,
        routes::moltspeak::MoltSpeakMessage,
        routes::moltspeak::MoltSpeakIdentity,
    )),
    modifiers(&BearerSecurity, &CommonResponses, &ApiLinks),
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
        (name = "a2a", description = "Signed A2A v1.0 Agent Cards of agents that declare an A2A endpoint (`/agents/{name}/{version}/agent-card.json`, the newest at `/agents/{name}/.well-known/agent-card.json`), each with a JWS by the registry's key, and that key as a JWKS (`/.well-known/jwks.json`)"),
        (name = "two-factor", description = "A second factor (TOTP, RFC 6238) for the caller's account: enrol with the password, confirm with a first code (answers ten recovery codes, once), disable with a code. Once enabled, minting a token, changing owners, statuses or a publishing policy need a code in `AgentLang-OTP` (`otp` when minting). See /docs/two-factor"),
        (name = "keys", description = "Signing keys: register, list, look up, revoke"),
        (name = "grants", description = "Sealed agents' prompt keys granted to accounts: prompt recipients registered with proof, grants wrapped by owners to them, fetched by their grantees"),
        (name = "publish", description = "Upload a signed container"),
        (name = "packages", description = "Package and version records, downloads, yanking"),
        (name = "advisories", description = "Security advisories in the OSV format (schema 1.7), published by admins and by owners for their packages, each change a log entry; served one by one, in pages and as osv.dev's `all.zip`; and the audit of an agent.lock against them. See /docs/advisories"),
        (name = "index", description = "Per-package version index for client-side resolution"),
        (name = "resolve", description = "Requirements in, agent.lock out"),
        (name = "search", description = "Full-text search over packages"),
        (name = "skills", description = "Agent Skills discovery (`/.well-known/agent-skills/index.json`, schema 0.2.0): every skill package's newest release with the URL of its archive and that archive's SHA-256; skill packages' records and downloads are `/api/v1/skills/...` like any package"),
        (name = "mcp", description = "The MCP Registry API v0.1 (the MCP registry's 2025-12-01 document), read-only: every tool of `kind: mcp` as the MCP server `<namespace>/<tool>`, its versions with server.json's `packages` and `remotes` from tool.yaml's `mcp:` section, and the registry's facts in `_meta`. Errors here are `{\"error\": \"...\"}`, not problem documents; writes answer 501. See /docs/mcp-registry"),
        (name = "trusted-publishing", description = "Trusted publishing: owners trust a CI identity (an OpenID Connect issuer, repository, workflow file and environment); a CI run exchanges its ID token for a 30-minute publish token for the packages that trust it. See /docs/trusted-publishing"),
        (name = "staging", description = "Staged releases: `POST /api/v1/publish?stage=true` stores a verified version that only its package's owners see and download, until one approves it (then it is published, checked again) or rejects it; each step a log entry, the number taken throughout. See /docs/staged-releases"),
        (name = "log", description = "The transparency log (C2SP tlog-tiles, tlog-checkpoint, signed-note, tlog-cosignature): every publish, yank, unyank, owner and key change and prompt-key grant, in order, provable to anyone"),
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

/// The answers a route gives because of its shape rather than what it
/// does, documented once as shared responses and named by every operation
/// of that shape that does not document its own:
/// - any route: 429 past a rate limit and 503 when a backend is out of
///   reach or the request ran past its deadline (both with `Retry-After`);
/// - a request body: 408 when it goes silent or arrives too slowly;
/// - a JSON body (read through actix's `Json`, whose error handler is
///   [`error::json_error`]): 400 for JSON that does not parse or names an
///   unknown field, 413 past the JSON limit, 415 for another content type;
/// - a query string (read through `Query`, [`error::query_error`]): 400;
/// - a bearer token: 401 without a valid one.
///
/// Agent-protocol routes read any body and answer in their protocol, and
/// health and metrics are never limited and read no backend but
/// readiness's own: neither takes the shapes' answers. Every path item also
/// says which methods it answers (`HEAD` wherever `GET`), since any other
/// answers 405 with `Allow` (see [`allowed_methods`]).
#[derive(Debug)]
struct CommonResponses;

const UNLIMITED: [&str; 3] = ["/healthz", "/readyz", "/metrics"];
const PROTOCOL_TAG: &str = "agent protocols";

/// A response documented once under `components.responses`.
struct Shared {
    name: &'static str,
    status: &'static str,
    description: &'static str,
    /// A header it carries: name and description.
    header: Option<(&'static str, &'static str)>,
}

const SHARED: [Shared; 8] = [
    Shared {
        name: "RateLimited",
        status: "429",
        description: "Too many requests from this client or token, or too many requests or body bytes in flight from its address (`rate-limited`)",
        header: Some(("Retry-After", "Seconds to wait before retrying")),
    },
    Shared {
        name: "Unavailable",
        status: "503",
        description: "A backend is out of reach, the request ran past its deadline, or the registry holds as many request bodies as it can (`unavailable`)",
        header: Some(("Retry-After", "Seconds to wait before retrying")),
    },
    Shared {
        name: "RequestTimeout",
        status: "408",
        description: "The request body went silent for 30 s, took longer than the request's time in all, or (an upload) arrived slower than 8 KiB/s after its first 10 s (`request-timeout`); the connection is closed",
        header: None,
    },
    Shared {
        name: "MalformedRequest",
        status: "400",
        description: "The body or query string could not be read: JSON that does not parse, an unknown or mistyped field, a query parameter out of range (`malformed-request`)",
        header: None,
    },
    Shared {
        name: "PayloadTooLarge",
        status: "413",
        description: "The body is larger than the route accepts (`payload-too-large`)",
        header: None,
    },
    Shared {
        name: "UnsupportedMediaType",
        status: "415",
        description: "The body's Content-Type is not one the route reads (`unsupported-media-type`)",
        header: None,
    },
    Shared {
        name: "Unauthenticated",
        status: "401",
        description: "No token, or a malformed, expired or revoked one (`unauthenticated`)",
        header: Some((
            "WWW-Authenticate",
            "`Bearer realm=\"agentlang-registry\", error=\"invalid_token\", …`",
        )),
    },
    Shared {
        name: "MethodNotAllowed",
        status: "405",
        description: "The path does not answer this method (`method-not-allowed`); `Allow` lists those it does",
        header: Some(("Allow", "The methods the path answers, such as `GET, HEAD`")),
    },
];

impl Modify for CommonResponses {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let components = openapi.components.get_or_insert_with(Default::default);
        for Shared {
            name,
            description,
            header,
            ..
        } in SHARED
        {
            let mut response = ResponseBuilder::new()
                .description(description)
                .content(error::PROBLEM_JSON, problem_content());
            if let Some((header, description)) = header {
                response = response.header(header, header_schema(header, description));
            }
            components
                .responses
                .insert(name.to_owned(), RefOr::T(response.build()));
        }
        for (path, item) in &mut openapi.paths.paths {
            let methods = [
                ("GET, HEAD", item.get.is_some()),
                ("POST", item.post.is_some()),
                ("PUT", item.put.is_some()),
                ("PATCH", item.patch.is_some()),
                ("DELETE", item.delete.is_some()),
            ];
            let allow: Vec<&str> = methods.iter().filter(|m| m.1).map(|m| m.0).collect();
            item.description = Some(format!(
                "Answers {}{}; any other method answers 405 (`method-not-allowed`) with `Allow: {}`.",
                allow.join(", "),
                if item.get.is_some() {
                    " (HEAD as GET, without the body)"
                } else {
                    ""
                },
                allow.join(", "),
            ));
            // Health is never limited; the MCP paths document their own
            // errors, in the MCP document's shape.
            if UNLIMITED.contains(&path.as_str()) || path.starts_with(error::MCP_PREFIX) {
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

fn problem_content() -> utoipa::openapi::Content {
    ContentBuilder::new()
        .schema(Some(Ref::from_schema_name(
            <error::Problem as utoipa::ToSchema>::name(),
        )))
        .build()
}

fn header_schema(name: &str, description: &str) -> utoipa::openapi::header::Header {
    let schema = if name == "Retry-After" {
        ObjectBuilder::new()
            .schema_type(Type::Integer)
            .format(Some(SchemaFormat::KnownFormat(KnownFormat::Int64)))
            .minimum(Some(0))
    } else {
        ObjectBuilder::new().schema_type(Type::String)
    };
    HeaderBuilder::new()
        .schema(Some(schema))
        .description(Some(description))
        .build()
}

fn add_common(operation: &mut Operation) {
    let protocol = operation
        .tags
        .as_ref()
        .is_some_and(|tags| tags.iter().any(|t| t == PROTOCOL_TAG));
    let json_body = operation.request_body.as_ref().is_some_and(
        |body| matches!(body, RefOr::T(b) if b.content.contains_key("application/json")),
    );
    let query = operation.parameters.as_ref().is_some_and(|params| {
        params
            .iter()
            .any(|p| matches!(p, RefOr::T(p) if matches!(p.parameter_in, ParameterIn::Query)))
    });
    let bearer = operation
        .security
        .as_ref()
        .is_some_and(|requirements| !requirements.is_empty());
    let mut common = vec!["RateLimited", "Unavailable"];
    if operation.request_body.is_some() {
        common.push("RequestTimeout");
    }
    if (json_body && !protocol) || query {
        common.push("MalformedRequest");
    }
    if json_body && !protocol {
        common.extend(["PayloadTooLarge", "UnsupportedMediaType"]);
    }
    if bearer {
        common.push("Unauthenticated");
    }
    // A route's own 429 or 503 says why in its words; the header that
    // comes with every one is the same.
    for status in ["429", "503"] {
        if let Some(RefOr::T(response)) = operation.responses.responses.get_mut(status) {
            response
                .headers
                .entry("Retry-After".to_owned())
                .or_insert_with(|| {
                    RefOr::T(header_schema(
                        "Retry-After",
                        "Seconds to wait before retrying",
                    ))
                });
        }
    }
    for name in common {
        let status = SHARED
            .iter()
            .find(|shared| shared.name == name)
            .expect("a shared response")
            .status;
        operation
            .responses
            .responses
            .entry(status.to_owned())
            .or_insert_with(|| RefOr::Ref(Ref::from_response_name(name)));
    }
}

/// OpenAPI links from an answer to the operations it leads to, so a
/// generated client (and Schemathesis' stateful phase) can walk from a
/// search to a package, its versions, their downloads and yanks, and from
/// a created token or key to its revocation. A record's `kind` is singular
/// (`tool`) and the path's plural (`tools`): an embedded expression adds
/// the `s`.
#[derive(Debug)]
struct ApiLinks;

type LinkParams = &'static [(&'static str, &'static str)];

const VERSION_FROM_RECORD: LinkParams = &[
    ("kind", "{$response.body#/kind}s"),
    ("name", "$response.body#/name"),
    ("version", "$response.body#/version"),
];
const VERSION_FROM_REQUEST: LinkParams = &[
    ("kind", "$request.path.kind"),
    ("name", "$request.path.name"),
    ("version", "$request.path.version"),
];
const PACKAGE_FROM_RECORD: LinkParams = &[
    ("kind", "{$response.body#/kind}s"),
    ("name", "$response.body#/name"),
];

/// (from operation, its statuses, link name, to operation, parameters)
const LINKS: &[(&str, &[&str], &str, &str, LinkParams)] = &[
    (
        "search_packages",
        &["200"],
        "GetPackage",
        "get_package",
        &[
            ("kind", "{$response.body#/results/0/kind}s"),
            ("name", "$response.body#/results/0/name"),
        ],
    ),
    (
        "get_package",
        &["200"],
        "GetVersion",
        "get_version",
        &[
            ("kind", "$request.path.kind"),
            ("name", "$request.path.name"),
            ("version", "$response.body#/versions/0/version"),
        ],
    ),
    (
        "get_package",
        &["200"],
        "ListOwners",
        "list_owners",
        PACKAGE_FROM_RECORD,
    ),
    (
        "get_package",
        &["200"],
        "GetIndex",
        "get_index",
        PACKAGE_FROM_RECORD,
    ),
    (
        "publish_version",
        &["200", "201"],
        "GetVersion",
        "get_version",
        VERSION_FROM_RECORD,
    ),
    (
        "publish_version",
        &["200", "201"],
        "DownloadVersion",
        "download_version",
        VERSION_FROM_RECORD,
    ),
    (
        "publish_version",
        &["200", "201"],
        "YankVersion",
        "yank_version",
        VERSION_FROM_RECORD,
    ),
    (
        "get_version",
        &["200"],
        "DownloadVersion",
        "download_version",
        VERSION_FROM_RECORD,
    ),
    (
        "get_version",
        &["200"],
        "GetQualityReport",
        "get_quality_report",
        VERSION_FROM_RECORD,
    ),
    (
        "get_version",
        &["200"],
        "YankVersion",
        "yank_version",
        VERSION_FROM_RECORD,
    ),
    (
        "get_version",
        &["200"],
        "GetAgentCaps",
        "get_agent_caps",
        &[
            ("name", "$response.body#/name"),
            ("version", "$response.body#/version"),
        ],
    ),
    (
        "yank_version",
        &["200"],
        "UnyankVersion",
        "unyank_version",
        VERSION_FROM_REQUEST,
    ),
    (
        "yank_version",
        &["200"],
        "GetVersion",
        "get_version",
        VERSION_FROM_REQUEST,
    ),
    (
        "unyank_version",
        &["200"],
        "GetVersion",
        "get_version",
        VERSION_FROM_REQUEST,
    ),
    (
        "create_token",
        &["201"],
        "RevokeToken",
        "revoke_token",
        &[("id", "$response.body#/id")],
    ),
    (
        "create_key",
        &["201"],
        "GetKey",
        "get_key",
        &[("key_id", "$response.body#/key_id")],
    ),
    (
        "create_key",
        &["201"],
        "RevokeKey",
        "revoke_key",
        &[("key_id", "$response.body#/key_id")],
    ),
];

impl Modify for ApiLinks {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        for item in openapi.paths.paths.values_mut() {
            let operations = [
                item.get.as_mut(),
                item.put.as_mut(),
                item.post.as_mut(),
                item.delete.as_mut(),
                item.patch.as_mut(),
            ];
            for operation in operations.into_iter().flatten() {
                let Some(id) = operation.operation_id.clone() else {
                    continue;
                };
                for (from, statuses, name, to, params) in LINKS {
                    if *from != id {
                        continue;
                    }
                    for status in *statuses {
                        let Some(RefOr::T(response)) =
                            operation.responses.responses.get_mut(*status)
                        else {
                            continue;
                        };
                        let mut link = LinkBuilder::new().operation_id(*to);
                        for (param, expression) in *params {
                            link = link.parameter(*param, *expression);
                        }
                        response
                            .links
                            .insert((*name).to_owned(), RefOr::T(link.build()));
                    }
                }
            }
        }
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

/// Where the API and the agent-protocol endpoints live (every path the
/// document lists starts with one, but agents' A2A cards: see
/// [`is_machine_path`]); every other path is the catalog's.
pub const MACHINE_PREFIXES: [&str; 9] = [
    "/api/",
    "/v0.1/",
    "/clowl",
    "/moltspeak/",
    "/.well-known/",
    "/log/",
    "/healthz",
    "/readyz",
    "/metrics",
];

/// Whether `path` is the API's (problem+json answers) rather than a
/// catalog page's (HTML): under one of [`MACHINE_PREFIXES`], or an
/// agent's A2A card (`/agents/{name}/{version}/agent-card.json` and
/// `/agents/{name}/.well-known/agent-card.json`), which sits beside the
/// agent's pages because A2A clients look for it there.
pub fn is_machine_path(path: &str) -> bool {
    MACHINE_PREFIXES.iter().any(|p| path.starts_with(p)) || is_agent_card_path(path)
}

fn is_agent_card_path(path: &str) -> bool {
    let segments: Vec<&str> = path.split('/').collect();
    matches!(
        segments.as_slice(),
        ["", "agents", name, _, "agent-card.json"] if !name.is_empty()
    )
}

/// A path template of the document, split for matching.
struct Template {
    /// `None` for a `{parameter}`.
    segments: Vec<Option<String>>,
    /// The last parameter spans segments, as the router's `{path:.*}`.
    tail: bool,
    methods: Vec<&'static str>,
    /// Its `GET` needs no credential.
    anonymous_get: bool,
}

/// A parameter the router matches across `/` (the log's tile paths).
const TAIL_PARAMETERS: [&str; 1] = ["{path}"];

impl Template {
    fn parameters(&self) -> usize {
        self.segments.iter().filter(|s| s.is_none()).count()
    }

    fn matches(&self, wanted: &[&str]) -> bool {
        let fits = if self.tail {
            wanted.len() >= self.segments.len()
        } else {
            wanted.len() == self.segments.len()
        };
        fits && self
            .segments
            .iter()
            .zip(wanted)
            .all(|(t, w)| t.as_deref().map_or(!w.is_empty(), |t| t == *w))
    }
}

/// The document's templates that match `path` most specifically (fewest
/// `{parameters}`); empty when none does. Read once from the document, so
/// a route, its `Allow` header and its cross-origin answer cannot
/// disagree.
fn most_specific(path: &str) -> Vec<&'static Template> {
    use std::sync::OnceLock;
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
                Template {
                    segments,
                    tail: TAIL_PARAMETERS.iter().any(|p| template.ends_with(p)),
                    methods,
                    anonymous_get: item
                        .get
                        .as_ref()
                        .is_some_and(|op| op.security.as_ref().is_none_or(Vec::is_empty)),
                }
            })
            .collect()
    });
    let wanted: Vec<&str> = path.split('/').collect();
    let matching: Vec<&Template> = table.iter().filter(|t| t.matches(&wanted)).collect();
    let Some(fewest) = matching.iter().map(|t| t.parameters()).min() else {
        return Vec::new();
    };
    matching
        .into_iter()
        .filter(|t| t.parameters() == fewest)
        .collect()
}

/// The methods the document lists for `path` (with `HEAD` wherever `GET`
/// is), from its most specific templates; `None` when no template matches.
pub fn allowed_methods(path: &str) -> Option<Vec<&'static str>> {
    let templates = most_specific(path);
    if templates.is_empty() {
        return None;
    }
    let mut allow: Vec<&'static str> = templates
        .iter()
        .flat_map(|t| t.methods.iter().copied())
        .collect();
    allow.sort_by_key(|m| {
        ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE"]
            .iter()
            .position(|x| x == m)
    });
    allow.dedup();
    Some(allow)
}

/// Whether a `GET` of `path` needs no credential: its most specific
/// templates list a `GET` and none of those asks for a credential.
pub fn is_anonymous_read(path: &str) -> bool {
    let templates = most_specific(path);
    let gets: Vec<_> = templates
        .iter()
        .filter(|t| t.methods.contains(&"GET"))
        .collect();
    !gets.is_empty() && gets.iter().all(|t| t.anonymous_get)
}

/// What no route matched (the catalog takes every other path): 405 with
/// `Allow` for a path the OpenAPI document lists with other methods, else
/// 404, both as problems.
pub async fn unmatched(req: HttpRequest) -> Result<HttpResponse, ApiError> {
    let path = req.path();
    let method = req.method().as_str();
    match allowed_methods(path).filter(|allow| !allow.contains(&method)) {
        Some(allow) => Err(ApiError::MethodNotAllowed {
            method: method.to_owned(),
            allow,
        }),
        None => Err(ServiceError::NotFound(format!("route {path}")).into()),
    }
}
