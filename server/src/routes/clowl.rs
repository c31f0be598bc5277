//! `POST /clowl`: agents ask the registry in CLowl 0.2, and
//! `GET /api/v1/agents/{name}/{version}/caps`: the CAPS message of a
//! published agent.
//!
//! What the registry answers, and why:
//! - `REQ` with `body.t` `search` (`d: {q, kind?, page?}`), `read`
//!   (`d: {kind, name, version?}`), `resolve` (`d: {tools, models?, lock?}`)
//!   or `capabilities`; `QRY` with the same tasks or `status`. None of these
//!   tasks changes anything, so a QRY ("info without acting") may ask for
//!   any of them; `status` (the registry's health and tasks) is the one task
//!   meant for QRY, and is answered to REQ too.
//! - Answers are `DONE` (result in `body.d`), `CAPS` for `capabilities`, or
//!   `ERR`; every one has `pid` = the request's `mid`, the request's `cid`
//!   and `tid`, and goes `to` the sender. `INF` is acknowledged with `ACK`;
//!   a `CAPS` from an agent is answered with the registry's own CAPS;
//!   anything else (`ACK`, `DONE`, `ERR`, `PROG`, `DLGT`, `CNCL`) is `ERR
//!   E005`: the registry runs no task that could receive them.
//! - Over plain HTTP one request has one response, so `DONE` is returned
//!   directly: every task completes within the request (resolution is cut off
//!   after ten seconds). `ACK` then `DONE` is for transports that can carry
//!   several messages (a WebSocket), where long work would be acknowledged
//!   first; this endpoint never needs it.
//! - Errors: malformed message E001, unsupported version E014 (both from the
//!   core's parser), unknown task E005, bad `body.d` E008, rate-limited E004
//!   (`retry: true`), resolution past its deadline E006, unexpected failure
//!   E009. A package, version, tool or model that does not exist is E008
//!   too: it is a fact about `body.d` the sender can fix, like any other
//!   invalid task data, and `DONE` always carries a record.
//! - HTTP status: 200 for every CLowl answer, ERR included, since the
//!   protocol carries the error; 413 only for a body over 1 MiB (the core's
//!   message limit), as a problem document, because no CLowl message can be
//!   read from it.
//! - `auth` is not checked: every task reads public data.

use actix_web::{HttpRequest, HttpResponse, get, post, web};
use agentlang_core::{
    Kind, PackageName, Version,
    protocol::clowl::{self, Body, ClowlError, ErrorCode, Id, Message, Performative},
};
use serde::Serialize;
use serde_json::{Map, Value, json};
use utoipa::ToSchema;

use crate::{
    error::ApiError,
    rate_limit::{Bucket, ClientAddr},
    routes::agent_tasks::{self, ReadTask, ResolveTask, SearchTask, TaskError},
    state::AppState,
};

/// The tasks a QRY or REQ may name.
pub const TASKS: [&str; 5] = ["search", "read", "resolve", "capabilities", "status"];

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
    /// Unique message id. The registry's answers use UUIDv7.
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
    /// Context reference `{ref, inline, hash}`; not used by the registry.
    #[schema(value_type = Option<Object>)]
    pub ctx: Option<Value>,
    /// Optional auth token; not checked (every task reads public data).
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
    /// request; `error` in an ERR; the request's task in a DONE.
    #[schema(example = "search")]
    pub t: String,
    /// Task data. search: `{q, kind?, page?}`; read: `{kind, name,
    /// version?}`; resolve: `{tools, models?, lock?}` where `tools` is a
    /// list of `{name, version?}` or a map of name to requirement and `lock`
    /// an existing agent.lock (YAML text or JSON). In an ERR: `{code, msg,
    /// retry}`; in a CAPS: `{supports, clowl}`.
    #[schema(value_type = Object, example = json!({"q": "web search", "kind": "tool"}))]
    pub d: Value,
}

/// An ERR answer's `body.d`.
#[derive(Debug, Serialize, ToSchema)]
#[schema(example = json!({"code": "E008", "msg": "body.d.q: required field is missing", "retry": true}))]
pub struct ClowlErrorData {
    /// E001 malformed, E004 rate-limited, E005 unknown task, E008 invalid
    /// task data or unknown package, E009 internal, E014 version.
    pub code: String,
    pub msg: String,
    /// Whether resending (fixed, or later) can succeed.
    pub retry: bool,
}

fn now_secs() -> u64 {
    u64::try_from(crate::common::now()).unwrap_or(0)
}

/// A fresh message id: UUIDv7, time-ordered.
pub fn fresh_mid() -> Id {
    // A UUID's text is never empty.
    Id::new(uuid::Uuid::now_v7().to_string()).expect("a UUID is a non-empty id")
}

fn registry_id(state: &AppState) -> Id {
    // The identity refuses an empty agent id at start-up.
    Id::new(state.identity.agent_id()).expect("the agent id is checked at start-up")
}

fn into_map(value: Value) -> Map<String, Value> {
    match value {
        Value::Object(map) => map,
        other => Map::from_iter([("value".to_owned(), other)]),
    }
}

impl From<&TaskError> for ClowlError {
    fn from(e: &TaskError) -> Self {
        let code = match e {
            TaskError::Internal(_) => ErrorCode::E009,
            TaskError::TimedOut(_) => ErrorCode::E006,
            TaskError::Missing { .. }
            | TaskError::Invalid { .. }
            | TaskError::NotFound(_)
            | TaskError::Unresolvable(_) => ErrorCode::E008,
        };
        match e {
            TaskError::Missing { field } => {
                ClowlError::new(code, "required field is missing", Some(field))
            }
            TaskError::Invalid { field, message } => ClowlError::new(code, message, Some(field)),
            other => ClowlError::new(code, other.public_message(), None),
        }
    }
}

