//! MoltSpeak `task`, `tool` and `consent` at the registry, the PII consent
//! proof, `mask_fields`, and capabilities (the spec's table, org-signed
//! attestations checked against registered keys, the registry's own served
//! attested). The wire is in docs/moltspeak.md.
//!
//! - `task` types are the registry's intents (search, resolve, info), run
//!   synchronously with `p.input` as their params; the outcome is kept in
//!   this replica's memory for an hour so `status`/`cancel` can name it.
//! - `tool` lists and invokes the same three.
//! - `consent` (in a verified session only) issues a token signed by the
//!   registry's key, bound to the session's Ed25519 key; `revoke` withdraws
//!   one (in this replica's memory until it would have expired).
//! - A `cls: pii` message must carry such a token in
//!   `pii_meta.consent.proof`, matching `pii_meta`, else `E_CONSENT`.
//! - Values `mask_fields` name are replaced by `"[masked]"` in every answer
//!   and log line about the message.

use std::collections::HashMap;

use agentlang_core::{
    Username,
    protocol::moltspeak::{
        Classification, ErrorCode, Message, MessageBuilder, Op, Party, PublicKey,
        capabilities::{self, Attestation, AttestationClaim, Capability, HelloCapability},
        consent::{self, ConsentClaims, TokenError},
        handshake,
        payloads::{ConsentPayload, Duration, TaskAction, TaskPayload, ToolPayload},
    },
    signing,
};
use serde_json::{Map, Value, json};

use super::{
    CAPABILITIES, Caller, INTENTS, Refusal, as_map,
    ledger::{LedgerError, TaskRecord},
    now_ms,
};
use crate::{
    Registry,
    agent_tasks::{self, ReadTask, ResolveTask, SearchTask, TaskError},
    rate_limits::ClientAddr,
};

/// How long the registry's own attestations last.
pub const ATTESTATION_TTL_MS: u64 = 24 * 3_600_000;
/// Attestations one hello may carry (each costs signature checks).
pub const MAX_ATTESTATIONS: usize = 16;
/// An org's signing keys tried against one attestation.
pub const MAX_ORG_KEYS: usize = 32;

fn ledger_refusal(e: LedgerError) -> Refusal {
    let code = match e {
        LedgerError::TaskExists => ErrorCode::InvalidParam,
        LedgerError::TooManyTasks | LedgerError::TooManyRevocations => ErrorCode::RateLimit,
    };
    let field = matches!(e, LedgerError::TaskExists).then_some("p.task_id");
    Refusal::new(code, e.to_string(), field)
}

/// The key the sender proved: the session's, or the registered key that
/// signed a plaintext message (`authenticate` checked it).
fn sender_key<'a>(caller: &'a Caller<'_>, message: &'a Message) -> Option<&'a PublicKey> {
    caller.verified_key().or_else(|| {
        message
            .signature()
            .and(message.from().and_then(|f| f.key.as_ref()))
    })
}

/// Who a task belongs to.
fn owner(caller: &Caller<'_>, message: &Message) -> String {
    match sender_key(caller, message) {
        Some(key) => key.to_string(),
        None => format!("addr:{}", caller.client.as_str()),
    }
}

// ---------------------------------------------------------------------------
// Capabilities

/// `cap`: every name from the spec's table (`E_CAPABILITY` at `cap[i]`),
/// and held by the registry.
pub(super) fn check_cap(message: &Message) -> Result<(), Refusal> {
    capabilities::parse_cap(message.cap()).map_err(|e| Refusal::from(&e))?;
    message
        .check_capabilities(&CAPABILITIES)
        .map_err(|e| Refusal::from(&e))
}

