//! The MCP Registry API, v0.1 (the MCP registry's `2025-12-01` document,
//! vendored as `server/tests/api/mcp/openapi.yaml`): every tool of
//! `kind: mcp` as an MCP server, read-only. The read operations answer the
//! document's shapes (`app::mcp`); its write operations (publish, edit,
//! delete, status) answer 501, since servers are published here as tool
//! packages. Every error on these paths is the document's
//! `{"error": "..."}`, not a problem document ([`crate::error`] rewrites
//! them, rate limits and unknown paths included). `docs/mcp-registry.md`
//! is the contract.

use actix_web::{HttpResponse, delete, get, patch, post, put, web};
use serde::Deserialize;
use utoipa::IntoParams;

use crate::{
    error::{ApiError, McpError},
    state::AppState,
};
use app::mcp::{self, ListQuery, ServerList, ServerResponse};

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ListParams {
    /// Where the page starts: `metadata.nextCursor` of the page before, as
    /// it came (opaque). A cursor the registry did not make is refused
    /// (400).
    pub cursor: Option<String>,
    /// Servers per page: default 30; above 100 is served as 100, below 1
    /// as 1.
    #[param(value_type = Option<i64>)]
    pub limit: Option<String>,
    /// A substring of the server name (`<namespace>/<tool>`), any case.
    #[param(example = "weather")]
    pub search: Option<String>,
    /// Only versions published, yanked, unyanked or deleted at or after
    /// this RFC 3339 date-time; deleted versions are then included.
    #[param(value_type = Option<String>, format = DateTime, example = "2025-08-07T13:15:04.280Z")]
    pub updated_since: Option<String>,
    /// `latest` (each server's latest version) or an exact version
    /// (`1.2.3`, by SemVer precedence); otherwise every version.
    #[param(example = "latest")]
    pub version: Option<String>,
    /// Versions the registry deleted too, with status `deleted` (default
    /// false; always true with `updated_since`).
    #[param(value_type = Option<bool>)]
    pub include_deleted: Option<String>,
}

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct DeletedParams {
    /// Versions the registry deleted too, with status `deleted` (default
    /// false).
    #[param(value_type = Option<bool>)]
    pub include_deleted: Option<String>,
}

fn json(body: bytes::Bytes) -> HttpResponse {
    HttpResponse::Ok()
        .content_type("application/json")
        .body(body)
}

/// Lists MCP servers: every version of every tool of `kind: mcp`, by
/// name, in pages.
#[utoipa::path(
    tag = "mcp",
    params(ListParams),
    responses(
        (status = 200, body = ServerList, description = "One page of server versions, by name then publication; `metadata.nextCursor` is absent on the last page"),
        (status = 400, body = McpError, description = "A cursor the registry did not make, a `limit` that is no integer, an `updated_since` that is no RFC 3339 date-time, or an `include_deleted` that is no boolean"),
        (status = 429, body = McpError, description = "Too many requests from this client", headers(("Retry-After" = i64, description = "Seconds to wait before retrying"))),
        (status = 503, body = McpError, description = "A backend is out of reach, or the request ran past its deadline", headers(("Retry-After" = i64, description = "Seconds to wait before retrying"))),
    )
)]
#[get("/v0.1/servers")]
pub async fn list_mcp_servers(
    state: web::Data<AppState>,
    params: web::Query<ListParams>,
) -> Result<HttpResponse, ApiError> {
    let query = ListQuery::parse(
        params.cursor.as_deref(),
        params.limit.as_deref(),
        params.search.as_deref(),
        params.updated_since.as_deref(),
        params.version.as_deref(),
        params.include_deleted.as_deref(),
    )?;
    Ok(json(mcp::list_answer(&state.registry, &query).await?.body))
}

/// Lists every version of one MCP server, newest publication first.
#[utoipa::path(
    tag = "mcp",
    params(
        ("serverName" = String, Path, description = "The server's name, URL-encoded (`com.example.registry%2Fweather`)", example = "com.example.registry%2Fweather"),
        DeletedParams,
    ),
    responses(
        (status = 200, body = ServerList, description = "Every version, newest publication first"),
        (status = 400, body = McpError, description = "An `include_deleted` that is no boolean"),
        (status = 404, body = McpError, description = "No such server: not this registry's namespace, or no tool of `kind: mcp` by that name"),
        (status = 429, body = McpError, description = "Too many requests from this client", headers(("Retry-After" = i64, description = "Seconds to wait before retrying"))),
        (status = 503, body = McpError, description = "A backend is out of reach, or the request ran past its deadline", headers(("Retry-After" = i64, description = "Seconds to wait before retrying"))),
    )
)]
#[get("/v0.1/servers/{serverName}/versions")]
pub async fn list_mcp_server_versions(
    state: web::Data<AppState>,
    path: web::Path<String>,
    params: web::Query<DeletedParams>,
) -> Result<HttpResponse, ApiError> {
    let include_deleted =
        mcp::query::parse_bool("include_deleted", params.include_deleted.as_deref())?;
    let answer = mcp::versions_answer(&state.registry, &path, include_deleted).await?;
    Ok(json(answer.body))
}

