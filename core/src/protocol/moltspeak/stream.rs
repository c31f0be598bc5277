//! `op: stream` payloads (start, chunk, end) and a [`StreamReceiver`] that
//! holds a receiver's side of every stream of one session: chunks in order
//! (0-based, consecutive), each checksum and the final one checked, a chunk
//! at most [`MAX_CHUNK_BYTES`] and a session at most
//! [`MAX_SESSION_BYTES`]. The receiver keeps running hashes and counts, not
//! the data: what to do with the bytes is the caller's business.

use std::collections::HashMap;

use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};

use super::{B64_LENIENT, ErrorCode, MoltError};
use base64::Engine;

/// Decoded bytes of one chunk (the spec's "Stream chunk: 64 KB").
pub const MAX_CHUNK_BYTES: usize = 64 * 1024;
/// Bytes of every stream of one session together ("Session total: 100 MB").
pub const MAX_SESSION_BYTES: u64 = 100 * 1024 * 1024;
/// Streams one session may hold open at once.
pub const MAX_OPEN_STREAMS: usize = 16;
/// Characters of a `stream_id`.
pub const MAX_STREAM_ID_CHARS: usize = 128;

/// One `stream` payload.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StreamPayload {
    Start {
        stream_id: String,
        kind: String,
        chunk_size: Option<usize>,
        total_size_estimate: Option<u64>,
        compression: Option<String>,
    },
    Chunk {
        stream_id: String,
        sequence: u64,
        data: Vec<u8>,
        checksum: [u8; 32],
    },
    End {
        stream_id: String,
        total_chunks: u64,
        total_bytes: u64,
        final_checksum: [u8; 32],
    },
}

impl StreamPayload {
    pub fn stream_id(&self) -> &str {
        match self {
            Self::Start { stream_id, .. }
            | Self::Chunk { stream_id, .. }
            | Self::End { stream_id, .. } => stream_id,
        }
    }

    /// Parses `p` of a `stream` message; errors name `p.<field>`.
    pub fn parse(p: &Map<String, Value>) -> Result<Self, MoltError> {
        let action = string(p, "action")?;
        let stream_id = string(p, "stream_id")?;
        if stream_id.is_empty() || stream_id.chars().count() > MAX_STREAM_ID_CHARS {
            return Err(MoltError::invalid(
                "p.stream_id",
                format!("must be 1 to {MAX_STREAM_ID_CHARS} characters"),
            ));
        }
        let allowed: &[&str] = match action {
            "start" => &[
                "action",
                "stream_id",
                "type",
                "chunk_size",
                "total_size_estimate",
                "compression",
            ],
            "chunk" => &["action", "stream_id", "sequence", "data", "checksum"],
            "end" => &[
                "action",
                "stream_id",
                "total_chunks",
                "total_bytes",
                "final_checksum",
            ],
            other => {
                return Err(MoltError::invalid(
                    "p.action",
                    format!("unknown stream action {other:?}; expected start, chunk or end"),
                ));
            }
        };
        if let Some(key) = p.keys().find(|k| !allowed.contains(&k.as_str())) {
            return Err(MoltError::schema(
                &format!("p.{key}"),
                format!("unknown field of a stream {action}"),
            ));
        }
        let stream_id = stream_id.to_owned();
        Ok(match action {
            "start" => {
                let chunk_size = optional_u64(p, "chunk_size")?
                    .map(|n| {
                        usize::try_from(n)
                            .ok()
                            .filter(|n| (1..=MAX_CHUNK_BYTES).contains(n))
                            .ok_or_else(|| {
                                MoltError::invalid(
                                    "p.chunk_size",
                                    format!("must be 1 to {MAX_CHUNK_BYTES} bytes, not {n}"),
                                )
                            })
                    })
                    .transpose()?;
                let compression = match p.get("compression") {
                    None => None,
                    Some(Value::String(s)) => Some(s.clone()),
                    Some(_) => return Err(MoltError::schema("p.compression", "must be a string")),
                };
                Self::Start {
                    stream_id,
                    kind: string(p, "type")?.to_owned(),
                    chunk_size,
                    total_size_estimate: optional_u64(p, "total_size_estimate")?,
                    compression,
                }
            }
            "chunk" => {
                let encoded = string(p, "data")?;
                let body = encoded.strip_prefix("base64:").ok_or_else(|| {
                    MoltError::invalid("p.data", "must be base64: followed by standard base64")
                })?;
                // Refuse before decoding what cannot fit.
                if body.len() > (MAX_CHUNK_BYTES / 3 + 1) * 4 {
                    return Err(too_big(body.len() / 4 * 3));
                }
                let data = B64_LENIENT.decode(body).map_err(|_| {
                    MoltError::invalid("p.data", "must be base64: followed by standard base64")
                })?;
                if data.len() > MAX_CHUNK_BYTES {
                    return Err(too_big(data.len()));
                }
                Self::Chunk {
                    stream_id,
                    sequence: required_u64(p, "sequence")?,
                    data,
                    checksum: checksum(p, "checksum")?,
                }
            }
            _ => Self::End {
                stream_id,
                total_chunks: required_u64(p, "total_chunks")?,
                total_bytes: required_u64(p, "total_bytes")?,
                final_checksum: checksum(p, "final_checksum")?,
            },
        })
    }
}

