//! MoltSpeak 0.1 over HTTP: `POST /moltspeak/v0.1/message`, `POST
//! /moltspeak/v0.1/batch`, and the registry's identity at
//! `GET /.well-known/moltspeak.json`. What the registry answers:
//! `app::moltspeak`.
//!
//! - HTTP status: 200 for every MoltSpeak answer, `error` included; 413 past
//!   the spec's size limits (1 MB a message, 10 MB a batch). A batch is a
//!   JSON array of at most 100 messages or envelopes (422 past that),
//!   answered by an array in the same order; a batch that is not an array
//!   is answered by one `error`. A batch is counted whole against the rate
//!   limit: one that does not fit is refused whole with 429, not answered
//!   message by message.

use actix_web::{HttpRequest, HttpResponse, get, post, web};
use agentlang_core::protocol::moltspeak::{MAX_BATCH_BYTES, MAX_BATCH_ITEMS, MAX_MESSAGE_BYTES};
use app::moltspeak;
use serde::Serialize;
use serde_json::Value;
use utoipa::ToSchema;

use crate::{error::ApiError, rate_limit::Client, state::AppState};

/// A MoltSpeak 0.1 message in its short-key wire form (documentation; the
/// core's parser is the judge).
#[derive(Debug, Serialize, ToSchema)]
#[schema(example = json!({
    "v": "0.1",
    "id": "a1b2c3d4-e5f6-4a7b-8c9d-0e1f2a3b4c5d",
    "ts": 1_703_280_000_000_u64,
    "op": "query",
    "from": {"agent": "assistant-alpha", "org": "acme-corp"},
    "to": {"agent": "agentlang-registry", "org": "agentlang"},
    "p": {"domain": "registry", "intent": "search", "params": {"q": "web search", "kind": "tool"}},
    "cls": "pub"
}))]
pub struct MoltSpeakMessage {
    /// Protocol version: `"0.1"` (else `E_VERSION`).
    #[schema(example = "0.1")]
    pub v: String,
    /// Message id; the registry's answers use UUIDv7.
    pub id: String,
    /// Unix milliseconds.
    pub ts: Option<u64>,
    /// `hello` or `query` to the registry; `hello_ack`, `respond` or `error`
    /// from it.
    #[schema(example = "query")]
    pub op: String,
    /// Sender `{agent, org?, key?}`; `key` is `ed25519:<base64>` and must be
    /// registered with this registry when the message is signed.
    #[schema(value_type = Option<Object>)]
    pub from: Option<Value>,
    /// Recipient `{agent, org?}`.
    #[schema(value_type = Option<Object>)]
    pub to: Option<Value>,
    /// Payload. query: `{domain: "registry", intent: "search" | "resolve" |
    /// "info", params}`; respond: `{status: "success", data}`; error: `{code,
    /// category, message, field?, recoverable, suggestion}`.
    #[schema(value_type = Object)]
    pub p: Value,
    /// Classification: pub, int, conf, pii or sec.
    #[schema(example = "pub")]
    pub cls: String,
    /// `ed25519:<base64>` over the JCS form of the message without `sig`.
    pub sig: Option<String>,
    /// In an answer: the id of the message answered.
    pub re: Option<String>,
    /// Expiry, Unix milliseconds.
    pub exp: Option<u64>,
    /// Capabilities the sender requires of the registry.
    pub cap: Option<Vec<String>>,
    /// PII declaration with consent proof.
    #[schema(value_type = Option<Object>)]
    pub pii_meta: Option<Value>,
}

/// `GET /.well-known/moltspeak.json`: who the registry is.
/// What `/batch` answers: one answer per message, or one `error` when the
/// body is not an array of messages at all.
#[derive(Debug, Serialize, ToSchema)]
#[serde(untagged)]
pub enum MoltSpeakBatchAnswer {
    Answers(Vec<MoltSpeakMessage>),
    Unreadable(Box<MoltSpeakMessage>),
}

#[derive(Debug, Serialize, ToSchema)]
pub struct MoltSpeakIdentity {
    /// Protocol version spoken.
    #[schema(example = "0.1")]
    pub moltspeak: String,
    /// The registry's agent id (`from.agent` of its answers).
    #[schema(example = "agentlang-registry")]
    pub agent: String,
    #[schema(example = "agentlang")]
    pub org: String,
    /// The Ed25519 key its answers are signed with.
    #[schema(example = "ed25519:mKj8Gf2Yx3c1VbN0qHk7sT4uW9zA6dE5rJ2oL8pQ1iM=")]
    pub key: String,
    /// The X25519 key envelopes to the registry are sealed to (derived from
    /// the Ed25519 key, libsodium's way: the same for every replica).
    #[schema(example = "x25519:nL9hHg3Yx3c1VbN0qHk7sT4uW9zA6dE5rJ2oL8pQ1iM=")]
    pub enc_key: String,
    /// Lowercase hex SHA-256 of the raw key.
    pub key_id: String,
    /// The capabilities it holds, each `{capability, attestation: {type:
    /// "org-signed", org, signature, expires}}` signed by its key.
    #[schema(value_type = Vec<Object>)]
    pub capabilities: Value,
    /// The intents of each domain served.
    #[schema(value_type = Object, example = json!({"registry": ["search", "resolve", "info"]}))]
    pub domains: Value,
    #[schema(value_type = Object, example = json!({"message": "http://127.0.0.1:8080/moltspeak/v0.1/message", "batch": "http://127.0.0.1:8080/moltspeak/v0.1/batch"}))]
    pub endpoints: Value,
    /// Bytes of one message.
    pub max_message_size: usize,
    /// Bytes of one batch.
    pub max_batch_size: usize,
    /// Messages in one batch.
    pub max_batch_items: usize,
}

