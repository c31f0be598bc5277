//! MoltSpeak 0.1: what the registry answers an agent that talks to it in
//! MoltSpeak, and who the registry is (its identity document).
//!
//! What the registry answers, and why:
//! - `hello` → `hello_ack` with the registry's identity (`from.key`), the
//!   protocol versions, capabilities and the intents it serves.
//! - `query` with `p.domain` = `registry` and `p.intent` `search`
//!   (`p.params: {q, kind?, page?}`), `resolve` (`{tools, models?, lock?}`)
//!   or `info` (`{kind, name, version?}`) → `respond` with `re` = the
//!   query's id and `p: {status: "success", data}`, the same data the CLowl
//!   endpoint returns.
//! - Every answer (`hello_ack`, `respond`, `error`) is signed by the
//!   registry's Ed25519 key over the RFC 8785 (JCS) form of the message
//!   without `sig`, and names that key in `from.key`.
//! - A signed message is verified: `from.key` must be a signing key
//!   registered with this registry and not revoked (looked up by its key
//!   id, the SHA-256 of the raw key), else `E_AUTH_FAILED`; a signature that
//!   does not verify is `E_SIGNATURE`. Unsigned messages are accepted: every
//!   intent served reads public data, so a signature adds accountability but
//!   grants nothing. A `from.key` without `sig` proves nothing and is ignored.
//! - Policy from the core: PII in `p` without consent is `E_CONSENT`, an
//!   expired message `E_TIMEOUT`, a `cap` the registry does not hold
//!   `E_CAPABILITY`. Other ops (task, tool, stream, ...) are
//!   `E_INVALID_PARAM` on `op`; an encrypted envelope too (the registry holds
//!   no X25519 key). A package or model that does not exist is
//!   `E_INVALID_PARAM`; unsatisfiable requirements `E_TASK_FAILED`.
//! - Every `error` carries `code`, `category`, `message`, `recoverable` and a
//!   `suggestion`; `re` is the refused message's id, or `"unknown"` when
//!   none could be read. Rate-limited messages get `E_RATE_LIMIT` with
//!   `suggestion.delay_ms`.
//! - Everything CPU-bound (parsing, PII scans, signature checks, signing)
//!   runs on the blocking pool, never on an HTTP worker.

use std::{collections::BTreeSet, num::NonZeroU32, sync::Arc};

use agentlang_core::{
    protocol::{
        moltspeak::{
            self, BatchError, Classification, ErrorCode, ErrorReport, Message, MessageBuilder,
            MoltError, Op, Party, Transmission,
        },
        pii,
    },
    signing::KeyId,
};
use serde_json::{Map, Value, json};

use crate::{
    FieldError, Registry, ServiceError,
    agent_tasks::{self, ReadTask, ResolveTask, SearchTask, TaskError},
    rate_limits::{Bucket, ClientAddr},
};

/// The `p.domain` the registry answers.
pub const DOMAIN: &str = "registry";
/// The `p.intent`s of that domain.
pub const INTENTS: [&str; 3] = ["search", "resolve", "info"];
/// The capabilities the registry holds (the spec's `core` category).
pub const CAPABILITIES: [&str; 3] = ["query", "respond", "error"];
/// `re` of an error answering a message whose id could not be read.
pub const UNKNOWN_ID: &str = "unknown";

/// Answers one message (or envelope) from `client`: `E_RATE_LIMIT` when
/// the client is over its message budget, else the answer, worked out off
/// the async workers.
pub async fn answer_message(
    registry: Arc<Registry>,
    client: &ClientAddr,
    raw: bytes::Bytes,
) -> Result<Value, ServiceError> {
    if let Err(ServiceError::RateLimited { retry_after_secs }) = registry
        .rate_limits
        .check(Bucket::AgentMessage, client.as_str())
    {
        return Ok(rate_limited(&registry, &raw, retry_after_secs));
    }
    let client = client.clone();
    off_workers(move |runtime| runtime.block_on(answer(&registry, &client, &raw))).await
}