fn too_big(len: usize) -> MoltError {
    MoltError::invalid(
        "p.data",
        format!("a chunk holds at most {MAX_CHUNK_BYTES} bytes, not {len}"),
    )
}

fn string<'a>(p: &'a Map<String, Value>, key: &str) -> Result<&'a str, MoltError> {
    match p.get(key) {
        Some(Value::String(s)) => Ok(s),
        Some(_) => Err(MoltError::schema(&format!("p.{key}"), "must be a string")),
        None => Err(MoltError::missing(&format!("p.{key}"))),
    }
}

fn optional_u64(p: &Map<String, Value>, key: &str) -> Result<Option<u64>, MoltError> {
    match p.get(key) {
        None => Ok(None),
        Some(Value::Number(n)) => n.as_u64().map(Some).ok_or_else(|| {
            MoltError::invalid(&format!("p.{key}"), "must be a non-negative integer")
        }),
        Some(_) => Err(MoltError::schema(&format!("p.{key}"), "must be an integer")),
    }
}

fn required_u64(p: &Map<String, Value>, key: &str) -> Result<u64, MoltError> {
    optional_u64(p, key)?.ok_or_else(|| MoltError::missing(&format!("p.{key}")))
}

/// `sha256:<64 hex digits>`.
fn checksum(p: &Map<String, Value>, key: &str) -> Result<[u8; 32], MoltError> {
    let field = format!("p.{key}");
    let text = string(p, key)?;
    text.strip_prefix("sha256:")
        .and_then(|hex| hex::decode(hex).ok())
        .and_then(|bytes| <[u8; 32]>::try_from(bytes).ok())
        .ok_or_else(|| MoltError::invalid(&field, "must be sha256: followed by 64 hex digits"))
}

/// `sha256:<lowercase hex>` of `data`.
pub fn checksum_of(data: &[u8]) -> String {
    format!("sha256:{}", hex::encode(Sha256::digest(data)))
}

#[derive(Debug, Clone)]
struct OpenStream {
    next_sequence: u64,
    bytes: u64,
    hash: Sha256,
}

/// The receiving side of one session's streams.
#[derive(Debug, Clone, Default)]
pub struct StreamReceiver {
    open: HashMap<String, OpenStream>,
    /// Every chunk's bytes this session, closed streams included.
    session_bytes: u64,
}

impl StreamReceiver {
    pub fn new() -> Self {
        Self::default()
    }

    /// Bytes received this session.
    pub fn session_bytes(&self) -> u64 {
        self.session_bytes
    }