/// The capabilities a hello proves: its signature first (the attestations
/// bind `from.key`), then each `org-signed` item against the registered,
/// unrevoked keys of the account named `org`. Self-declared names are
/// checked against the table but prove nothing and are not kept.
pub(super) async fn verify_capabilities(
    registry: &Registry,
    hello: &Message,
) -> Result<Vec<String>, Refusal> {
    let verified = handshake::check_hello(hello).map_err(|e| Refusal::from(&e))?;
    let items = capabilities::parse_hello_capabilities(hello.payload().get("capabilities"))
        .map_err(|e| Refusal::from(&e))?;
    let attested = items
        .iter()
        .filter(|i| matches!(i, HelloCapability::Attested(_)))
        .count();
    if attested > MAX_ATTESTATIONS {
        return Err(Refusal::new(
            ErrorCode::InvalidParam,
            format!("at most {MAX_ATTESTATIONS} attested capabilities in one hello"),
            Some("p.capabilities"),
        ));
    }
    let agent = hello.from().map(|f| f.agent.as_str()).unwrap_or_default();
    let now = now_ms();
    let mut proven = Vec::new();
    // One lookup per org, however many capabilities it attests.
    let mut orgs: HashMap<String, Vec<PublicKey>> = HashMap::new();
    for (i, item) in items.iter().enumerate() {
        let HelloCapability::Attested(attestation) = item else {
            continue;
        };
        let field = format!("p.capabilities[{i}]");
        if !orgs.contains_key(&attestation.org) {
            let keys = org_keys(registry, &attestation.org, &field).await?;
            orgs.insert(attestation.org.clone(), keys);
        }
        let keys = orgs
            .get(&attestation.org)
            .map(Vec::as_slice)
            .unwrap_or_default();
        check_attestation(attestation, agent, &verified.key, keys, now, &field)?;
        proven.push(attestation.capability.as_str().to_owned());
    }
    proven.sort_unstable();
    proven.dedup();
    Ok(proven)
}

fn check_attestation(
    attestation: &Attestation,
    agent: &str,
    key: &PublicKey,
    org_keys: &[PublicKey],
    now: u64,
    field: &str,
) -> Result<(), Refusal> {
    let mut last = None;
    for org_key in org_keys {
        match attestation.verify(agent, key, org_key.verifying_key(), now, field) {
            Ok(()) => return Ok(()),
            Err(e) => last = Some(e),
        }
    }
    Err(match last {
        Some(e) => Refusal::from(&e),
        None => Refusal::new(
            ErrorCode::Capability,
            format!(
                "the attesting org {:?} has no registered, unrevoked signing key",
                attestation.org
            ),
            Some(&format!("{field}.attestation.org")),
        ),
    })
}

fn internal(e: impl std::fmt::Display) -> Refusal {
    tracing::error!(error = %e, "cannot look up an attesting org's keys");
    Refusal::new(
        ErrorCode::Internal,
        "the registry failed to look up the org's keys; it has been logged",
        None,
    )
}

/// The registered, unrevoked signing keys of the account `org`.
async fn org_keys(registry: &Registry, org: &str, field: &str) -> Result<Vec<PublicKey>, Refusal> {
    let unknown = || {
        Refusal::new(
            ErrorCode::Capability,
            format!("the attesting org {org:?} is not an account of this registry"),
            Some(&format!("{field}.attestation.org")),
        )
    };
    let username = Username::parse(org).map_err(|_| unknown())?;
    let account = registry
        .db
        .find_account(&username)
        .await
        .map_err(internal)?
        .ok_or_else(unknown)?;
    let records = registry
        .db
        .list_signing_keys(account.id)
        .await
        .map_err(internal)?;
    Ok(records
        .iter()
        .filter(|r| r.revoked_at.is_none())
        .filter_map(|r| signing::PublicKey::from_spki_pem(&r.public_key_pem).ok())
        .filter_map(|k| ed25519_dalek::VerifyingKey::from_bytes(&k.to_raw()).ok())
        .map(PublicKey::from)
        .take(MAX_ORG_KEYS)
        .collect())
}

