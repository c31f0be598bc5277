//! `POST /clowl`: agents ask the registry in CLowl 0.2 (what it answers:
//! `app::clowl`), and `GET /api/v1/agents/{name}/{version}/caps`: the CAPS
//! message of a published agent.
//!
//! - Over plain HTTP one request has one response, so `DONE` is returned
//!   directly: every task completes within the request (resolution is cut off
//!   after ten seconds). `ACK` then `DONE` is for transports that can carry
//!   several messages (a WebSocket), where long work would be acknowledged
//!   first; this endpoint never needs it.
//! - HTTP status: 200 for every CLowl answer, ERR included, since the
//!   protocol carries the error; 413 only for a body over 1 MiB (the core's
//!   message limit), as a problem document, because no CLowl message can be
//!   read from it.

use actix_web::{HttpRequest, HttpResponse, get, post, web};
use agentlang_core::protocol::clowl::MAX_MESSAGE_BYTES;
use app::clowl;
use serde::Serialize;
use serde_json::Value;
use utoipa::ToSchema;

use crate::{error::ApiError, rate_limit::Client, state::AppState};

/// A CLowl 0.2 message (documentation of the wire form; the core's parser is
/// the judge).
#[derive(Debug, Serialize, ToSchema)]
#[schema(example = json!({
    "clowl": "0.2",
    "mid": "0195f0a2-7c1e-7a3b-9d2e-2f1c8e4b6a01",
    "ts": 1_709_078_400,
    "tid": "t001",
    "p": "REQ",
    "from": "radar",
    "to": "agentlang-registry",
    "cid": "find-tools",
    "body": {"t": "search", "d": {"q": "web search", "kind": "tool"}}
}))]
pub struct ClowlMessage {
    /// Protocol version; must be `"0.2"` (else ERR E014).
    #[schema(example = "0.2")]
    pub clowl: String,
    /// Unique message id: a UUIDv7 (RFC 9562, hyphenated) on every message
    /// sent to the registry (else ERR E001 naming `mid`); the registry's
    /// answers use UUIDv7 too.
    pub mid: String,
    /// Unix seconds when the message was created.
    pub ts: u64,
    /// Trace id, copied into the answer.
    pub tid: Option<String>,
    /// Parent message id: in an answer, the request's `mid`.
    pub pid: Option<String>,
    /// Performative: REQ, QRY, INF or CAPS to the registry; DONE, CAPS, ACK
    /// or ERR from it.
    #[schema(example = "REQ")]
    pub p: String,
    /// Sender agent id.
    pub from: String,
    /// Recipient: an agent id, `"*"`, or a list of agent ids.
    #[schema(value_type = ClowlRecipient)]
    pub to: Value,
    /// Conversation id, copied into the answer.
    pub cid: String,
    pub body: ClowlBody,
    /// Context reference `{ref, inline, hash}`, checked on every message.
    /// `ref` forms the registry dereferences: `agentlang:<kind>/<name>`
    /// (hash: the container SHA-256 of the newest unyanked version),
    /// `agentlang:<kind>/<name>@<version>` (hash: that version's container
    /// SHA-256), `sha256:<hex>` (a blob it stores; hash: the digest) and its
    /// own `/api/v1/<kinds>/<name>[/<version>]` URLs. Any other ref is
    /// unreachable (nothing foreign is fetched). A hash mismatch is ERR E016;
    /// unreachable with `inline: null` is E003; `inline` used is counted in
    /// `/metrics` (`agentlang_registry_clowl_inline_context_total`).
    #[schema(value_type = Option<Object>)]
    pub ctx: Option<Value>,
    /// An API token of this registry (as for `Authorization: Bearer`).
    /// Optional for read-only tasks; when present it must be live (else
    /// ERR E002, never DONE). `yank`/`unyank` require one with the `yank`
    /// scope, of an owner of the package.
    pub auth: Option<String>,
    /// Determinism flag.
    pub det: Option<bool>,
}

/// `body`: the task and its data.
/// A CLowl `to`: one agent id (`"*"` for every agent) or several.
#[derive(Debug, Serialize, ToSchema)]
#[serde(untagged)]
pub enum ClowlRecipient {
    #[schema(example = "agentlang-registry")]
    One(String),
    Many(Vec<String>),
}

#[derive(Debug, Serialize, ToSchema)]
pub struct ClowlBody {
    /// Task: `search`, `read`, `resolve`, `capabilities` or `status` in a
    /// REQ or QRY; `yank` or `unyank` in a REQ only (with `auth`); `error`
    /// in an ERR; the request's task in a DONE.
    #[schema(example = "search")]
    pub t: String,
    /// Task data. search: `{q, kind?, page?}`; read: `{kind, name,
    /// version?}`; resolve: `{tools, models?, lock?}` where `tools` is a
    /// list of `{name, version?}` or a map of name to requirement and `lock`
    /// an existing agent.lock (YAML text or JSON); yank: `{kind, name,
    /// version, reason?}`; unyank: `{kind, name, version}`; status: `{}`
    /// (its DONE: `{status: ok|degraded, database, storage, log, log_size,
    /// ...}`). In an ERR: `{code, msg, retry}`; in a CAPS: `{supports,
    /// clowl}`.
    #[schema(value_type = Object, example = json!({"q": "web search", "kind": "tool"}))]
    pub d: Value,
}

