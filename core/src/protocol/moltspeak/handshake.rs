//! The MoltSpeak handshake: `hello` → `hello_ack` (the responder's keys and a
//! fresh challenge) → `verify` (the challenge signed, with a timestamp and
//! the initiator's own nonce) → `verify_response` (the nonce echoed, signed,
//! and a session). Builders and checkers for both sides; no clock and no
//! randomness: times, challenges and nonces are arguments.

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use ed25519_dalek::SigningKey;
use serde_json::{Map, Value, json};

use super::{
    B64_LENIENT, Classification, ErrorCode, Message, MessageBuilder, MoltError, Op, Party,
    PublicKey, crypto::EncryptionKey,
};

/// Bytes of a challenge and of a verify nonce (256 bits).
pub const CHALLENGE_BYTES: usize = 32;
/// How far a verify's `p.timestamp` may be from the responder's clock.
pub const VERIFY_WINDOW_MS: u64 = 30_000;

/// `base64:` + standard padded base64.
pub fn encode_binary(bytes: &[u8]) -> String {
    format!("base64:{}", STANDARD.encode(bytes))
}

/// Reads `base64:<N bytes>` at `field`.
pub fn decode_binary<const N: usize>(value: &str, field: &str) -> Result<[u8; N], MoltError> {
    let bytes = value
        .strip_prefix("base64:")
        .and_then(|b| B64_LENIENT.decode(b).ok())
        .ok_or_else(|| MoltError::invalid(field, "must be base64: followed by standard base64"))?;
    let len = bytes.len();
    bytes
        .try_into()
        .map_err(|_| MoltError::invalid(field, format!("must encode {N} bytes, not {len}")))
}

fn payload_str<'a>(p: &'a Map<String, Value>, key: &str) -> Result<&'a str, MoltError> {
    let field = format!("p.{key}");
    match p.get(key) {
        Some(Value::String(s)) => Ok(s),
        Some(_) => Err(MoltError::schema(&field, "must be a string")),
        None => Err(MoltError::missing(&field)),
    }
}

fn payload_u64(p: &Map<String, Value>, key: &str) -> Result<u64, MoltError> {
    let field = format!("p.{key}");
    match p.get(key) {
        Some(Value::Number(n)) => n
            .as_u64()
            .ok_or_else(|| MoltError::invalid(&field, "must be a non-negative integer")),
        Some(_) => Err(MoltError::schema(&field, "must be an integer")),
        None => Err(MoltError::missing(&field)),
    }
}

fn expect_op(message: &Message, op: Op) -> Result<(), MoltError> {
    if message.op() != op {
        return Err(MoltError::invalid(
            "op",
            format!("expected {op}, got {}", message.op()),
        ));
    }
    Ok(())
}

/// The sender's keys, both required, and the message signed by the first.
fn signed_keys(message: &Message) -> Result<(PublicKey, Option<EncryptionKey>), MoltError> {
    let from = message.from().ok_or_else(|| MoltError::missing("from"))?;
    let key = from.key.ok_or_else(|| MoltError::missing("from.key"))?;
    if message.signature().is_none() {
        return Err(MoltError::new(
            ErrorCode::AuthFailed,
            format!("{} must be signed by from.key", message.op()),
            Some("sig"),
        ));
    }
    message.verify(key.verifying_key())?;
    Ok((key, from.enc_key))
}

// ---------------------------------------------------------------------------
// Initiator (client) side

/// A signed `hello` from `from` (whose `key` and `enc_key` must be set and
/// `key` be `signing`'s). `capabilities`: names or attestation objects
/// (a `Vec`, a slice or a reference to either).
pub fn hello(
    id: impl Into<String>,
    ts_ms: u64,
    from: &Party,
    capabilities: impl AsRef<[Value]>,
    signing: &SigningKey,
) -> Result<Message, MoltError> {
    let p = json!({
        "protocol_versions": [super::VERSION],
        "capabilities": capabilities.as_ref(),
        "max_message_size": super::MAX_MESSAGE_BYTES,
        "supported_cls": ["pub", "int", "conf", "pii", "sec"],
    });
    MessageBuilder::new(id, Op::Hello, Classification::Public, as_map(p))
        .ts(ts_ms)
        .from(from)
        .build()?
        .sign(signing)
}

/// What a `hello_ack` gives the initiator.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HelloAck {
    pub key: PublicKey,
    pub enc_key: EncryptionKey,
    pub challenge: [u8; CHALLENGE_BYTES],
    pub challenge_expires: u64,
}

/// Checks a `hello_ack` answering `hello_id`, signed by `responder` when
/// the initiator knows its key already (else by its own `from.key`).
pub fn check_hello_ack(
    message: &Message,
    hello_id: &str,
    responder: Option<&PublicKey>,
) -> Result<HelloAck, MoltError> {
    expect_op(message, Op::HelloAck)?;
    check_re(message, hello_id)?;
    let (key, enc_key) = signed_keys(message)?;
    if let Some(expected) = responder
        && *expected != key
    {
        return Err(MoltError::new(
            ErrorCode::AuthFailed,
            "from.key is not the responder's known key",
            Some("from.key"),
        ));
    }
    let enc_key = enc_key.ok_or_else(|| MoltError::missing("from.enc_key"))?;
    let p = message.payload();
    Ok(HelloAck {
        key,
        enc_key,
        challenge: decode_binary(payload_str(p, "challenge")?, "p.challenge")?,
        challenge_expires: payload_u64(p, "challenge_expires")?,
    })
}

