//! MoltSpeak 0.1: what the registry answers an agent that talks to it in
//! MoltSpeak, and who the registry is (its identity document).
//!
//! What the registry answers, and why (docs/moltspeak.md has the wire):
//! - `hello` (signed by its `from.key`, with `from.enc_key`) → `hello_ack`
//!   with the registry's Ed25519 and X25519 keys and a fresh 256-bit
//!   challenge; `verify` (the challenge signed by the same key, a timestamp
//!   within 30 s, the client's own nonce) → `verify_response` echoing the
//!   nonce and opening a session ([`sessions`]).
//! - Encrypted envelopes name their session; the registry opens them with
//!   the session's crypto_box, checks the inner message is signed by the
//!   session's key and fresh, and answers sealed the same way. Decrypted
//!   bodies are never logged.
//! - `conf` and `sec` travel only inside a session (else `E_CLASSIFICATION`).
//!   An answer's `cls` is the highest class of what it carries: registry
//!   data is `pub`; errors and stream receipts carry the request's class
//!   (at least `int`, the spec's class for errors).
//! - `query` with `p.domain` = `registry` and `p.intent` `search`
//!   (`p.params: {q, kind?, page?}`), `resolve` (`{tools, models?, lock?}`)
//!   or `info` (`{kind, name, version?}`) → `respond` with `re` = the
//!   query's id and `p: {status: "success", data}`, the same data the CLowl
//!   endpoint returns. `stream` inside a session → a receipt ([`streams`]).
//! - Every answer (`hello_ack`, `respond`, `error`) is signed by the
//!   registry's Ed25519 key over the RFC 8785 (JCS) form of the message
//!   without `sig`, and names that key in `from.key`.
//! - A signed plaintext message other than hello/verify is verified: its
//!   `from.key` must be a signing key registered with this registry and not
//!   revoked, else `E_AUTH_FAILED`; a bad signature is `E_SIGNATURE`.
//!   Unsigned plaintext queries are accepted (they read public data).
//! - Policy from the core: PII in `p` without consent is `E_CONSENT`, an
//!   expired message `E_TIMEOUT`, a `cap` the registry does not hold
//!   `E_CAPABILITY`. A package or model that does not exist is
//!   `E_INVALID_PARAM`; unsatisfiable requirements `E_TASK_FAILED`.
//! - Every `error` carries `code`, `category`, `message`, `recoverable` and a
//!   `suggestion`; `re` is the refused message's id, or `"unknown"` when
//!   none could be read. Rate-limited messages get `E_RATE_LIMIT` with
//!   `suggestion.delay_ms`.
//! - Everything CPU-bound (parsing, decryption, PII scans, signature checks,
//!   signing) runs on the blocking pool, never on an HTTP worker.

mod answers;
pub mod ledger;
mod operations;
pub mod sessions;
mod streams;

pub use answers::{
    CAPABILITIES, Caller, DOMAIN, INTENTS, Refusal, UNKNOWN_ID, as_map, now_ms, redact_pii,
};

use std::{num::NonZeroU32, sync::Arc};

use agentlang_core::{
    protocol::moltspeak::{
        self, BatchError, Classification, EncryptedEnvelope, Envelope, ErrorCode, Message, Op,
        Transmission, crypto, handshake,
    },
    signing::KeyId,
};
use serde_json::{Map, Value, json};

use self::answers::{error_message, off_workers, rate_limited, signed};
use self::sessions::{SESSION_TS_WINDOW_MS, Session, SessionError};
use crate::{
    FieldError, Registry, ServiceError,
    agent_tasks::{self, ReadTask, ResolveTask, SearchTask, TaskError},
    rate_limits::{Bucket, ClientAddr},
};

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
                    Classification::Internal,
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

/// One frame's answer, and whether the frame broke the rules of the
/// stream (not an envelope of a live session): the connection closes after
/// a few of those.
#[derive(Debug, Clone)]
pub struct FrameAnswer {
    pub answer: Value,
    pub violation: bool,
}