/// One version of one MCP server (`latest` for its latest).
#[utoipa::path(
    tag = "mcp",
    params(
        ("serverName" = String, Path, description = "The server's name, URL-encoded (`com.example.registry%2Fweather`)", example = "com.example.registry%2Fweather"),
        ("version" = String, Path, description = "`latest`, or a version, URL-encoded (`1.0.0%2B20130313144700` for build metadata); matched by SemVer precedence", example = "1.0.0"),
        DeletedParams,
    ),
    responses(
        (status = 200, body = ServerResponse, description = "The version"),
        (status = 400, body = McpError, description = "An `include_deleted` that is no boolean"),
        (status = 404, body = McpError, description = "No such server, or no such version of it"),
        (status = 429, body = McpError, description = "Too many requests from this client", headers(("Retry-After" = i64, description = "Seconds to wait before retrying"))),
        (status = 503, body = McpError, description = "A backend is out of reach, or the request ran past its deadline", headers(("Retry-After" = i64, description = "Seconds to wait before retrying"))),
    )
)]
#[get("/v0.1/servers/{serverName}/versions/{version}")]
pub async fn get_mcp_server_version(
    state: web::Data<AppState>,
    path: web::Path<(String, String)>,
    params: web::Query<DeletedParams>,
) -> Result<HttpResponse, ApiError> {
    let (server_name, version) = path.into_inner();
    let include_deleted =
        mcp::query::parse_bool("include_deleted", params.include_deleted.as_deref())?;
    let answer =
        mcp::version_answer(&state.registry, &server_name, &version, include_deleted).await?;
    Ok(json(answer.body))
}

/// The answer of every write the MCP document lists: servers are published
/// here as tool packages (`agentlang publish`, `POST /api/v1/publish`).
fn not_implemented(what: &str) -> HttpResponse {
    HttpResponse::NotImplemented().json(McpError {
        error: format!(
            "{what} is not supported by this registry's MCP API: an MCP server is published as a tool package of kind mcp (agentlang publish); see /docs/mcp-registry"
        ),
    })
}

/// Not supported: answers 501.
#[utoipa::path(
    tag = "mcp",
    responses(
        (status = 501, body = McpError, description = "Publishing through the MCP API is not supported: publish a tool package of `kind: mcp`"),
        (status = 429, body = McpError, description = "Too many requests from this client", headers(("Retry-After" = i64, description = "Seconds to wait before retrying"))),
    )
)]
#[post("/v0.1/publish")]
pub async fn publish_mcp_server() -> HttpResponse {
    not_implemented("Publishing")
}

/// Not supported: answers 501.
#[utoipa::path(
    tag = "mcp",
    params(
        ("serverName" = String, Path, description = "The server's name, URL-encoded"),
        ("version" = String, Path, description = "A version, URL-encoded"),
    ),
    responses(
        (status = 501, body = McpError, description = "Editing a version is not supported: versions are immutable"),
        (status = 429, body = McpError, description = "Too many requests from this client", headers(("Retry-After" = i64, description = "Seconds to wait before retrying"))),
    )
)]
#[put("/v0.1/servers/{serverName}/versions/{version}")]
pub async fn put_mcp_server_version() -> HttpResponse {
    not_implemented("Editing a version")
}

/// Not supported: answers 501.
#[utoipa::path(
    tag = "mcp",
    params(
        ("serverName" = String, Path, description = "The server's name, URL-encoded"),
        ("version" = String, Path, description = "A version, URL-encoded"),
    ),
    responses(
        (status = 501, body = McpError, description = "Deleting a version is not supported: yank it (`POST /api/v1/tools/{name}/{version}/yank`), which shows it as deprecated"),
        (status = 429, body = McpError, description = "Too many requests from this client", headers(("Retry-After" = i64, description = "Seconds to wait before retrying"))),
    )
)]
#[delete("/v0.1/servers/{serverName}/versions/{version}")]
pub async fn delete_mcp_server_version() -> HttpResponse {
    not_implemented("Deleting a version")
}

/// Not supported: answers 501.
#[utoipa::path(
    tag = "mcp",
    params(
        ("serverName" = String, Path, description = "The server's name, URL-encoded"),
        ("version" = String, Path, description = "A version, URL-encoded"),
    ),
    responses(
        (status = 501, body = McpError, description = "Setting a version's status is not supported: yank or unyank it through `/api/v1`"),
        (status = 429, body = McpError, description = "Too many requests from this client", headers(("Retry-After" = i64, description = "Seconds to wait before retrying"))),
    )
)]
#[patch("/v0.1/servers/{serverName}/versions/{version}/status")]
pub async fn patch_mcp_server_version_status() -> HttpResponse {
    not_implemented("Setting a version's status")
}

/// Not supported: answers 501.
#[utoipa::path(
    tag = "mcp",
    params(
        ("serverName" = String, Path, description = "The server's name, URL-encoded"),
    ),
    responses(
        (status = 501, body = McpError, description = "Setting every version's status is not supported: yank or unyank versions through `/api/v1`"),
        (status = 429, body = McpError, description = "Too many requests from this client", headers(("Retry-After" = i64, description = "Seconds to wait before retrying"))),
    )
)]
#[patch("/v0.1/servers/{serverName}/status")]
pub async fn patch_mcp_server_status() -> HttpResponse {
    not_implemented("Setting a server's status")
}
