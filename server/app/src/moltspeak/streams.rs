//! `op: stream` inside a verified session, and the frames of the WebSocket
//! `/moltspeak/v0.1/stream`: each text frame is one encrypted envelope of a
//! live session, answered by one encrypted envelope. The session's
//! [`StreamReceiver`](agentlang_core::protocol::moltspeak::stream::StreamReceiver)
//! enforces order, checksums, 64 KiB a chunk and 100 MiB a session; the
//! registry keeps counts and hashes, never the data.

use agentlang_core::protocol::moltspeak::{ErrorCode, Message, MoltError, stream::StreamPayload};
use serde_json::Value;

use super::sessions::Session;

/// `op: stream`: start, chunk or end of one of the session's streams; the
/// receipt's `data`, or why it was refused. Outside a session (`None`),
/// `E_AUTH_FAILED`.
pub(super) fn receive(session: Option<&Session>, message: &Message) -> Result<Value, MoltError> {
    let Some(session) = session else {
        return Err(MoltError::new(
            ErrorCode::AuthFailed,
            "streams run inside a verified session: hello, verify, then encrypted envelopes",
            Some("op"),
        ));
    };
    let payload = StreamPayload::parse(message.payload())?;
    session.streams().accept(payload)
}