/// The registry's own capabilities, each attested by its identity key for
/// its agent id and key, org = its org. The expiry is rounded to the hour
/// (at least 23 h ahead) so replicas and caches serve the same bytes.
pub(super) fn registry_capabilities(registry: &Registry) -> Value {
    let identity = &registry.identity;
    let hour = 3_600_000;
    let expires = (now_ms() / hour) * hour + ATTESTATION_TTL_MS;
    Value::Array(
        CAPABILITIES
            .iter()
            .filter_map(|name| Capability::parse(name, "capabilities").ok())
            .map(|capability| {
                identity
                    .attest(&AttestationClaim {
                        capability,
                        org: identity.org().to_owned(),
                        agent: identity.agent_id().to_owned(),
                        key: *identity.public_key(),
                        expires,
                    })
                    .to_value()
            })
            .collect(),
    )
}

// ---------------------------------------------------------------------------
// PII and masking

/// The PII rule's proof: a `cls: pii` message's `pii_meta.consent.proof`
/// is a token this registry issued, unrevoked, unexpired, bound to the
/// sender's proven key and matching `pii_meta`. `mask_fields` must be
/// well-formed whatever the class.
pub(super) fn check_pii(
    registry: &Registry,
    caller: &Caller<'_>,
    message: &Message,
) -> Result<(), Refusal> {
    let Some(meta) = message.pii_meta() else {
        return Ok(());
    };
    consent::check_mask_fields(&meta.mask_fields).map_err(|e| Refusal::from(&e))?;
    if message.cls() != Classification::Pii {
        return Ok(());
    }
    let refuse =
        |message: String| Refusal::new(ErrorCode::Consent, message, Some("pii_meta.consent.proof"));
    let proof = meta
        .consent
        .as_ref()
        .map(|c| c.proof.as_str())
        .ok_or_else(|| refuse("PII without consent proof".into()))?;
    let claims = ConsentClaims::verify(proof, registry.identity.public_key().verifying_key())
        .map_err(|e: TokenError| refuse(e.to_string()))?;
    if registry.moltspeak_ledger.is_revoked(proof) {
        return Err(refuse("the consent token has been revoked".into()));
    }
    consent::check_proof(meta, &claims, sender_key(caller, message), now_ms())
        .map_err(|e| Refusal::from(&e))
}

/// The string values `mask_fields` name in the message's `p`.
fn masked_values(message: &Message) -> Vec<String> {
    let Some(meta) = message.pii_meta().filter(|m| !m.mask_fields.is_empty()) else {
        return Vec::new();
    };
    let original = Value::Object(message.payload().clone());
    let mut masked = original.clone();
    consent::mask(&mut masked, &meta.mask_fields);
    let mut values = Vec::new();
    collect_changed(&original, &masked, &mut values);
    // Longest first, so a value containing another is replaced whole.
    values.sort_by_key(|v| std::cmp::Reverse(v.len()));
    values.dedup();
    values
}

fn collect_changed(original: &Value, masked: &Value, out: &mut Vec<String>) {
    match (original, masked) {
        (a, b) if a == b => {}
        (Value::Object(a), Value::Object(b)) => a
            .iter()
            .filter_map(|(k, v)| b.get(k).map(|w| (v, w)))
            .for_each(|(v, w)| collect_changed(v, w, out)),
        (Value::Array(a), Value::Array(b)) => a
            .iter()
            .zip(b)
            .for_each(|(v, w)| collect_changed(v, w, out)),
        (whole, _) => leaves(whole, out),
    }
}

fn leaves(value: &Value, out: &mut Vec<String>) {
    match value {
        Value::String(s) if !s.is_empty() => out.push(s.clone()),
        Value::Number(n) => out.push(n.to_string()),
        Value::Array(items) => items.iter().for_each(|v| leaves(v, out)),
        Value::Object(map) => map.values().for_each(|v| leaves(v, out)),
        _ => {}
    }
}