/// Answers a batch: the answers in order, or a single `error` when the body
/// is not a JSON array of messages. More than the batch limit is a
/// validation error; a batch is counted whole against the sender's budget,
/// each message as one, and refused whole past what is left.
pub async fn answer_batch(
    registry: Arc<Registry>,
    client: &ClientAddr,
    raw: bytes::Bytes,
) -> Result<Value, ServiceError> {
    let client = client.clone();
    off_workers(move |runtime| {
        let items = match moltspeak::batch_items(&raw, moltspeak::MAX_BATCH_ITEMS) {
            Ok(items) => items,
            Err(BatchError::TooMany { limit }) => {
                return Err(ServiceError::Validation(vec![FieldError::new(
                    "batch",
                    format!("holds more than {limit} messages; at most {limit} are allowed"),
                )]));
            }
            Err(BatchError::Invalid(error)) => {
                return Ok(error_message(
                    &registry,
                    Refusal::from(&error),
                    UNKNOWN_ID,
                    None,
                ));
            }
        };
        if let Some(n) = u32::try_from(items.len()).ok().and_then(NonZeroU32::new) {
            registry
                .rate_limits
                .check_n(Bucket::AgentMessage, client.as_str(), n)?;
        }
        Ok(Value::Array(
            items
                .iter()
                .map(|item| runtime.block_on(answer(&registry, &client, item.get().as_bytes())))
                .collect(),
        ))
    })
    .await?
}

/// Who the registry is, as `/.well-known/moltspeak.json` says it.
#[derive(Debug, Clone)]
pub struct Identity {
    pub moltspeak: String,
    pub agent: String,
    pub org: String,
    /// `ed25519:<base64>`: the key its answers are signed with.
    pub key: String,
    pub key_id: String,
    pub capabilities: Vec<String>,
    /// The intents of each domain served.
    pub domains: Value,
    /// Where messages and batches go.
    pub endpoints: Value,
}

/// The registry's MoltSpeak identity: the same for every replica.
pub fn identity(registry: &Registry) -> Identity {
    let identity = &registry.identity;
    let base = registry.public_url();
    Identity {
        moltspeak: moltspeak::VERSION.to_owned(),
        agent: identity.agent_id().to_owned(),
        org: identity.org().to_owned(),
        key: identity.public_key().to_string(),
        key_id: identity.key_id().to_string(),
        capabilities: CAPABILITIES.map(str::to_owned).to_vec(),
        domains: json!({DOMAIN: INTENTS}),
        endpoints: json!({
            "message": format!("{base}/moltspeak/v0.1/message"),
            "batch": format!("{base}/moltspeak/v0.1/batch"),
        }),
    }
}

fn now_ms() -> u64 {
    let ms = time::OffsetDateTime::now_utc().unix_timestamp_nanos() / 1_000_000;
    u64::try_from(ms).unwrap_or(0)
}

fn fresh_id() -> String {
    uuid::Uuid::now_v7().to_string()
}

/// A refusal to answer with an `error` op.
struct Refusal {
    report: ErrorReport,
    /// Extra payload members (`context`).
    context: Option<Value>,
}

impl From<&MoltError> for Refusal {
    fn from(e: &MoltError) -> Self {
        Self {
            report: ErrorReport::from(e),
            context: None,
        }
    }
}

impl Refusal {
    fn new(code: ErrorCode, message: impl Into<String>, field: Option<&str>) -> Self {
        Self::from(&MoltError::new(code, message, field))
    }
}

impl From<&TaskError> for Refusal {
    fn from(e: &TaskError) -> Self {
        let (code, field) = match e {
            TaskError::Missing { field } => (ErrorCode::MissingField, Some(field.as_str())),
            TaskError::Invalid { field, .. } => (ErrorCode::InvalidParam, Some(field.as_str())),
            TaskError::NotFound(_) => (ErrorCode::InvalidParam, None),
            TaskError::Unresolvable(_) => (ErrorCode::TaskFailed, None),
            TaskError::Internal(_) => (ErrorCode::Internal, None),
            TaskError::TimedOut(_) => (ErrorCode::Timeout, None),
        };
        let message = match e {
            TaskError::Missing { .. } => "required field is missing".to_owned(),
            TaskError::Invalid { message, .. } => message.clone(),
            other => other.public_message(),
        };
        Self::new(code, message, field)
    }
}