/// Answers one WebSocket text frame from `client`, counted against its
/// message budget like a `POST /message`. The work runs off the workers.
pub async fn answer_frame(
    registry: Arc<Registry>,
    client: &ClientAddr,
    raw: bytes::Bytes,
) -> Result<FrameAnswer, ServiceError> {
    if let Err(ServiceError::RateLimited { retry_after_secs }) = registry
        .rate_limits
        .check(Bucket::AgentMessage, client.as_str())
    {
        return Ok(FrameAnswer {
            answer: rate_limited(&registry, &raw, retry_after_secs),
            violation: false,
        });
    }
    let client = client.clone();
    off_workers(move |runtime| {
        let refuse = |code, message: &str, field| FrameAnswer {
            answer: error_message(
                &registry,
                Refusal::new(code, message, field),
                UNKNOWN_ID,
                None,
                Classification::Internal,
            ),
            violation: true,
        };
        match Transmission::from_slice(&raw) {
            Ok(Transmission::Envelope(Envelope::Encrypted(envelope))) => {
                let answer = runtime.block_on(answer_sealed(&registry, &client, &envelope));
                // Only what no live session can be tied to is answered in
                // plaintext.
                let violation = answer.get("envelope").is_none();
                FrameAnswer { answer, violation }
            }
            Ok(_) => refuse(
                ErrorCode::Classification,
                "every frame of the stream is an encrypted envelope of a verified session",
                Some("envelope.encrypted"),
            ),
            Err(e) => FrameAnswer {
                answer: error_message(
                    &registry,
                    Refusal::from(&e),
                    &moltspeak::salvage_id(&raw).unwrap_or_else(|| UNKNOWN_ID.to_owned()),
                    None,
                    Classification::Internal,
                ),
                violation: true,
            },
        }
    })
    .await
}

/// A WebSocket stream slot for `client` (at most
/// [`MAX_STREAM_CONNECTIONS_PER_CLIENT`](sessions::MAX_STREAM_CONNECTIONS_PER_CLIENT)
/// each, a bounded number in total), held until the connection ends.
pub fn connect_stream(
    registry: &Registry,
    client: &ClientAddr,
) -> Result<sessions::ConnectionSlot, ServiceError> {
    registry
        .moltspeak_sessions
        .connect(client.as_str())
        .map_err(|_| ServiceError::RateLimited {
            retry_after_secs: 10,
        })
}

/// Who the registry is, as `/.well-known/moltspeak.json` says it.
#[derive(Debug, Clone)]
pub struct Identity {
    pub moltspeak: String,
    pub agent: String,
    pub org: String,
    /// `ed25519:<base64>`: the key its answers are signed with.
    pub key: String,
    /// `x25519:<base64>`: the key envelopes to it are sealed to.
    pub enc_key: String,
    pub key_id: String,
    /// `{capability, attestation}` items, org-signed by the registry's key.
    pub capabilities: Value,
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
        enc_key: identity.enc_key().to_string(),
        key_id: identity.key_id().to_string(),
        capabilities: operations::registry_capabilities(registry),
        domains: json!({DOMAIN: INTENTS}),
        endpoints: json!({
            "message": format!("{base}/moltspeak/v0.1/message"),
            "batch": format!("{base}/moltspeak/v0.1/batch"),
            "stream": format!("{}/moltspeak/v0.1/stream", ws_url(base)),
        }),
    }
}

/// `ws://` / `wss://` for the registry's `http://` / `https://` URL.
fn ws_url(base: &str) -> String {
    if let Some(rest) = base.strip_prefix("https://") {
        format!("wss://{rest}")
    } else if let Some(rest) = base.strip_prefix("http://") {
        format!("ws://{rest}")
    } else {
        base.to_owned()
    }
}

/// Capabilities a hello may list.
pub const MAX_HELLO_CAPABILITIES: usize = moltspeak::capabilities::MAX_HELLO_CAPABILITIES;
/// The classes the registry handles (what `hello_ack` advertises).
pub const SUPPORTED_CLS: [&str; 5] = ["pub", "int", "conf", "pii", "sec"];

/// Answers the bytes of one message (or envelope), already counted against
/// its sender's limit.
async fn answer(registry: &Registry, client: &ClientAddr, raw: &[u8]) -> Value {
    let salvaged = || moltspeak::salvage_id(raw).unwrap_or_else(|| UNKNOWN_ID.to_owned());
    let transmission = match Transmission::from_slice(raw) {
        Ok(t) => t,
        Err(e) => {
            return error_message(
                registry,
                Refusal::from(&e),
                &salvaged(),
                None,
                Classification::Internal,
            );
        }
    };
    match transmission {
        Transmission::Envelope(Envelope::Encrypted(envelope)) => {
            answer_sealed(registry, client, &envelope).await
        }
        Transmission::Message(message) | Transmission::Envelope(Envelope::Plain(message)) => {
            answer_plain(registry, client, &message).await
        }
    }
}