/// The ERR E004 answer to a message refused by the rate limit, built without
/// parsing the message.
fn rate_limited(state: &AppState, raw: &[u8], retry_after_secs: u64) -> Message {
    let error = ClowlError::new(
        ErrorCode::E004,
        format!("rate limited; retry in {retry_after_secs} s"),
        None,
    );
    Message::error_for_rejected(raw, &error, registry_id(state), fresh_mid(), now_secs())
}

/// Answers the bytes of one CLowl message, already counted against its
/// sender's limit.
pub async fn answer(state: &AppState, raw: &[u8]) -> Message {
    let me = registry_id(state);
    let request = match Message::from_slice(raw) {
        Ok(message) => message,
        Err(error) => {
            return Message::error_for_rejected(raw, &error, me, fresh_mid(), now_secs());
        }
    };
    let outcome = match request.performative() {
        Performative::Req | Performative::Qry => run_task(state, &request).await,
        Performative::Caps => Ok(caps_reply(&request, me.clone())),
        Performative::Inf => Message::reply(
            &request,
            Performative::Ack,
            me.clone(),
            Body::new(request.body().t.clone(), Map::new()),
            fresh_mid(),
            now_secs(),
        ),
        other => Err(ClowlError::new(
            ErrorCode::E005,
            format!(
                "the registry answers REQ, QRY, INF and CAPS; it runs no task that could receive {other}"
            ),
            Some("p"),
        )),
    };
    outcome.unwrap_or_else(|error| {
        let body = error.to_error_body();
        Message::error(&request, me, body.code, body.msg, fresh_mid(), now_secs())
    })
}

fn caps_reply(request: &Message, me: Id) -> Message {
    let d = into_map(json!({"supports": TASKS, "clowl": clowl::VERSION}));
    Message::reply(
        request,
        Performative::Caps,
        me,
        Body::new("capabilities", d),
        fresh_mid(),
        now_secs(),
    )
    // A CAPS body with a version and a list of strings is always valid.
    .expect("the registry's CAPS body is valid")
}

async fn run_task(state: &AppState, request: &Message) -> Result<Message, ClowlError> {
    let me = registry_id(state);
    let task = request.body().t.as_str();
    let d = &request.body().d;
    let result = match task {
        "capabilities" => return Ok(caps_reply(request, me)),
        "status" => Ok(json!({
            "status": "ok",
            "agent": state.identity.agent_id(),
            "registry": state.public_url,
            "clowl": clowl::VERSION,
            "tasks": TASKS,
        })),
        "search" => match SearchTask::parse(d, "body.d") {
            Ok(t) => agent_tasks::search(state, &t, "body.d").await,
            Err(e) => Err(e),
        },
        "read" => match ReadTask::parse(d, "body.d") {
            Ok(t) => agent_tasks::read(state, &t, "body.d").await,
            Err(e) => Err(e),
        },
        "resolve" => match ResolveTask::parse(d, "body.d") {
            Ok(t) => agent_tasks::resolve(state, &t, "body.d").await,
            Err(e) => Err(e),
        },
        other => {
            return Err(ClowlError::new(
                ErrorCode::E005,
                format!(
                    "unknown task {other:?}; the registry supports {}",
                    TASKS.join(", ")
                ),
                Some("body.t"),
            ));
        }
    };
    let data = result.map_err(|e| ClowlError::from(&e))?;
    Message::reply(
        request,
        Performative::Done,
        me,
        Body::new(task, into_map(data)),
        fresh_mid(),
        now_secs(),
    )
}

/// Talk to the registry in CLowl 0.2.
///
/// Every CLowl answer is HTTP 200, ERR included: the protocol carries the
/// error code. Tasks: `search`, `read`, `resolve`, `capabilities` (REQ or
/// QRY) and `status` (QRY). A missing package is ERR E008. DONE is returned
/// directly (no ACK first: every task completes within the request).
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
    client: ClientAddr,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let raw = super::read_body(&req, payload, clowl::MAX_MESSAGE_BYTES).await?;
    if let Err(ApiError::RateLimited { retry_after_secs }) = state
        .rate_limits
        .check(Bucket::AgentMessage, client.as_str())
    {
        return Ok(HttpResponse::Ok().json(rate_limited(&state, &raw, retry_after_secs).to_value()));
    }
    // Parsing a message of up to 1 MiB is CPU work: off the HTTP workers,
    // with the task's database reads run through the runtime's handle.
    let runtime = tokio::runtime::Handle::current();
    let answer = web::block(move || runtime.block_on(answer(&state, &raw)).to_value())
        .await
        .map_err(ApiError::internal)?;
    Ok(HttpResponse::Ok().json(answer))
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
    let not_found = || ApiError::NotFound(format!("agent {name} {version}"));
    let package_name = PackageName::new(&name).map_err(|_| not_found())?;
    let parsed_version = Version::parse(&version).map_err(|_| not_found())?;
    let package = state
        .db
        .find_package(Kind::Agent, &package_name)
        .await?
        .ok_or_else(not_found)?;
    let record = state
        .db
        .find_version(package.id, &parsed_version)
        .await?
        .filter(|v| v.deleted_at.is_none())
        .ok_or_else(not_found)?;
    let from = Id::new(package.name).map_err(ApiError::internal)?;
    let caps = Message::caps(
        from,
        agent_tasks::agent_supports(&record.spec.0),
        fresh_mid(),
        now_secs(),
    );
    Ok(HttpResponse::Ok().json(caps.to_value()))
}