/// Values shorter than this are masked only where a whole string (or
/// number) equals them: replacing every `1` inside error text would
/// garble it and hide nothing.
const MIN_QUOTED_MASK: usize = 4;

fn scrub(value: &mut Value, masked: &[String]) {
    match value {
        Value::String(text) => {
            for m in masked {
                if *text == *m {
                    *text = consent::MASKED.into();
                } else if m.len() >= MIN_QUOTED_MASK && text.contains(m.as_str()) {
                    *text = text.replace(m.as_str(), consent::MASKED);
                }
            }
        }
        Value::Number(n) if masked.contains(&n.to_string()) => {
            *value = Value::String(consent::MASKED.into());
        }
        Value::Array(items) => items.iter_mut().for_each(|v| scrub(v, masked)),
        Value::Object(map) => map.values_mut().for_each(|v| scrub(v, masked)),
        _ => {}
    }
}

/// An answer's payload with what the message's `mask_fields` name masked.
pub(super) fn masked(message: &Message, payload: Map<String, Value>) -> Map<String, Value> {
    let values = masked_values(message);
    let mut payload = Value::Object(payload);
    if !values.is_empty() {
        scrub(&mut payload, &values);
    }
    as_map(payload)
}

/// A refusal about the message, with what its `mask_fields` name masked.
pub(super) fn masked_refusal(message: &Message, mut refusal: Refusal) -> Refusal {
    let values = masked_values(message);
    if values.is_empty() {
        return refusal;
    }
    let mut text = Value::String(std::mem::take(&mut refusal.report.message));
    scrub(&mut text, &values);
    refusal.report.message = text.as_str().unwrap_or_default().to_owned();
    if let Some(context) = refusal.context.as_mut() {
        scrub(context, &values);
    }
    refusal
}

/// The answer `op` to `message`: its payload masked (`mask_fields`),
/// signed. `redact`: PII in registry data is redacted (`redact_pii`); a
/// `consent_response` is not, as it must name the grantor exactly as the
/// request did (whose `p.human` is exempt from the PII rule likewise). An
/// answer classified `pii` carries the request's `pii_meta`: the consent it
/// is sent under, so the receiver's PII rule accepts it.
fn answer(
    registry: &Registry,
    message: &Message,
    op: Op,
    cls: Classification,
    payload: Value,
    redact: bool,
) -> Result<Message, Refusal> {
    let mut payload = Value::Object(masked(message, as_map(payload)));
    if redact {
        super::redact_pii(&mut payload);
    }
    let mut builder =
        MessageBuilder::new(uuid::Uuid::now_v7().to_string(), op, cls, as_map(payload))
            .ts(now_ms())
            .from(&registry.identity.party())
            .re(message.id());
    if let Some(to) = message.from() {
        builder = builder.to(&Party::new(to.agent.clone(), to.org.as_deref()));
    }
    if cls == Classification::Pii
        && let Some(meta) = message.pii_meta()
    {
        builder = builder.pii_meta(meta);
    }
    builder
        .build()
        .and_then(|m| registry.identity.sign(m))
        .map_err(|e| Refusal::from(&e))
}

// ---------------------------------------------------------------------------
// Operations

/// Runs intent `name` with `input` as its params (`at`: the params' path).
async fn run_intent(
    registry: &Registry,
    client: &ClientAddr,
    name: &str,
    input: &Map<String, Value>,
    at: &str,
) -> Result<Value, TaskError> {
    match name {
        "search" => agent_tasks::search(registry, &SearchTask::parse(input, at)?, at).await,
        "info" => agent_tasks::read(registry, &ReadTask::parse(input, at)?, at).await,
        _ => agent_tasks::resolve(registry, client, &ResolveTask::parse(input, at)?, at).await,
    }
}