async fn answer_plain(registry: &Registry, client: &ClientAddr, message: &Message) -> Value {
    let reply = match message.cls() {
        Classification::Confidential | Classification::Secret => Err(Refusal::new(
            ErrorCode::Classification,
            format!(
                "cls {} travels only inside an encrypted session envelope; run hello and verify first",
                message.cls()
            ),
            Some("cls"),
        )),
        _ => match message.op() {
            Op::Hello => match operations::verify_capabilities(registry, message).await {
                Ok(capabilities) => hello(registry, client, message, capabilities),
                Err(refusal) => Err(refusal),
            },
            Op::Verify => verify(registry, message),
            _ => match authenticate(registry, message).await {
                Ok(()) => {
                    let caller = Caller {
                        client,
                        session: None,
                    };
                    dispatch(registry, &caller, message).await
                }
                Err(refusal) => Err(refusal),
            },
        },
    };
    match reply {
        Ok(reply) => reply.to_value(),
        Err(refusal) => error_message(
            registry,
            refusal,
            message.id(),
            message.from(),
            message.cls(),
        ),
    }
}

/// Answers an encrypted envelope: opened with its session's keys, answered
/// sealed to the same session. Only what cannot be tied to a live session
/// is answered in plaintext.
pub(super) async fn answer_sealed(
    registry: &Registry,
    client: &ClientAddr,
    envelope: &EncryptedEnvelope,
) -> Value {
    let now = now_ms();
    let plain_refusal = |message: &str| {
        error_message(
            registry,
            Refusal::new(ErrorCode::AuthFailed, message, Some("envelope.session")),
            UNKNOWN_ID,
            None,
            Classification::Internal,
        )
    };
    let Some(session_id) = envelope.session.as_deref() else {
        return plain_refusal(
            "an encrypted envelope must name its session (envelope.session); run hello and verify first",
        );
    };
    let session = match registry.moltspeak_sessions.get(session_id, now) {
        Ok(session) => session,
        Err(_) => return plain_refusal("unknown or expired session; run hello and verify again"),
    };
    let (reply, re, cls, to) = match open_sealed(&session, envelope, now) {
        Err(refusal) => (Err(refusal), UNKNOWN_ID.to_owned(), None, None),
        Ok(message) => {
            let reply = handle_sealed(registry, client, &session, &message, now).await;
            let to = message.from().cloned();
            (reply, message.id().to_owned(), Some(message.cls()), to)
        }
    };
    let reply = match reply {
        Ok(reply) => reply,
        Err(refusal) => {
            let value = error_message(
                registry,
                refusal,
                &re,
                to.as_ref(),
                cls.unwrap_or(Classification::Internal),
            );
            match Message::from_value(value) {
                Ok(message) => message,
                Err(e) => {
                    // The code only: the message may quote a decrypted body.
                    tracing::error!(code = %e.code, "a MoltSpeak error does not parse");
                    return plain_refusal("the registry failed to answer");
                }
            }
        }
    };
    seal(registry, &session, &reply)
}

/// The registry's answer sealed to `session`, under a fresh random nonce.
pub(super) fn seal(registry: &Registry, session: &Session, reply: &Message) -> Value {
    let mut nonce = [0_u8; crypto::NONCE_BYTES];
    if let Err(e) = getrandom::fill(&mut nonce) {
        // Never seal under a guessable nonce: answer in plaintext instead.
        tracing::error!(error = %e, "no randomness for a MoltSpeak nonce");
        return error_message(
            registry,
            Refusal::new(ErrorCode::Internal, "the registry has no randomness", None),
            reply.re().unwrap_or(UNKNOWN_ID),
            None,
            Classification::Internal,
        );
    }
    crypto::seal(
        &session.shared,
        registry.identity.enc_key(),
        &session.id,
        &nonce,
        reply,
    )
}

