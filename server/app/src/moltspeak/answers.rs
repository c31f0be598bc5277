//! What every MoltSpeak answer is made of, shared by the dispatch
//! (`moltspeak`), its operations and its streams: the registry's domain and
//! capabilities, who is calling ([`Caller`]), refusals ([`Refusal`]) and the
//! signed messages and errors built from them. A leaf: it imports none of
//! its siblings' files but `sessions`, so each of them can import it.

use std::collections::BTreeSet;

use agentlang_core::protocol::{
    moltspeak::{
        self, Classification, ErrorCode, ErrorReport, Message, MessageBuilder, MoltError, Op,
        Party, PublicKey,
    },
    pii,
};
use serde_json::{Map, Value, json};

use super::sessions::Session;
use crate::{Registry, ServiceError, agent_tasks::TaskError, rate_limits::ClientAddr};

/// The `p.domain` the registry answers.
pub const DOMAIN: &str = "registry";
/// The `p.intent`s of that domain.
pub const INTENTS: [&str; 3] = ["search", "resolve", "info"];
/// The capabilities the registry holds, from the spec's table (served
/// attested by its key: see `operations::registry_capabilities`).
pub const CAPABILITIES: [&str; 12] = [
    "query",
    "respond",
    "error",
    "task.create",
    "task.status",
    "task.cancel",
    "stream.start",
    "stream.chunk",
    "stream.end",
    "tool.invoke",
    "tool.list",
    "human.consent",
];
/// `re` of an error answering a message whose id could not be read.
pub const UNKNOWN_ID: &str = "unknown";

pub fn now_ms() -> u64 {
    let ms = time::OffsetDateTime::now_utc().unix_timestamp_nanos() / 1_000_000;
    u64::try_from(ms).unwrap_or(0)
}

pub fn fresh_id() -> String {
    uuid::Uuid::now_v7().to_string()
}

/// A refusal to answer with an `error` op.
pub struct Refusal {
    /// Boxed: refusals travel in every `Result` of the dispatch.
    pub(super) report: Box<ErrorReport>,
    /// Extra payload members (`context`).
    pub(super) context: Option<Value>,
}

impl From<&MoltError> for Refusal {
    fn from(e: &MoltError) -> Self {
        Self {
            report: Box::new(ErrorReport::from(e)),
            context: None,
        }
    }
}

impl Refusal {
    pub(super) fn new(code: ErrorCode, message: impl Into<String>, field: Option<&str>) -> Self {
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
            "register the key with POST /api/v1/keys, send a plaintext query unsigned, or (in a session) run hello and verify again".into(),
        ),
        ErrorCode::Signature => fix(
            "resign",
            "sign the RFC 8785 (JCS) form of the message without sig, with the key in from.key"
                .into(),
        ),
        ErrorCode::Capability => json!({"action": "drop_capability", "held": CAPABILITIES}),
        ErrorCode::Classification => fix(
            "encrypt",
            "send conf and sec only inside an encrypted session envelope; pii_meta only with cls pii".into(),
        ),
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
pub fn signed(
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

/// The signed `error` answering `re`, classified `cls`: the class of the
/// refused message (an error may quote it), at least `int`.
pub fn error_message(
    registry: &Registry,
    refusal: Refusal,
    re: &str,
    to: Option<&Party>,
    cls: Classification,
) -> Value {
    let mut report = *refusal.report;
    if report.suggestion.is_none() {
        report.suggestion = default_suggestion(&report).as_object().cloned();
    }
    let mut payload = report.to_payload();
    if let Some(context) = refusal.context {
        payload.insert("context".into(), context);
    }
    let re = if re.is_empty() { UNKNOWN_ID } else { re };
    // `signed` redacts every piece of PII from the payload, so an error
    // carries none: refusing a `pii` message is `conf`, the highest class
    // it can hold without personal data (and needs no `pii_meta`).
    let cls = match cls.max(Classification::Internal) {
        Classification::Pii => Classification::Confidential,
        other => other,
    };
    match signed(registry, Op::Error, cls, payload, re, to) {
        Ok(message) => message.to_value(),
        Err(e) => {
            // Only an unsignable payload (an unsafe integer) gets here; the
            // registry builds none, so this is a bug worth a log line.
            tracing::error!(error = %e, "cannot sign a MoltSpeak error");
            json!({"v": moltspeak::VERSION, "id": fresh_id(), "op": "error", "re": re,
                   "cls": cls.as_str(), "p": {"code": "E_INTERNAL", "category": "execution",
                   "message": "the registry failed to sign its answer", "recoverable": true}})
        }
    }
}

/// The signed `E_RATE_LIMIT` answer to a message refused by the limit: built
/// before any of the message is parsed (only its id is salvaged).
pub fn rate_limited(registry: &Registry, raw: &[u8], retry_after_secs: u64) -> Value {
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
    error_message(registry, refusal, &re, None, Classification::Internal)
}

/// Runs `work` on the blocking pool, where the async steps inside it
/// (database reads) run through the runtime's handle. Parsing, PII scans and
/// signatures are CPU work: a slow message must not stall the other
/// connections of its worker.
pub async fn off_workers<T: Send + 'static>(
    work: impl FnOnce(&tokio::runtime::Handle) -> T + Send + 'static,
) -> Result<T, ServiceError> {
    let runtime = tokio::runtime::Handle::current();
    tokio::task::spawn_blocking(move || work(&runtime))
        .await
        .map_err(ServiceError::internal)
}

/// Who sent the message being answered, as far as the registry knows.
pub struct Caller<'a> {
    pub(super) client: &'a ClientAddr,
    /// The verified session the message came in, if it came encrypted.
    pub(super) session: Option<&'a Session>,
}

impl Caller<'_> {
    /// The Ed25519 key the sender proved it holds (by the handshake).
    #[allow(
        dead_code,
        reason = "for the operations' arms (consent binds this key)"
    )]
    pub(super) fn verified_key(&self) -> Option<&PublicKey> {
        self.session.map(|s| &s.client_key)
    }
}

pub fn as_map(value: Value) -> Map<String, Value> {
    match value {
        Value::Object(map) => map,
        _ => Map::new(),
    }
}
