//! CLowl 0.2: what the registry answers an agent that talks to it in
//! CLowl, and the CAPS message of a published agent.
//!
//! What the registry answers, and why (the wire contract: docs/clowl.md):
//! - Checked in this order, each refusal an ERR threaded to the request:
//!   the core's parser (E001 malformed, E014 version); `mid` must be a
//!   UUIDv7 (E001, field `mid`: the spec says "use UUIDv7", and the
//!   registry keys nothing on a free-form id it cannot order); `auth`, when
//!   present, must be a live API token of this registry (E002, never
//!   DONE); `ctx` (below); then the performative and task.
//! - `REQ` with `body.t` `search` (`d: {q, kind?, page?}`), `read`
//!   (`d: {kind, name, version?}`), `resolve` (`d: {tools, models?, lock?}`),
//!   `capabilities` or `status`: read-only, answered without `auth`. `QRY`
//!   ("info without acting") may ask for any of those, never more.
//! - `REQ` `yank` (`d: {kind, name, version, reason?}`) and `unyank`
//!   (`d: {kind, name, version}`) change state: they need `auth`, a token
//!   with the `yank` scope of an owner (E002 otherwise, the message says
//!   why), and run the HTTP API's own rule (`packages::set_yanked`). As a
//!   `QRY` they are E005: a query never acts.
//! - `ctx.ref` in one of the forms `ContextRef::parse` reads is looked up
//!   with one bounded read: a version's `hash` is its container's SHA-256,
//!   a blob's its digest, a package's the container of its newest
//!   unyanked version (newest of all when every one is yanked). A mismatch
//!   is E016 (the content was altered). Any other ref is unreachable: no
//!   foreign URL is ever fetched. Unreachable with `inline`: the inline
//!   text is the context, counted in `/metrics`
//!   (`clowl_inline_context_total{why}`) and logged without its text;
//!   unreachable without `inline`: E003.
//! - `status` runs `/readyz`'s check and reads the transparency log's
//!   state: `{status: ok|degraded, database, storage, log, ...}`.
//! - Answers are `DONE` (result in `body.d`), `CAPS` for `capabilities`, or
//!   `ERR`; every one has `pid` = the request's `mid`, the request's `cid`
//!   and `tid`, and goes `to` the sender. `INF` is acknowledged with `ACK`;
//!   a `CAPS` from an agent is answered with the registry's own CAPS;
//!   anything else (`ACK`, `DONE`, `ERR`, `PROG`, `DLGT`, `CNCL`) is `ERR
//!   E005`: the registry runs no task that could receive them.
//! - Other errors: unknown task E005, bad `body.d` E008, rate-limited E004
//!   (`retry: true`), resolution past its deadline E006, unexpected failure
//!   E009. A package, version, tool or model that does not exist is E008
//!   too: it is a fact about `body.d` the sender can fix, like any other
//!   invalid task data, and `DONE` always carries a record.

use std::sync::Arc;

use agentlang_core::{
    Kind, PackageName, Version,
    digest::Sha256Digest,
    protocol::clowl::{
        self, Body, ClowlError, Context, ContextRef, ContextUse, ErrorCode, Id, Message,
        Performative,
    },
};
use serde_json::{Map, Value, json};

use crate::{
    Registry, ServiceError,
    agent_tasks::{self, ReadTask, ResolveTask, SearchTask, TaskError},
    health,
    rate_limits::{Bucket, ClientAddr},
    tokens::{self, Authenticated},
};

/// The tasks the registry runs, as its CAPS lists them.
pub const TASKS: [&str; 7] = [
    "search",
    "read",
    "resolve",
    "capabilities",
    "status",
    "yank",
    "unyank",
];

/// The tasks that change state: REQ only, with `auth`.
pub const STATE_CHANGING_TASKS: [&str; 2] = ["yank", "unyank"];

/// How long dereferencing a `ctx.ref` may take: past it, the ref is
/// unreachable (one read of the database or one HEAD of the blob store).
pub const CTX_LOOKUP_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(2);

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
    let outcome = match admit(registry, &request).await {
        Err(refused) => Err(refused),
        Ok(caller) => dispatch(registry, client, &request, caller.as_ref(), me.clone()).await,
    };
    outcome.unwrap_or_else(|error| {
        let body = error.to_error_body();
        Message::error(&request, me, body.code, body.msg, fresh_mid(), now_secs())
    })
}