fn check_re(message: &Message, id: &str) -> Result<(), MoltError> {
    if message.re() != Some(id) {
        return Err(MoltError::invalid("re", format!("does not answer {id:?}")));
    }
    Ok(())
}

/// A signed `verify` answering a hello_ack's `challenge` at `ts_ms`, with
/// the initiator's own `nonce` for the responder to echo.
pub fn verify(
    id: impl Into<String>,
    ts_ms: u64,
    from: &Party,
    challenge: &[u8; CHALLENGE_BYTES],
    nonce: &[u8; CHALLENGE_BYTES],
    signing: &SigningKey,
) -> Result<Message, MoltError> {
    let p = json!({
        "challenge": encode_binary(challenge),
        "timestamp": ts_ms,
        "nonce": encode_binary(nonce),
    });
    MessageBuilder::new(id, Op::Verify, Classification::Public, as_map(p))
        .ts(ts_ms)
        .from(from)
        .build()?
        .sign(signing)
}

/// What a `verify_response` grants: a session id and its expiry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionGrant {
    pub id: String,
    pub expires: u64,
}

/// Checks a `verify_response` answering `verify_id`: signed by the
/// responder's `key` and echoing our `nonce` (the responder's proof).
pub fn check_verify_response(
    message: &Message,
    verify_id: &str,
    key: &PublicKey,
    nonce: &[u8; CHALLENGE_BYTES],
) -> Result<SessionGrant, MoltError> {
    expect_op(message, Op::VerifyResponse)?;
    check_re(message, verify_id)?;
    message.verify(key.verifying_key())?;
    let p = message.payload();
    let echoed: [u8; CHALLENGE_BYTES] = decode_binary(payload_str(p, "nonce")?, "p.nonce")?;
    if echoed != *nonce {
        return Err(MoltError::new(
            ErrorCode::AuthFailed,
            "the nonce echoed is not ours",
            Some("p.nonce"),
        ));
    }
    let Some(Value::Object(session)) = p.get("session") else {
        return Err(MoltError::missing("p.session"));
    };
    let id = match session.get("id") {
        Some(Value::String(s)) if !s.is_empty() => s.clone(),
        _ => {
            return Err(MoltError::invalid(
                "p.session.id",
                "must be a non-empty string",
            ));
        }
    };
    let expires = payload_u64(session, "expires").map_err(|e| MoltError {
        field: Some("p.session.expires".into()),
        ..e
    })?;
    Ok(SessionGrant { id, expires })
}

// ---------------------------------------------------------------------------
// Responder (registry) side

/// A `hello` whose sender proved it holds `key`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VerifiedHello {
    pub key: PublicKey,
    pub enc_key: EncryptionKey,
}

/// Checks a `hello`: `from.key` and `from.enc_key` present (`E_MISSING_FIELD`),
/// signed (`E_AUTH_FAILED`) by `from.key` (`E_SIGNATURE`). The key need not
/// be known to anyone: the signature proves possession.
pub fn check_hello(message: &Message) -> Result<VerifiedHello, MoltError> {
    expect_op(message, Op::Hello)?;
    let (key, enc_key) = signed_keys(message)?;
    let enc_key = enc_key.ok_or_else(|| MoltError::missing("from.enc_key"))?;
    Ok(VerifiedHello { key, enc_key })
}

/// A `verify`, signature and timestamp checked; the challenge is for the
/// responder to match against what it issued.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VerifyRequest {
    pub key: PublicKey,
    pub enc_key: Option<EncryptionKey>,
    pub challenge: [u8; CHALLENGE_BYTES],
    pub timestamp: u64,
    pub nonce: [u8; CHALLENGE_BYTES],
}

/// Checks a `verify` at `now_ms`: the payload's shape, the signature by
/// `from.key`, and `p.timestamp` within [`VERIFY_WINDOW_MS`] (else
/// `E_AUTH_FAILED`: a stale verify may be a replay).
pub fn check_verify(message: &Message, now_ms: u64) -> Result<VerifyRequest, MoltError> {
    expect_op(message, Op::Verify)?;
    let p = message.payload();
    let challenge = decode_binary(payload_str(p, "challenge")?, "p.challenge")?;
    let timestamp = payload_u64(p, "timestamp")?;
    let nonce = decode_binary(payload_str(p, "nonce")?, "p.nonce")?;
    let (key, enc_key) = signed_keys(message)?;
    if timestamp.abs_diff(now_ms) > VERIFY_WINDOW_MS {
        return Err(MoltError::new(
            ErrorCode::AuthFailed,
            format!(
                "p.timestamp {timestamp} is more than {} s from the registry's clock ({now_ms})",
                VERIFY_WINDOW_MS / 1000
            ),
            Some("p.timestamp"),
        ));
    }
    Ok(VerifyRequest {
        key,
        enc_key,
        challenge,
        timestamp,
        nonce,
    })
}

fn as_map(value: Value) -> Map<String, Value> {
    match value {
        Value::Object(map) => map,
        _ => Map::new(),
    }
}