/// Send one MoltSpeak 0.1 message (or plain envelope) to the registry.
///
/// Every MoltSpeak answer is HTTP 200, `error` included. The registry signs
/// every answer with the key published at `/.well-known/moltspeak.json`.
/// Unsigned messages are accepted (every intent reads public data); a signed
/// one must carry a key registered here in `from.key`.
#[utoipa::path(
    tag = "agent protocols",
    request_body(
        content = MoltSpeakMessage,
        content_type = "application/json",
        description = "One message or plain envelope, at most 1 MB",
    ),
    responses(
        (status = 200, body = MoltSpeakMessage, description = "hello_ack, respond or error, signed by the registry; re = the request's id",
            example = json!({
                "v": "0.1",
                "id": "0195f0a2-7c1f-7d10-8a55-0b9a1d2e3f42",
                "ts": 1_703_280_001_234_u64,
                "op": "error",
                "re": "a1b2c3d4-e5f6-4a7b-8c9d-0e1f2a3b4c5d",
                "from": {"agent": "agentlang-registry", "org": "agentlang", "key": "ed25519:mKj8Gf2Yx3c1VbN0qHk7sT4uW9zA6dE5rJ2oL8pQ1iM="},
                "to": {"agent": "assistant-alpha", "org": "acme-corp"},
                "p": {"code": "E_RATE_LIMIT", "category": "transport", "message": "rate limit exceeded; retry in 30 s",
                      "recoverable": true, "suggestion": {"action": "retry_after", "delay_ms": 30000},
                      "context": {"limit": 600, "window": "1m"}},
                "cls": "int",
                "sig": "ed25519:..."
            })),
        (status = 413, description = "Over 1 MB", body = crate::error::Problem, content_type = "application/problem+json"),
    )
)]
#[post("/moltspeak/v0.1/message")]
pub async fn post_message(
    req: HttpRequest,
    payload: web::Payload,
    Client(client): Client,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let raw = super::read_body(&req, payload, MAX_MESSAGE_BYTES).await?;
    let registry = std::sync::Arc::clone(&state.registry);
    let answer = moltspeak::answer_message(registry, &client, raw).await?;
    Ok(HttpResponse::Ok().json(answer))
}

/// Send a batch of MoltSpeak 0.1 messages.
///
/// A JSON array of at most 100 messages or envelopes (and 10 MB), answered
/// by an array of answers in the same order (each as `/message` would
/// answer it). The batch is counted whole against the sender's limit, each
/// message as one: a batch over what is left is refused whole with 429,
/// before any of it is read. A body that is not a JSON array is answered by
/// a single `error`.
#[utoipa::path(
    tag = "agent protocols",
    request_body(
        content = Vec<MoltSpeakMessage>,
        content_type = "application/json",
        description = "A JSON array of at most 100 messages, at most 10 MB",
    ),
    responses(
        (status = 200, body = MoltSpeakBatchAnswer, description = "The answers, in order; a single `error` for a body that is not a JSON array"),
        (status = 413, description = "Over 10 MB", body = crate::error::Problem, content_type = "application/problem+json"),
        (status = 422, description = "More than 100 messages (`validation-failed`, field `batch`)", body = crate::error::Problem, content_type = "application/problem+json"),
        (status = 429, description = "The batch is more than the sender's remaining message budget", body = crate::error::Problem, content_type = "application/problem+json",
         headers(("Retry-After" = u64, description = "Seconds to wait"))),
    )
)]
#[post("/moltspeak/v0.1/batch")]
pub async fn post_batch(
    req: HttpRequest,
    payload: web::Payload,
    Client(client): Client,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let raw = super::read_body(&req, payload, MAX_BATCH_BYTES).await?;
    let registry = std::sync::Arc::clone(&state.registry);
    let answers = moltspeak::answer_batch(registry, &client, raw).await?;
    Ok(HttpResponse::Ok().json(answers))
}