/// The suggestion of an error whose code the core gives none for: every
/// error the registry sends says how to recover (or that one cannot).
fn default_suggestion(report: &ErrorReport) -> Value {
    let fix = |action: &str, fix: String| json!({"action": action, "fix": fix});
    match report.code {
        ErrorCode::Parse => fix(
            "retry",
            "send one JSON object (a batch: a JSON array)".into(),
        ),
        ErrorCode::Schema => fix("retry", "match the MoltSpeak 0.1 message schema".into()),
        ErrorCode::InvalidParam | ErrorCode::MissingField => fix(
            "retry",
            match &report.field {
                Some(field) => format!("correct {field}"),
                None => "correct the parameters".to_owned(),
            },
        ),
        ErrorCode::AuthFailed => fix(
            "register_key",
            "register the key with POST /api/v1/keys, or send the message unsigned".into(),
        ),
        ErrorCode::Signature => fix(
            "resign",
            "sign the RFC 8785 (JCS) form of the message without sig, with the key in from.key"
                .into(),
        ),
        ErrorCode::Capability => json!({"action": "drop_capability", "held": CAPABILITIES}),
        ErrorCode::Classification => fix("reclassify", "use cls pii only with pii_meta".into()),
        ErrorCode::Timeout => fix("resend", "send the message again before its exp".into()),
        ErrorCode::TaskFailed => fix("revise", "change the requirements".into()),
        ErrorCode::Internal => json!({"action": "retry_after", "delay_ms": 1000}),
        ErrorCode::RateLimit => json!({"action": "retry_after", "delay_ms": 1000}),
        ErrorCode::Version => {
            json!({"action": "downgrade", "supported_versions": [moltspeak::VERSION]})
        }
        ErrorCode::Consent => json!({"action": "request_consent", "consent_type": "pii"}),
    }
}

/// Replaces every string holding PII with `[redacted: <types>]`.
///
/// Registry data is public, yet MoltSpeak forbids sending PII without a
/// consent proof, which the registry cannot have for what publishers wrote
/// (an email in a spec's `developer`), nor for what a sender's own values
/// echoed in an error message hold. So outgoing payloads are masked, the
/// spec's "masked by default", instead of being blocked.
pub fn redact_pii(value: &mut Value) {
    match value {
        Value::String(text) => {
            let types: BTreeSet<&str> = pii::scan_str(text)
                .into_iter()
                .map(pii::PiiType::as_str)
                .collect();
            if !types.is_empty() {
                *text = format!(
                    "[redacted: {}]",
                    types.into_iter().collect::<Vec<_>>().join(", ")
                );
            }
        }
        Value::Array(items) => items.iter_mut().for_each(redact_pii),
        Value::Object(map) => map.values_mut().for_each(redact_pii),
        Value::Null | Value::Bool(_) | Value::Number(_) => {}
    }
}

/// Builds and signs a message from the registry to `to`, its payload
/// masked by [`redact_pii`].
fn signed(
    registry: &Registry,
    op: Op,
    cls: Classification,
    payload: Map<String, Value>,
    re: &str,
    to: Option<&Party>,
) -> Result<Message, MoltError> {
    let mut payload = Value::Object(payload);
    redact_pii(&mut payload);
    let mut builder = MessageBuilder::new(fresh_id(), op, cls, as_map(payload))
        .ts(now_ms())
        .from(&registry.identity.party())
        .re(re);
    if let Some(to) = to {
        builder = builder.to(&Party::new(to.agent.clone(), to.org.as_deref()));
    }
    registry.identity.sign(builder.build()?)
}

fn error_message(registry: &Registry, refusal: Refusal, re: &str, to: Option<&Party>) -> Value {
    let mut report = refusal.report;
    if report.suggestion.is_none() {
        report.suggestion = default_suggestion(&report).as_object().cloned();
    }
    let mut payload = report.to_payload();
    if let Some(context) = refusal.context {
        payload.insert("context".into(), context);
    }
    let re = if re.is_empty() { UNKNOWN_ID } else { re };
    match signed(
        registry,
        Op::Error,
        Classification::Internal,
        payload,
        re,
        to,
    ) {
        Ok(message) => message.to_value(),
        Err(e) => {
            // Only an unsignable payload (an unsafe integer) gets here; the
            // registry builds none, so this is a bug worth a log line.
            tracing::error!(error = %e, "cannot sign a MoltSpeak error");
            json!({"v": moltspeak::VERSION, "id": fresh_id(), "op": "error", "re": re,
                   "cls": "int", "p": {"code": "E_INTERNAL", "category": "execution",
                   "message": "the registry failed to sign its answer", "recoverable": true}})
        }
    }
}