/// An ERR answer's `body.d`.
#[derive(Debug, Serialize, ToSchema)]
#[schema(example = json!({"code": "E008", "msg": "body.d.q: required field is missing", "retry": true}))]
pub struct ClowlErrorData {
    /// E001 malformed (or a `mid` that is not a UUIDv7), E002 `auth`
    /// invalid, expired or revoked, or missing/insufficient for a task that
    /// changes state, E003 `ctx.ref` unreachable with no `inline`, E004
    /// rate-limited, E005 unknown task (or a state-changing task in a QRY),
    /// E006 resolution past its deadline, E008 invalid task data or unknown
    /// package, E009 internal, E014 version, E016 `ctx.hash` does not match
    /// what `ctx.ref` names.
    pub code: String,
    pub msg: String,
    /// Whether resending (fixed, or later) can succeed.
    pub retry: bool,
}

/// Talk to the registry in CLowl 0.2.
///
/// Every CLowl answer is HTTP 200, ERR included: the protocol carries the
/// error code. Tasks: `search`, `read`, `resolve`, `capabilities` and
/// `status` (REQ or QRY, no `auth` needed) and `yank`/`unyank` (REQ with an
/// `auth` token holding the `yank` scope). `mid` must be a UUIDv7; `auth`,
/// when present, must be a live token (E002); `ctx.ref` is dereferenced
/// and its `hash` verified (E016 on mismatch, E003 when unreachable without
/// `inline`). A missing package is ERR E008. DONE is returned directly (no
/// ACK first: every task completes within the request). See docs/clowl.md.
#[utoipa::path(
    tag = "agent protocols",
    request_body(
        content = ClowlMessage,
        content_type = "application/json",
        description = "One CLowl 0.2 message, at most 1 MiB",
    ),
    responses(
        (status = 200, body = ClowlMessage, description = "The answer: DONE, CAPS, ACK or ERR (whose body.d is a ClowlErrorData), with pid = the request's mid and its cid and tid",
            example = json!({
                "clowl": "0.2",
                "mid": "0195f0a2-7c1f-7d10-8a55-0b9a1d2e3f40",
                "ts": 1_709_078_401,
                "tid": "t001",
                "pid": "0195f0a2-7c1e-7a3b-9d2e-2f1c8e4b6a01",
                "p": "DONE",
                "from": "agentlang-registry",
                "to": "radar",
                "cid": "find-tools",
                "body": {"t": "search", "d": {"query": "web search", "kind": "tool", "page": 1, "per_page": 20, "results": [
                    {"kind": "tool", "name": "web_search", "description": "Search the web", "keywords": ["search"], "latest_version": "1.2.0", "updated_at": "2025-01-29T10:30:00Z"}
                ]}}
            })),
        (status = 413, description = "Over 1 MiB: no CLowl message can be read", body = crate::error::Problem, content_type = "application/problem+json"),
    )
)]
#[post("/clowl")]
pub async fn post_clowl(
    req: HttpRequest,
    payload: web::Payload,
    Client(client): Client,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let raw = super::read_body(&req, payload, MAX_MESSAGE_BYTES).await?;
    let registry = std::sync::Arc::clone(&state.registry);
    let answer = clowl::answer_message(registry, &client, raw).await?;
    Ok(HttpResponse::Ok().json(answer.to_value()))
}

/// The CLowl CAPS message of a published agent.
///
/// Runtimes broadcast it when the agent connects. `supports` lists `tool:<name>` for each tool the agent declares (registry,
/// HTTP and bash tools), `mcp:<server>` for each MCP server and
/// `protocol:<name>` for each protocol. `from` is the agent's package name;
/// a runtime may substitute its instance id, `mid` and `ts`.
#[utoipa::path(
    tag = "agent protocols",
    params(
        ("name" = String, Path, description = "The agent's name"),
        ("version" = String, Path, description = "A published version"),
    ),
    responses(
        (status = 200, body = ClowlMessage, description = "A CAPS message",
            example = json!({
                "clowl": "0.2",
                "mid": "0195f0a2-7c1f-7d10-8a55-0b9a1d2e3f41",
                "ts": 1_709_078_400,
                "p": "CAPS",
                "from": "research-assistant",
                "to": "*",
                "cid": "system",
                "body": {"t": "capabilities", "d": {"supports": ["protocol:a2a", "tool:web_fetch", "tool:web_search"], "clowl": "0.2"}}
            })),
        (status = 404, description = "No such agent or version", body = crate::error::Problem, content_type = "application/problem+json"),
    )
)]
#[get("/api/v1/agents/{name}/{version}/caps")]
pub async fn get_agent_caps(
    path: web::Path<(String, String)>,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let (name, version) = path.into_inner();
    let caps = clowl::agent_caps(&state, &name, &version).await?;
    Ok(HttpResponse::Ok().json(caps.to_value()))
}