/// The registry's MoltSpeak identity.
///
/// Its agent id, organization, the Ed25519 key its answers are signed with
/// (the same for every replica), and what it serves.
#[utoipa::path(
    tag = "agent protocols",
    responses((status = 200, body = MoltSpeakIdentity, description = "The registry's MoltSpeak identity"))
)]
#[get("/.well-known/moltspeak.json")]
pub async fn get_well_known(state: web::Data<AppState>) -> HttpResponse {
    let identity = moltspeak::identity(&state);
    HttpResponse::Ok()
        .insert_header(("Cache-Control", "public, max-age=300"))
        .json(MoltSpeakIdentity {
            moltspeak: identity.moltspeak,
            agent: identity.agent,
            org: identity.org,
            key: identity.key,
            enc_key: identity.enc_key,
            key_id: identity.key_id,
            capabilities: identity.capabilities,
            domains: identity.domains,
            endpoints: identity.endpoints,
            max_message_size: MAX_MESSAGE_BYTES,
            max_batch_size: MAX_BATCH_BYTES,
            max_batch_items: MAX_BATCH_ITEMS,
        })
}

/// Largest WebSocket frame (after reassembling continuations): a message
/// envelope's 1 MB and room for the frame's own overhead. The envelope
/// parser still holds each envelope to 1 MB.
pub const MAX_STREAM_FRAME_BYTES: usize = MAX_MESSAGE_BYTES + 64 * 1024;
/// A stream connection with no frame for this long is closed.
pub const STREAM_IDLE_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(60);
/// Frames that are not envelopes of a live session a connection may send
/// before it is closed.
pub const MAX_STREAM_VIOLATIONS: u32 = 3;

/// MoltSpeak over a WebSocket (`stream`, and any operation of a session).
///
/// Each text frame is one encrypted envelope of a verified session (see
/// `docs/moltspeak.md`); each is answered by one encrypted envelope of the
/// same session, a `respond` receipt or an `error`. Frames count against the
/// client's MoltSpeak message budget; a plaintext frame or one naming no
/// live session is answered by a plaintext `error` and, after 3, the
/// connection is closed. Frames up to 1 MB + 64 KiB; 60 s idle closes it; 4
/// connections per client address.
#[utoipa::path(
    tag = "agent protocols",
    responses(
        (status = 101, description = "Switching to the WebSocket protocol"),
        (status = 400, description = "Not a WebSocket upgrade request"),
        (status = 429, description = "Too many stream connections from this address", body = crate::error::Problem, content_type = "application/problem+json",
         headers(("Retry-After" = u64, description = "Seconds to wait"))),
    )
)]
#[get("/moltspeak/v0.1/stream")]
pub async fn get_stream(
    req: HttpRequest,
    body: web::Payload,
    Client(client): Client,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let slot = moltspeak::connect_stream(&state.registry, &client)?;
    let (response, session, frames) =
        actix_ws::handle(&req, body).map_err(|e| ApiError::BadRequest(e.to_string()))?;
    let frames = frames
        .max_frame_size(MAX_STREAM_FRAME_BYTES)
        .aggregate_continuations()
        .max_continuation_size(MAX_STREAM_FRAME_BYTES);
    let registry = std::sync::Arc::clone(&state.registry);
    actix_web::rt::spawn(async move {
        // The slot is released when the connection's task ends.
        let _slot = slot;
        serve_stream(registry, client, session, frames).await;
    });
    Ok(response)
}

async fn serve_stream(
    registry: std::sync::Arc<app::Registry>,
    client: app::rate_limits::ClientAddr,
    mut session: actix_ws::Session,
    mut frames: actix_ws::AggregatedMessageStream,
) {
    use actix_ws::{AggregatedMessage, CloseCode, CloseReason};
    let mut violations = 0_u32;
    let close = |code, description: &str| {
        Some(CloseReason {
            code,
            description: Some(description.to_owned()),
        })
    };
    let reason = loop {
        let frame = match tokio::time::timeout(STREAM_IDLE_TIMEOUT, frames.recv()).await {
            Err(_) => break close(CloseCode::Normal, "idle"),
            Ok(None) => break None,
            Ok(Some(Err(_))) => break close(CloseCode::Size, "frame refused"),
            Ok(Some(Ok(frame))) => frame,
        };
        let raw = match frame {
            AggregatedMessage::Text(text) => text.into_bytes(),
            AggregatedMessage::Binary(bytes) => bytes,
            AggregatedMessage::Ping(bytes) => {
                if session.pong(&bytes).await.is_err() {
                    return;
                }
                continue;
            }
            AggregatedMessage::Pong(_) => continue,
            AggregatedMessage::Close(_) => break None,
        };
        let answer =
            match moltspeak::answer_frame(std::sync::Arc::clone(&registry), &client, raw).await {
                Ok(answer) => answer,
                Err(e) => {
                    tracing::error!(error = %e, "a MoltSpeak stream frame failed");
                    break close(CloseCode::Error, "internal error");
                }
            };
        if session.text(answer.answer.to_string()).await.is_err() {
            return;
        }
        if answer.violation {
            violations += 1;
            if violations >= MAX_STREAM_VIOLATIONS {
                break close(
                    CloseCode::Policy,
                    "frames must be encrypted envelopes of a verified session",
                );
            }
        }
    };
    let _ = session.close(reason).await;
}