    /// Takes one payload; the receipt's `data` (`{stream_id, sequence?,
    /// received_chunks, received_bytes}`) or why it was refused. A refused
    /// chunk changes nothing: the sender may send the right one.
    pub fn accept(&mut self, payload: StreamPayload) -> Result<Value, MoltError> {
        match payload {
            StreamPayload::Start { stream_id, .. } => {
                if self.open.contains_key(&stream_id) {
                    return Err(MoltError::invalid(
                        "p.stream_id",
                        format!("stream {stream_id:?} is already open"),
                    ));
                }
                if self.open.len() >= MAX_OPEN_STREAMS {
                    return Err(MoltError::new(
                        ErrorCode::RateLimit,
                        format!("at most {MAX_OPEN_STREAMS} streams may be open in a session"),
                        Some("p.stream_id"),
                    ));
                }
                self.open.insert(
                    stream_id.clone(),
                    OpenStream {
                        next_sequence: 0,
                        bytes: 0,
                        hash: Sha256::new(),
                    },
                );
                Ok(json!({"stream_id": stream_id, "received_chunks": 0, "received_bytes": 0}))
            }
            StreamPayload::Chunk {
                stream_id,
                sequence,
                data,
                checksum,
            } => {
                let session_bytes = self.session_bytes;
                let stream = self.stream(&stream_id)?;
                if sequence != stream.next_sequence {
                    let what = if sequence > stream.next_sequence {
                        "missing chunk"
                    } else {
                        "chunk out of order or repeated"
                    };
                    return Err(MoltError::invalid(
                        "p.sequence",
                        format!(
                            "{what}: expected sequence {}, got {sequence}",
                            stream.next_sequence
                        ),
                    ));
                }
                if <[u8; 32]>::from(Sha256::digest(&data)) != checksum {
                    return Err(MoltError::invalid(
                        "p.checksum",
                        format!("does not match the sha256 of chunk {sequence}'s data"),
                    ));
                }
                let len = data.len() as u64;
                if session_bytes + len > MAX_SESSION_BYTES {
                    return Err(MoltError::new(
                        ErrorCode::RateLimit,
                        format!("a session may stream at most {MAX_SESSION_BYTES} bytes"),
                        Some("p.data"),
                    ));
                }
                stream.hash.update(&data);
                stream.bytes += len;
                stream.next_sequence += 1;
                let (chunks, bytes) = (stream.next_sequence, stream.bytes);
                self.session_bytes += len;
                Ok(json!({"stream_id": stream_id, "sequence": sequence,
                          "received_chunks": chunks, "received_bytes": bytes}))
            }
            StreamPayload::End {
                stream_id,
                total_chunks,
                total_bytes,
                final_checksum,
            } => {
                let stream = self.stream(&stream_id)?;
                if total_chunks != stream.next_sequence {
                    return Err(MoltError::invalid(
                        "p.total_chunks",
                        format!(
                            "{total_chunks} announced, {} received",
                            stream.next_sequence
                        ),
                    ));
                }
                if total_bytes != stream.bytes {
                    return Err(MoltError::invalid(
                        "p.total_bytes",
                        format!("{total_bytes} announced, {} received", stream.bytes),
                    ));
                }
                if <[u8; 32]>::from(stream.hash.clone().finalize()) != final_checksum {
                    return Err(MoltError::invalid(
                        "p.final_checksum",
                        "does not match the sha256 of the data received",
                    ));
                }
                self.open.remove(&stream_id);
                Ok(
                    json!({"stream_id": stream_id, "received_chunks": total_chunks,
                          "received_bytes": total_bytes, "complete": true}),
                )
            }
        }
    }

    fn stream(&mut self, stream_id: &str) -> Result<&mut OpenStream, MoltError> {
        self.open.get_mut(stream_id).ok_or_else(|| {
            MoltError::invalid(
                "p.stream_id",
                format!("no open stream {stream_id:?}; send start first"),
            )
        })
    }
}
