//! CLowl 0.2: what the registry answers an agent that talks to it in
//! CLowl, and the CAPS message of a published agent.
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
//! - Errors: malformed message E001, unsupported version E014 (both from the
//!   core's parser), unknown task E005, bad `body.d` E008, rate-limited E004
//!   (`retry: true`), resolution past its deadline E006, unexpected failure
//!   E009. A package, version, tool or model that does not exist is E008
//!   too: it is a fact about `body.d` the sender can fix, like any other
//!   invalid task data, and `DONE` always carries a record.
//! - `auth` is not checked: every task reads public data.

use std::sync::Arc;

use agentlang_core::{
    Kind, PackageName, Version,
    protocol::clowl::{self, Body, ClowlError, ErrorCode, Id, Message, Performative},
};
use serde_json::{Map, Value, json};

use crate::{
    Registry, ServiceError,
    agent_tasks::{self, ReadTask, ResolveTask, SearchTask, TaskError},
    rate_limits::{Bucket, ClientAddr},
};

/// The tasks a QRY or REQ may name.
pub const TASKS: [&str; 5] = ["search", "read", "resolve", "capabilities", "status"];

/// Answers one CLowl message from `client`: ERR E004 when the client is
/// over its message budget, else the answer. Parsing a message of up to
/// 1 MiB is CPU work: it runs on a blocking thread, with the task's
/// database reads run through the runtime's handle.
pub async fn answer_message(
    registry: Arc<Registry>,
    client: &ClientAddr,
    raw: bytes::Bytes,
) -> Result<Message, ServiceError> {
    if let Err(ServiceError::RateLimited { retry_after_secs }) = registry
        .rate_limits
        .check(Bucket::AgentMessage, client.as_str())
    {
        return Ok(rate_limited(&registry, &raw, retry_after_secs));
    }
    let runtime = tokio::runtime::Handle::current();
    let client = client.clone();
    tokio::task::spawn_blocking(move || runtime.block_on(answer(&registry, &client, &raw)))
        .await
        .map_err(ServiceError::internal)
}

/// The CLowl CAPS message of a published agent: `supports` lists
/// `tool:<name>` for each tool it declares, `mcp:<server>` for each MCP
/// server and `protocol:<name>` for each protocol; `from` is the package
/// name. A name or version that cannot be one is not found.
pub async fn agent_caps(
    registry: &Registry,
    name: &str,
    version: &str,
) -> Result<Message, ServiceError> {
    let not_found = || ServiceError::NotFound(format!("agent {name} {version}"));
    let package_name = PackageName::new(name).map_err(|_| not_found())?;
    let parsed_version = Version::parse(version).map_err(|_| not_found())?;
    let package = registry
        .db
        .find_package(Kind::Agent, &package_name)
        .await?
        .ok_or_else(not_found)?;
    let record = registry
        .db
        .find_version(package.id, &parsed_version)
        .await?
        .filter(|v| v.deleted_at.is_none())
        .ok_or_else(not_found)?;
    let from = Id::new(package.name.to_string()).map_err(ServiceError::internal)?;
    Ok(Message::caps(
        from,
        agent_tasks::agent_supports(&record.spec.0),
        fresh_mid(),
        now_secs(),
    ))
}

fn now_secs() -> u64 {
    u64::try_from(store::now()).unwrap_or(0)
}

/// A fresh message id: UUIDv7, time-ordered.
pub fn fresh_mid() -> Id {
    // A UUID's text is never empty.
    Id::new(uuid::Uuid::now_v7().to_string()).expect("a UUID is a non-empty id")
}

fn registry_id(registry: &Registry) -> Id {
    // The identity refuses an empty agent id at start-up.
    Id::new(registry.identity.agent_id()).expect("the agent id is checked at start-up")
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
fn rate_limited(registry: &Registry, raw: &[u8], retry_after_secs: u64) -> Message {
    let error = ClowlError::new(
        ErrorCode::E004,
        format!("rate limited; retry in {retry_after_secs} s"),
        None,
    );
    Message::error_for_rejected(raw, &error, registry_id(registry), fresh_mid(), now_secs())
}

/// Answers the bytes of one CLowl message, already counted against its
/// sender's limit.
async fn answer(registry: &Registry, client: &ClientAddr, raw: &[u8]) -> Message {
    let me = registry_id(registry);
    let request = match Message::from_slice(raw) {
        Ok(message) => message,
        Err(error) => {
            return Message::error_for_rejected(raw, &error, me, fresh_mid(), now_secs());
        }
    };
    let outcome = match request.performative() {
        Performative::Req | Performative::Qry => run_task(registry, client, &request).await,
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

async fn run_task(
    registry: &Registry,
    client: &ClientAddr,
    request: &Message,
) -> Result<Message, ClowlError> {
    let me = registry_id(registry);
    let task = request.body().t.as_str();
    let d = &request.body().d;
    let result = match task {
        "capabilities" => return Ok(caps_reply(request, me)),
        "status" => Ok(json!({
            "status": "ok",
            "agent": registry.identity.agent_id(),
            "registry": registry.public_url(),
            "clowl": clowl::VERSION,
            "tasks": TASKS,
        })),
        "search" => match SearchTask::parse(d, "body.d") {
            Ok(t) => agent_tasks::search(registry, &t, "body.d").await,
            Err(e) => Err(e),
        },
        "read" => match ReadTask::parse(d, "body.d") {
            Ok(t) => agent_tasks::read(registry, &t, "body.d").await,
            Err(e) => Err(e),
        },
        "resolve" => match ResolveTask::parse(d, "body.d") {
            Ok(t) => agent_tasks::resolve(registry, client, &t, "body.d").await,
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