/// Decrypts an envelope of `session`: its sender key must be the session's,
/// its nonce new to the session.
fn open_sealed(
    session: &Session,
    envelope: &EncryptedEnvelope,
    now: u64,
) -> Result<Message, Refusal> {
    if envelope.sender_public != *session.client_enc_key.as_bytes() {
        return Err(Refusal::new(
            ErrorCode::AuthFailed,
            "envelope.sender_public is not the enc_key this session was verified with",
            Some("envelope.sender_public"),
        ));
    }
    let message = crypto::open(&session.shared, envelope).map_err(|e| Refusal::from(&e))?;
    session
        .use_nonce(envelope.nonce, now)
        .map_err(|e| match e {
            SessionError::NoncesExhausted(_) => {
                Refusal::new(ErrorCode::RateLimit, e.to_string(), Some("envelope.nonce"))
            }
            _ => Refusal::new(ErrorCode::AuthFailed, e.to_string(), Some("envelope.nonce")),
        })?;
    Ok(message)
}

/// A message that came in a session: signed by the session's key, fresh.
async fn handle_sealed(
    registry: &Registry,
    client: &ClientAddr,
    session: &Session,
    message: &Message,
    now: u64,
) -> Result<Message, Refusal> {
    if matches!(message.op(), Op::Hello | Op::Verify) {
        return Err(Refusal::new(
            ErrorCode::InvalidParam,
            "hello and verify travel in plaintext, outside a session",
            Some("op"),
        ));
    }
    check_session_message(session, message, now)?;
    let caller = Caller {
        client,
        session: Some(session),
    };
    dispatch(registry, &caller, message).await
}

/// The inner message of a session's envelope: signed by the session's
/// Ed25519 key, `ts` within [`SESSION_TS_WINDOW_MS`].
fn check_session_message(session: &Session, message: &Message, now: u64) -> Result<(), Refusal> {
    if message.signature().is_none() {
        return Err(Refusal::new(
            ErrorCode::AuthFailed,
            "a message in a session must be signed by the session's key",
            Some("sig"),
        ));
    }
    if let Some(key) = message.from().and_then(|f| f.key.as_ref())
        && *key != session.client_key
    {
        return Err(Refusal::new(
            ErrorCode::AuthFailed,
            "from.key is not the key this session was verified with",
            Some("from.key"),
        ));
    }
    message
        .verify(session.client_key.verifying_key())
        .map_err(|e| Refusal::from(&e))?;
    let ts = message.ts().ok_or_else(|| {
        Refusal::new(
            ErrorCode::AuthFailed,
            "a message in a session must carry ts (replays are refused by time)",
            Some("ts"),
        )
    })?;
    if ts.abs_diff(now) > SESSION_TS_WINDOW_MS {
        return Err(Refusal::new(
            ErrorCode::Timeout,
            format!(
                "ts {ts} is more than {} s from the registry's clock ({now})",
                SESSION_TS_WINDOW_MS / 1000
            ),
            Some("ts"),
        ));
    }
    Ok(())
}

/// The operations, for a caller already authenticated as far as it can be:
/// a plaintext message checked against registered keys, a session's
/// message against the session's key.
async fn dispatch(
    registry: &Registry,
    caller: &Caller<'_>,
    message: &Message,
) -> Result<Message, Refusal> {
    dispatch_op(registry, caller, message)
        .await
        .map_err(|refusal| operations::masked_refusal(message, refusal))
}

async fn dispatch_op(
    registry: &Registry,
    caller: &Caller<'_>,
    message: &Message,
) -> Result<Message, Refusal> {
    message.check(now_ms()).map_err(|e| Refusal::from(&e))?;
    operations::check_cap(message)?;
    operations::check_pii(registry, caller, message)?;
    match message.op() {
        Op::Task => operations::task(registry, caller, message).await,
        Op::Tool => operations::tool(registry, caller, message).await,
        Op::Consent => operations::consent(registry, caller, message),
        Op::Query => {
            let data = query(registry, caller.client, message.payload())
                .await
                .map_err(|e| Refusal::from(&e))?;
            let payload = json!({"status": "success", "data": data});
            // Registry data is public, whatever the query's class.
            signed(
                registry,
                Op::Respond,
                Classification::Public,
                operations::masked(message, as_map(payload)),
                message.id(),
                message.from(),
            )
            .map_err(|e| Refusal::from(&e))
        }
        Op::Stream => {
            let data = streams::receive(caller.session, message).map_err(|e| Refusal::from(&e))?;
            // A receipt is derived from the request: it carries its class.
            signed(
                registry,
                Op::Respond,
                message.cls(),
                as_map(json!({"status": "success", "data": data})),
                message.id(),
                message.from(),
            )
            .map_err(|e| Refusal::from(&e))
        }
        other => Err(Refusal::new(
            ErrorCode::InvalidParam,
            format!(
                "the registry answers hello, verify, query, task, tool, consent and stream, not {other}"
            ),
            Some("op"),
        )),
    }
}