/// The signed `E_RATE_LIMIT` answer to a message refused by the limit: built
/// before any of the message is parsed (only its id is salvaged).
fn rate_limited(registry: &Registry, raw: &[u8], retry_after_secs: u64) -> Value {
    let re = moltspeak::salvage_id(raw).unwrap_or_else(|| UNKNOWN_ID.to_owned());
    let delay_ms = retry_after_secs.saturating_mul(1000);
    let mut refusal = Refusal::new(
        ErrorCode::RateLimit,
        format!("rate limit exceeded; retry in {retry_after_secs} s"),
        None,
    );
    refusal.report.suggestion = json!({"action": "retry_after", "delay_ms": delay_ms})
        .as_object()
        .cloned();
    refusal.context = Some(json!({
        "limit": registry.settings.rate_limits.agent_messages_per_minute.get(),
        "window": "1m",
    }));
    error_message(registry, refusal, &re, None)
}

/// Runs `work` on the blocking pool, where the async steps inside it
/// (database reads) run through the runtime's handle. Parsing, PII scans and
/// signatures are CPU work: a slow message must not stall the other
/// connections of its worker.
async fn off_workers<T: Send + 'static>(
    work: impl FnOnce(&tokio::runtime::Handle) -> T + Send + 'static,
) -> Result<T, ServiceError> {
    let runtime = tokio::runtime::Handle::current();
    tokio::task::spawn_blocking(move || work(&runtime))
        .await
        .map_err(ServiceError::internal)
}

/// Answers the bytes of one message (or envelope), already counted against
/// its sender's limit.
async fn answer(registry: &Registry, client: &ClientAddr, raw: &[u8]) -> Value {
    let salvaged = || moltspeak::salvage_id(raw).unwrap_or_else(|| UNKNOWN_ID.to_owned());
    let transmission = match Transmission::from_slice(raw) {
        Ok(t) => t,
        Err(e) => return error_message(registry, Refusal::from(&e), &salvaged(), None),
    };
    let Some(message) = transmission.message() else {
        let refusal = Refusal::new(
            ErrorCode::InvalidParam,
            "the registry holds no X25519 key and cannot read encrypted envelopes; send a plain one",
            Some("envelope.encrypted"),
        );
        return error_message(registry, refusal, UNKNOWN_ID, None);
    };
    let sender = message.from();
    match handle(registry, client, message).await {
        Ok(reply) => reply.to_value(),
        Err(refusal) => error_message(registry, refusal, message.id(), sender),
    }
}

async fn handle(
    registry: &Registry,
    client: &ClientAddr,
    message: &Message,
) -> Result<Message, Refusal> {
    authenticate(registry, message).await?;
    message.check(now_ms()).map_err(|e| Refusal::from(&e))?;
    message
        .check_capabilities(&CAPABILITIES)
        .map_err(|e| Refusal::from(&e))?;
    let sign_failed = |e: MoltError| Refusal::from(&e);
    match message.op() {
        Op::Hello => {
            let p = message.payload();
            if let Some(versions) = p.get("protocol_versions") {
                let speaks_ours = versions
                    .as_array()
                    .is_some_and(|v| v.iter().any(|v| v.as_str() == Some(moltspeak::VERSION)));
                if !speaks_ours {
                    return Err(Refusal::new(
                        ErrorCode::Version,
                        format!(
                            "no common protocol version; this registry speaks MoltSpeak {}",
                            moltspeak::VERSION
                        ),
                        Some("p.protocol_versions"),
                    ));
                }
            }
            let payload = json!({
                "protocol_versions": [moltspeak::VERSION],
                "capabilities": CAPABILITIES,
                "domains": {DOMAIN: INTENTS},
                "extensions": [],
                "max_message_size": moltspeak::MAX_MESSAGE_BYTES,
                "supported_cls": ["pub", "int"],
            });
            signed(
                registry,
                Op::HelloAck,
                Classification::Public,
                as_map(payload),
                message.id(),
                message.from(),
            )
            .map_err(sign_failed)
        }
        Op::Query => {
            let data = query(registry, client, message.payload())
                .await
                .map_err(|e| Refusal::from(&e))?;
            let payload = json!({"status": "success", "data": data});
            signed(
                registry,
                Op::Respond,
                Classification::Public,
                as_map(payload),
                message.id(),
                message.from(),
            )
            .map_err(sign_failed)
        }
        other => Err(Refusal::new(
            ErrorCode::InvalidParam,
            format!("the registry answers hello and query, not {other}"),
            Some("op"),
        )),
    }
}