/// `task` → `respond` (create runs the task now; status and cancel name a
/// task this sender created within the hour).
pub(super) async fn task(
    registry: &Registry,
    caller: &Caller<'_>,
    message: &Message,
) -> Result<Message, Refusal> {
    let task = TaskPayload::parse(message.payload()).map_err(|e| Refusal::from(&e))?;
    let owner = owner(caller, message);
    let now = now_ms();
    // Plaintext only: a session's decrypted body never reaches a log.
    if caller.session.is_none() {
        let logged = masked(
            message,
            as_map(json!({"task_id": task.task_id, "type": task.task_type})),
        );
        tracing::info!(
            task_id = %logged["task_id"],
            task_type = %logged["type"],
            action = ?task.action,
            "moltspeak task"
        );
    }
    let data = match task.action {
        TaskAction::Create => {
            let task_type = task.task_type.as_deref().unwrap_or_default();
            if !INTENTS.contains(&task_type) {
                return Err(Refusal::new(
                    ErrorCode::InvalidParam,
                    format!(
                        "the registry runs task types {}, not {task_type:?}",
                        INTENTS.join(", ")
                    ),
                    Some("p.type"),
                ));
            }
            if task.deadline.is_some_and(|d| d <= now) {
                return Err(Refusal::new(
                    ErrorCode::Timeout,
                    "the deadline has passed",
                    Some("p.deadline"),
                ));
            }
            let input = task.input.as_ref().ok_or_else(|| {
                Refusal::new(
                    ErrorCode::MissingField,
                    "required field is missing",
                    Some("p.input"),
                )
            })?;
            let outcome = run_intent(registry, caller.client, task_type, input, "p.input").await;
            let status = if outcome.is_ok() {
                "completed"
            } else {
                "failed"
            };
            registry
                .moltspeak_ledger
                .record_task(
                    &owner,
                    &task.task_id,
                    TaskRecord {
                        task_type: task_type.to_owned(),
                        status,
                        finished: now,
                    },
                )
                .map_err(ledger_refusal)?;
            let result = outcome.map_err(|e| Refusal::from(&e))?;
            json!({"task_id": task.task_id, "type": task_type, "status": status, "result": result})
        }
        TaskAction::Status | TaskAction::Cancel => {
            let record = registry
                .moltspeak_ledger
                .task(&owner, &task.task_id, now)
                .ok_or_else(|| {
                    Refusal::new(
                        ErrorCode::InvalidParam,
                        "no task of yours has this task_id (tasks are remembered for an hour)",
                        Some("p.task_id"),
                    )
                })?;
            let mut data = json!({"task_id": task.task_id, "type": record.task_type,
                                  "status": record.status, "finished": record.finished});
            if task.action == TaskAction::Cancel {
                // Tasks run to the end within their request: nothing is left to cancel.
                data["cancelled"] = json!(false);
                data["reason"] = json!("the task already finished");
            }
            data
        }
    };
    // The answer echoes the request's task_id: it carries the request's class.
    answer(
        registry,
        message,
        Op::Respond,
        message.cls(),
        json!({"status": "success", "data": data}),
        true,
    )
}

/// The tools: the registry's intents with their input shapes.
fn tool_list() -> Value {
    json!([
        {"name": "search", "description": "Search the catalog",
         "input": {"q": "string (required)", "kind": "string (optional: skill, tool, agent, ...)", "page": "integer (optional, from 1)"}},
        {"name": "resolve", "description": "Resolve tool requirements to exact versions",
         "input": {"tools": "object name → version requirement (required)", "models": "object (optional)", "lock": "object (optional)"}},
        {"name": "info", "description": "One package's metadata",
         "input": {"kind": "string (required)", "name": "string (required)", "version": "string (optional)"}},
    ])
}