/// The checks every parsed message passes before its performative is
/// looked at: `mid`, `auth`, `ctx`, in that order. Returns the caller
/// `auth` names, if any.
async fn admit(
    registry: &Registry,
    request: &Message,
) -> Result<Option<Authenticated>, ClowlError> {
    if !request.mid().is_uuid_v7() {
        return Err(ClowlError::new(
            ErrorCode::E001,
            "must be a UUIDv7 (RFC 9562, hyphenated: version 7, variant 10)",
            Some("mid"),
        ));
    }
    let caller = match request.auth() {
        None => None,
        Some(token) => Some(authenticate(registry, token).await?),
    };
    if let Some(ctx) = request.ctx() {
        check_context(registry, request, ctx).await?;
    }
    Ok(caller)
}

/// `auth` as the HTTP API's bearer token: signature, stored row, secret,
/// revocation, expiry. Refused: E002 saying why; the database away: E009.
async fn authenticate(registry: &Registry, token: &str) -> Result<Authenticated, ClowlError> {
    match tokens::authenticate(registry, token, None).await {
        Ok(caller) => Ok(caller),
        Err(ServiceError::Unauthenticated(why)) => Err(ClowlError::new(
            ErrorCode::E002,
            format!("not a valid token of this registry: {why}"),
            Some("auth"),
        )),
        Err(e) => {
            tracing::warn!(error = %e, "clowl: auth could not be checked");
            Err(ClowlError::new(
                ErrorCode::E009,
                "the token could not be checked; retry later",
                Some("auth"),
            ))
        }
    }
}

/// Applies the spec's ctx rules with what the registry holds for `ref`.
async fn check_context(
    registry: &Registry,
    request: &Message,
    ctx: &Context,
) -> Result<(), ClowlError> {
    let held = match ctx.reference() {
        None => None,
        Some(reference) => held_digest(registry, reference).await,
    };
    let used = ctx.check_held(held.as_ref())?;
    if let ContextUse::Inline(text) = used {
        let why = if ctx.reference().is_some() {
            "unreachable_ref"
        } else {
            "no_ref"
        };
        registry
            .metrics
            .clowl_inline_context
            .with_label_values(&[why])
            .inc();
        // The spec: "monitoring should flag its usage". The text itself is
        // the sender's and stays out of the log.
        tracing::info!(
            mid = %request.mid(),
            from = %request.from(),
            why,
            inline_chars = text.chars().count(),
            "clowl: context taken from ctx.inline"
        );
    }
    Ok(())
}

/// The digest of what `reference` names, when the registry holds it;
/// `None` when it is not one of the registry's ref forms, names nothing
/// held, or the lookup fails or takes longer than [`CTX_LOOKUP_TIMEOUT`]
/// (all "unreachable" to the sender).
async fn held_digest(registry: &Registry, reference: &str) -> Option<Sha256Digest> {
    let parsed = ContextRef::parse(reference, registry.public_url());
    let lookup = async {
        match parsed {
            ContextRef::Foreign => Ok(None),
            ContextRef::Blob(digest) => registry
                .blobs
                .exists(&digest)
                .await
                .map(|held| held.then_some(digest))
                .map_err(|e| e.to_string()),
            ContextRef::Version(kind, name, version) => {
                let Some(package) = registry
                    .db
                    .find_package(kind, &name)
                    .await
                    .map_err(|e| e.to_string())?
                else {
                    return Ok(None);
                };
                Ok(registry
                    .db
                    .find_version(package.id, &version)
                    .await
                    .map_err(|e| e.to_string())?
                    .filter(|v| v.deleted_at.is_none())
                    .map(|v| v.sha256))
            }
            ContextRef::Package(kind, name) => Ok(registry
                .db
                .package_index(kind, &name)
                .await
                .map_err(|e| e.to_string())?
                .and_then(|index| {
                    let newest = |unyanked_only: bool| {
                        index
                            .versions
                            .iter()
                            .filter(|v| !unyanked_only || !v.yanked)
                            .max_by(|a, b| a.version.cmp(&b.version))
                            .map(|v| v.sha256)
                    };
                    newest(true).or_else(|| newest(false))
                })),
        }
    };
    match tokio::time::timeout(CTX_LOOKUP_TIMEOUT, lookup).await {
        Ok(Ok(held)) => held,
        Ok(Err(error)) => {
            tracing::warn!(%error, "clowl: ctx.ref lookup failed; treated as unreachable");
            None
        }
        Err(_) => {
            tracing::warn!("clowl: ctx.ref lookup timed out; treated as unreachable");
            None
        }
    }
}