/// `hello` → `hello_ack` with a challenge: the sender proved it holds
/// `from.key` by signing; `verify` will prove it is still there.
fn hello(
    registry: &Registry,
    client: &ClientAddr,
    message: &Message,
    capabilities: Vec<String>,
) -> Result<Message, Refusal> {
    let hello = handshake::check_hello(message).map_err(|e| Refusal::from(&e))?;
    message.check(now_ms()).map_err(|e| Refusal::from(&e))?;
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
    let mut challenge = [0_u8; handshake::CHALLENGE_BYTES];
    getrandom::fill(&mut challenge).map_err(|e| {
        tracing::error!(error = %e, "no randomness for a MoltSpeak challenge");
        Refusal::new(ErrorCode::Internal, "the registry has no randomness", None)
    })?;
    let now = now_ms();
    let expires = registry
        .moltspeak_sessions
        .issue_challenge(
            challenge,
            client.as_str(),
            hello.key,
            hello.enc_key,
            capabilities,
            now,
        )
        .map_err(|e| Refusal::new(ErrorCode::RateLimit, e.to_string(), None))?;
    let payload = json!({
        "protocol_versions": [moltspeak::VERSION],
        "capabilities": operations::registry_capabilities(registry),
        "domains": {DOMAIN: INTENTS},
        "extensions": [],
        "max_message_size": moltspeak::MAX_MESSAGE_BYTES,
        "supported_cls": SUPPORTED_CLS,
        "challenge": handshake::encode_binary(&challenge),
        "challenge_expires": expires,
        "session_ttl_ms": registry.moltspeak_sessions.ttl_ms(),
    });
    signed(
        registry,
        Op::HelloAck,
        Classification::Public,
        as_map(payload),
        message.id(),
        message.from(),
    )
    .map_err(|e| Refusal::from(&e))
}

/// `verify` → `verify_response`: the challenge is consumed by this first
/// attempt whatever its outcome, so a verify cannot be replayed.
fn verify(registry: &Registry, message: &Message) -> Result<Message, Refusal> {
    let now = now_ms();
    let challenge: [u8; handshake::CHALLENGE_BYTES] = match message.payload().get("challenge") {
        Some(Value::String(s)) => {
            handshake::decode_binary(s, "p.challenge").map_err(|e| Refusal::from(&e))?
        }
        Some(_) => {
            return Err(Refusal::new(
                ErrorCode::Schema,
                "must be a string",
                Some("p.challenge"),
            ));
        }
        None => {
            return Err(Refusal::new(
                ErrorCode::MissingField,
                "required field is missing",
                Some("p.challenge"),
            ));
        }
    };
    let pending = registry
        .moltspeak_sessions
        .take_challenge(&challenge, now)
        .map_err(|_| {
            Refusal::new(
                ErrorCode::AuthFailed,
                "unknown, expired or already used challenge; send hello again",
                Some("p.challenge"),
            )
        })?;
    let request = handshake::check_verify(message, now).map_err(|e| Refusal::from(&e))?;
    if request.key != pending.key {
        return Err(Refusal::new(
            ErrorCode::AuthFailed,
            "from.key is not the key the hello announced",
            Some("from.key"),
        ));
    }
    if request.enc_key.is_some_and(|k| k != pending.enc_key) {
        return Err(Refusal::new(
            ErrorCode::AuthFailed,
            "from.enc_key is not the enc_key the hello announced",
            Some("from.enc_key"),
        ));
    }
    let shared = registry.identity.shared_box(&pending.enc_key);
    let session = registry
        .moltspeak_sessions
        .open(uuid::Uuid::new_v4().to_string(), pending, shared, now)
        .map_err(|e| Refusal::new(ErrorCode::RateLimit, e.to_string(), None))?;
    let payload = json!({
        "nonce": handshake::encode_binary(&request.nonce),
        "session": {"id": session.id, "expires": session.expires},
    });
    signed(
        registry,
        Op::VerifyResponse,
        Classification::Public,
        as_map(payload),
        message.id(),
        message.from(),
    )
    .map_err(|e| Refusal::from(&e))
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