/// `tool` → `respond`: the tool list, or an invoked tool's result.
pub(super) async fn tool(
    registry: &Registry,
    caller: &Caller<'_>,
    message: &Message,
) -> Result<Message, Refusal> {
    let data = match ToolPayload::parse(message.payload()).map_err(|e| Refusal::from(&e))? {
        ToolPayload::List => json!({"tools": tool_list()}),
        ToolPayload::Invoke { tool, input } => {
            if !INTENTS.contains(&tool.as_str()) {
                return Err(Refusal::new(
                    ErrorCode::InvalidParam,
                    format!(
                        "no tool {tool:?}; the registry's tools: {}",
                        INTENTS.join(", ")
                    ),
                    Some("p.tool"),
                ));
            }
            run_intent(registry, caller.client, &tool, &input, "p.input")
                .await
                .map_err(|e| Refusal::from(&e))?
        }
    };
    // Registry data only: public.
    answer(
        registry,
        message,
        Op::Respond,
        Classification::Public,
        json!({"status": "success", "data": data}),
        true,
    )
}

/// `consent` → `consent_response` with a token (request) or the revocation
/// (revoke). Only in a verified session: the token binds its key.
pub(super) fn consent(
    registry: &Registry,
    caller: &Caller<'_>,
    message: &Message,
) -> Result<Message, Refusal> {
    let payload = ConsentPayload::parse(message.payload()).map_err(|e| Refusal::from(&e))?;
    let Some(session) = caller.session else {
        return Err(Refusal::new(
            ErrorCode::AuthFailed,
            "consent is exchanged only inside a verified session (hello, verify, then an encrypted envelope)",
            Some("op"),
        ));
    };
    let now = now_ms();
    let cls = message.cls().max(Classification::Internal);
    match payload {
        ConsentPayload::Request {
            data_types,
            purpose,
            duration,
            human,
        } => {
            let expires = match duration {
                Duration::Session => session.expires,
                Duration::Millis(ms) => now.saturating_add(ms),
            };
            let claims = ConsentClaims {
                typ: consent::TOKEN_TYPE.to_owned(),
                data_types,
                purpose,
                granted_by: human,
                key: session.client_key.to_string(),
                expires,
                issued: now,
            };
            let proof = registry.identity.issue_consent(&claims);
            answer(
                registry,
                message,
                Op::ConsentResponse,
                cls,
                json!({"status": "granted", "proof": proof, "granted_by": claims.granted_by,
                       "purpose": claims.purpose, "data_types": claims.data_types,
                       "expires": claims.expires}),
                false,
            )
        }
        ConsentPayload::Revoke { proof } => {
            let claims =
                ConsentClaims::verify(&proof, registry.identity.public_key().verifying_key())
                    .map_err(|e| {
                        Refusal::new(ErrorCode::Consent, e.to_string(), Some("p.proof"))
                    })?;
            if claims.key != session.client_key.to_string() {
                return Err(Refusal::new(
                    ErrorCode::Consent,
                    "the consent token was granted to another agent's key",
                    Some("p.proof"),
                ));
            }
            let part = proof.rsplit('.').next().unwrap_or_default();
            registry
                .moltspeak_ledger
                .revoke(part, claims.expires, now)
                .map_err(ledger_refusal)?;
            answer(
                registry,
                message,
                Op::ConsentResponse,
                cls,
                json!({"status": "revoked", "granted_by": claims.granted_by,
                       "purpose": claims.purpose, "data_types": claims.data_types,
                       "expires": claims.expires}),
                false,
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scrub_masks_quotes_of_long_values_and_whole_short_ones() {
        let masked = vec!["patient-4711".to_owned(), "7".to_owned()];
        let mut answer = json!({"message": "no task \"patient-4711\" (page 7 of 17)",
                                "page": 7, "id": "7", "pages": 17});
        scrub(&mut answer, &masked);
        assert_eq!(
            answer,
            json!({"message": "no task \"[masked]\" (page 7 of 17)",
                   "page": "[masked]", "id": "[masked]", "pages": 17})
        );
    }
}