async fn dispatch(
    registry: &Registry,
    client: &ClientAddr,
    request: &Message,
    caller: Option<&Authenticated>,
    me: Id,
) -> Result<Message, ClowlError> {
    match request.performative() {
        Performative::Req | Performative::Qry => run_task(registry, client, request, caller).await,
        Performative::Caps => Ok(caps_reply(request, me)),
        Performative::Inf => Message::reply(
            request,
            Performative::Ack,
            me,
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
    }
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
    caller: Option<&Authenticated>,
) -> Result<Message, ClowlError> {
    let me = registry_id(registry);
    let task = request.body().t.as_str();
    let d = &request.body().d;
    if STATE_CHANGING_TASKS.contains(&task) {
        if request.performative() == Performative::Qry {
            return Err(ClowlError::new(
                ErrorCode::E005,
                format!("{task} changes state and a QRY never acts; send it as a REQ"),
                Some("p"),
            ));
        }
        let Some(caller) = caller else {
            return Err(ClowlError::new(
                ErrorCode::E002,
                format!(
                    "{task} changes state: it needs an API token of this registry with the yank scope"
                ),
                Some("auth"),
            ));
        };
        let view = set_yanked(registry, caller, task == "yank", d).await?;
        return Message::reply(
            request,
            Performative::Done,
            me,
            Body::new(task, view),
            fresh_mid(),
            now_secs(),
        );
    }
    let result = match task {
        "capabilities" => return Ok(caps_reply(request, me)),
        "status" => Ok(status(registry).await),
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

/// `status`: the check `/readyz` makes, and the transparency log's state.
/// `status` is `ok` only when the database, blob storage and log all are.
async fn status(registry: &Registry) -> Value {
    let ready = health::readiness(registry).await;
    let reachable = |up: bool| if up { "ok" } else { "unreachable" };
    let (log, log_size) = match (registry.tlog.broken(), registry.tlog.checkpoint()) {
        // The reason stays in the registry's log: it names internals.
        (Some(_), _) => ("broken", None),
        (None, Some(checkpoint)) => ("ok", Some(checkpoint.size)),
        // Before the sequencer's first checkpoint (at start-up).
        (None, None) => ("starting", None),
    };
    let all_ok = ready.database && ready.storage && log == "ok";
    json!({
        "status": if all_ok { "ok" } else { "degraded" },
        "database": reachable(ready.database),
        "storage": reachable(ready.storage),
        "log": log,
        "log_size": log_size,
        "agent": registry.identity.agent_id(),
        "registry": registry.public_url(),
        "clowl": clowl::VERSION,
        "tasks": TASKS,
    })
}

/// The `body.d` of `yank` (`{kind, name, version, reason?}`) or `unyank`
/// (`{kind, name, version}`): a version named exactly, and for a yank its
/// reason (empty when absent; its length is the yank rule's to judge).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct YankTask {
    pub kind: Kind,
    pub name: PackageName,
    pub version: Version,
    /// `Some` (possibly empty) for a yank, `None` for an unyank.
    pub reason: Option<String>,
}

impl YankTask {
    pub fn parse(d: &Map<String, Value>, yank: bool) -> Result<Self, ClowlError> {
        let known: &[&str] = if yank {
            &["kind", "name", "version", "reason"]
        } else {
            &["kind", "name", "version"]
        };
        if let Some(key) = d.keys().find(|k| !known.contains(&k.as_str())) {
            return Err(ClowlError::new(
                ErrorCode::E008,
                format!("unknown field; expected one of {}", known.join(", ")),
                Some(&format!("body.d.{key}")),
            ));
        }
        let mut target = d.clone();
        let reason = if yank {
            match target.remove("reason") {
                None | Some(Value::Null) => Some(String::new()),
                Some(Value::String(r)) => Some(r),
                Some(_) => {
                    return Err(ClowlError::new(
                        ErrorCode::E008,
                        "must be a string",
                        Some("body.d.reason"),
                    ));
                }
            }
        } else {
            None
        };
        // The same reading of `{kind, name, version}` as `read`'s.
        let read = ReadTask::parse(&target, "body.d").map_err(|e| ClowlError::from(&e))?;
        let Some(version) = read.version else {
            return Err(ClowlError::new(
                ErrorCode::E008,
                "required field is missing",
                Some("body.d.version"),
            ));
        };
        Ok(Self {
            kind: read.kind,
            name: read.name,
            version,
            reason,
        })
    }
}

/// `yank`/`unyank` through the HTTP API's own rule; the answer is the
/// version as `GET /api/v1/{kind}/{name}/{version}` shows it.
async fn set_yanked(
    registry: &Registry,
    caller: &Authenticated,
    yank: bool,
    d: &Map<String, Value>,
) -> Result<Map<String, Value>, ClowlError> {
    let task_error = |e: TaskError| ClowlError::from(&e);
    let task = YankTask::parse(d, yank)?;
    let view = crate::packages::set_yanked(
        registry,
        caller,
        task.kind,
        &task.name,
        &task.version,
        task.reason.as_deref(),
    )
    .await
    .map_err(|e| match e {
        ServiceError::MissingScope(_)
        | ServiceError::TokenNotForPackage(_)
        | ServiceError::NotOwner(_)
        | ServiceError::Unauthenticated(_) => {
            ClowlError::new(ErrorCode::E002, e.to_string(), Some("auth"))
        }
        ServiceError::RateLimited { retry_after_secs } => ClowlError::new(
            ErrorCode::E004,
            format!("rate limited; retry in {retry_after_secs} s"),
            None,
        ),
        other => task_error(TaskError::from_service(other, "body.d")),
    })?;
    let value =
        serde_json::to_value(view).map_err(|e| ClowlError::from(&TaskError::Internal(e.into())))?;
    Ok(into_map(value))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn map(v: Value) -> Map<String, Value> {
        match v {
            Value::Object(m) => m,
            _ => unreachable!("test data is an object"),
        }
    }

    fn refused(d: Value, yank: bool) -> String {
        let e = YankTask::parse(&map(d), yank).unwrap_err();
        assert_eq!(e.code, ErrorCode::E008);
        e.to_string()
    }

    #[test]
    fn yank_data_names_one_version_exactly() {
        let task = YankTask::parse(
            &map(json!({"kind": "tool", "name": "web_search", "version": "1.2.0"})),
            true,
        )
        .unwrap();
        assert_eq!(task.version, Version::parse("1.2.0").unwrap());
        assert_eq!(task.reason.as_deref(), Some(""));
        let unyank = YankTask::parse(
            &map(json!({"kind": "tool", "name": "web_search", "version": "1.2.0"})),
            false,
        )
        .unwrap();
        assert_eq!(unyank.reason, None);

        assert_eq!(
            refused(json!({"kind": "tool", "name": "web_search"}), true),
            "E008 body.d.version: required field is missing"
        );
        assert_eq!(
            refused(
                json!({"kind": "tool", "name": "web_search", "version": "1.2.0", "reason": 7}),
                true
            ),
            "E008 body.d.reason: must be a string"
        );
        assert_eq!(
            refused(
                json!({"kind": "tool", "name": "web_search", "version": "1.2.0", "reason": "x"}),
                false
            ),
            "E008 body.d.reason: unknown field; expected one of kind, name, version"
        );
        assert!(
            refused(
                json!({"kind": "tool", "name": "web_search", "version": "1.2.0", "force": true}),
                true
            )
            .starts_with("E008 body.d.force: unknown field")
        );
    }
}
