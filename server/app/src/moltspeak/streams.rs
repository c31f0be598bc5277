//! `op: stream` inside a verified session, and the frames of the WebSocket
//! `/moltspeak/v0.1/stream`: each text frame is one encrypted envelope of a
//! live session, answered by one encrypted envelope. The session's
//! [`StreamReceiver`](agentlang_core::protocol::moltspeak::stream::StreamReceiver)
//! enforces order, checksums, 64 KiB a chunk and 100 MiB a session; the
//! registry keeps counts and hashes, never the data.

use std::sync::Arc;

use agentlang_core::protocol::moltspeak::{
    self, Classification, Envelope, ErrorCode, Message, Op, Transmission, stream::StreamPayload,
};
use serde_json::{Value, json};

use super::{
    Caller, Refusal, UNKNOWN_ID, answer_sealed, as_map, error_message, off_workers, signed,
};
use crate::{
    Registry, ServiceError,
    rate_limits::{Bucket, ClientAddr},
};

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
            answer: super::rate_limited(&registry, &raw, retry_after_secs),
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

/// `op: stream`: start, chunk or end of one of the session's streams,
/// answered by a receipt of the request's class.
pub(super) fn stream(
    registry: &Registry,
    caller: &Caller<'_>,
    message: &Message,
) -> Result<Message, Refusal> {
    let Some(session) = caller.session else {
        return Err(Refusal::new(
            ErrorCode::AuthFailed,
            "streams run inside a verified session: hello, verify, then encrypted envelopes",
            Some("op"),
        ));
    };
    let payload = StreamPayload::parse(message.payload()).map_err(|e| Refusal::from(&e))?;
    let data = session
        .streams()
        .accept(payload)
        .map_err(|e| Refusal::from(&e))?;
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

/// A WebSocket stream slot for `client` (at most
/// [`MAX_STREAM_CONNECTIONS_PER_CLIENT`](super::sessions::MAX_STREAM_CONNECTIONS_PER_CLIENT)
/// each, a bounded number in total), held until the connection ends.
pub fn connect_stream(
    registry: &Registry,
    client: &ClientAddr,
) -> Result<super::sessions::ConnectionSlot, ServiceError> {
    registry
        .moltspeak_sessions
        .connect(client.as_str())
        .map_err(|_| ServiceError::RateLimited {
            retry_after_secs: 10,
        })
}