fn as_map(value: Value) -> Map<String, Value> {
    match value {
        Value::Object(map) => map,
        _ => Map::new(),
    }
}

/// Checks a signed message against the keys registered here.
async fn authenticate(registry: &Registry, message: &Message) -> Result<(), Refusal> {
    if message.signature().is_none() {
        return Ok(());
    }
    let key = message.from().and_then(|f| f.key.as_ref()).ok_or_else(|| {
        Refusal::new(
            ErrorCode::AuthFailed,
            "a signed message must name its signing key in from.key",
            Some("from.key"),
        )
    })?;
    let key_id = KeyId::of_raw_public_key(key.verifying_key().as_bytes());
    let record = registry.db.find_signing_key(&key_id).await.map_err(|e| {
        tracing::error!(error = %e, "cannot look up a signing key");
        Refusal::new(
            ErrorCode::Internal,
            "the registry failed to look up the key; it has been logged",
            None,
        )
    })?;
    match record {
        None => Err(Refusal::new(
            ErrorCode::AuthFailed,
            format!("from.key (key id {key_id}) is not registered with this registry"),
            Some("from.key"),
        )),
        Some(record) if record.revoked_at.is_some() => Err(Refusal::new(
            ErrorCode::AuthFailed,
            format!("from.key (key id {key_id}) has been revoked"),
            Some("from.key"),
        )),
        Some(_) => message
            .verify(key.verifying_key())
            .map_err(|e| Refusal::from(&e)),
    }
}

async fn query(
    registry: &Registry,
    client: &ClientAddr,
    p: &Map<String, Value>,
) -> Result<Value, TaskError> {
    let text = |key: &str| match p.get(key) {
        None => Err(TaskError::Missing {
            field: format!("p.{key}"),
        }),
        Some(Value::String(s)) => Ok(s.as_str()),
        Some(_) => Err(TaskError::Invalid {
            field: format!("p.{key}"),
            message: "must be a string".into(),
        }),
    };
    let domain = text("domain")?;
    if domain != DOMAIN {
        return Err(TaskError::Invalid {
            field: "p.domain".into(),
            message: format!("the registry answers the domain {DOMAIN:?}, not {domain:?}"),
        });
    }
    let intent = text("intent")?;
    let empty = Map::new();
    let params = match p.get("params") {
        None if intent == "search" || intent == "info" || intent == "resolve" => {
            return Err(TaskError::Missing {
                field: "p.params".into(),
            });
        }
        None => &empty,
        Some(Value::Object(params)) => params,
        Some(_) => {
            return Err(TaskError::Invalid {
                field: "p.params".into(),
                message: "must be an object".into(),
            });
        }
    };
    match intent {
        "search" => {
            agent_tasks::search(
                registry,
                &SearchTask::parse(params, "p.params")?,
                "p.params",
            )
            .await
        }
        "info" => {
            agent_tasks::read(registry, &ReadTask::parse(params, "p.params")?, "p.params").await
        }
        "resolve" => {
            agent_tasks::resolve(
                registry,
                client,
                &ResolveTask::parse(params, "p.params")?,
                "p.params",
            )
            .await
        }
        other => Err(TaskError::Invalid {
            field: "p.intent".into(),
            message: format!(
                "unknown intent {other:?}; the registry domain serves {}",
                INTENTS.join(", ")
            ),
        }),
    }
}
