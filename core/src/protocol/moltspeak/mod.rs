//! MoltSpeak 0.1: typed messages and envelopes in their short-key wire form,
//! validation with the spec's `E_*` codes, Ed25519 signatures over a
//! canonical form, and the PII consent rule.
//!
//! Decisions the spec leaves open, fixed here:
//! - Required: `v`, `id`, `op`, `p` (the field table's ✓) and `cls` (the
//!   table says "Recommended" but the classification section says every
//!   message MUST carry one; every example does).
//! - `ts` is optional although the table marks it ✓: the spec's own workflow
//!   and stream examples omit it, and they are meant to be valid.
//! - `from` and `to` ("Most ops") are optional, except that `hello` needs
//!   `from`: it introduces the sender's identity and keys.
//! - `re` is required by every response op: `respond`, `error` and the
//!   `*_ack` / `*_response` ops the operation table names.
//! - `id` is any non-empty string: the table says UUID, the examples use
//!   `task-001-research`.
//! - `cls` accepts the long names (`public`, `internal`, `confidential`,
//!   `secret`) and the short tags (`pub`, `int`, `conf`, `pii`, `sec`); both
//!   map to [`Classification`], which writes the short tag.
//! - Unknown top-level keys are `E_SCHEMA`: extensions go under `ext`, whose
//!   keys must be `{org}.{extension}` (else `E_INVALID_PARAM`); unknown
//!   extensions are kept, never an error.
//! - Wrong JSON types are `E_SCHEMA`, absent required fields
//!   `E_MISSING_FIELD`, bad values of the right type `E_INVALID_PARAM`.
//!   Oversized input is `E_SCHEMA` (checked on raw bytes before parsing).
//! - Keys are `ed25519:` + standard base64 of the raw 32-byte public key,
//!   signatures `ed25519:` + standard base64 of the 64-byte signature (padded
//!   on output, padding optional on input), matching the spec's
//!   `ed25519:mKj8Gf2...`. The signature covers the RFC 8785 (JCS) form of
//!   the message object without its `sig` key, exactly as received, so a
//!   verifier needs no knowledge of fields it does not understand.
//! - A batch is a JSON array of messages or envelopes; each item is judged
//!   on its own, and each must fit the single-message limit.
//! - Times (`ts`, `exp`, consent `expires`) are Unix milliseconds; a message
//!   or consent is expired once `now >= exp`.
//! - Encryption ([`crypto`]): X25519 keys `x25519:<base64>`, NaCl
//!   crypto_box of a complete signed message; an encrypted envelope names
//!   its session in `envelope.session`. The handshake that opens a session
//!   is [`handshake`]; streams are [`stream`]. docs/moltspeak.md has the
//!   wire.

use std::collections::BTreeSet;
use std::fmt;
use std::str::FromStr;

use base64::Engine;
use base64::engine::DecodePaddingMode;
use base64::engine::general_purpose::{GeneralPurpose, GeneralPurposeConfig, STANDARD};
use ed25519_dalek::{Signature, Signer, SigningKey, VerifyingKey};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::value::RawValue;
use serde_json::{Map, Value, json};

use super::canonical::{self, CanonicalError};
use super::pii::{self, PiiReport, PiiType};

pub mod capabilities;
pub mod consent;
pub mod crypto;
pub mod handshake;
pub mod payloads;
pub mod stream;

pub use crypto::{EncryptionKey, EncryptionSecret, SharedBox};

/// The protocol version this module speaks.
pub const VERSION: &str = "0.1";
/// The single-message limit of the spec, in bytes.
pub const MAX_MESSAGE_BYTES: usize = 1 << 20;
/// The batch limit of the spec, in bytes.
pub const MAX_BATCH_BYTES: usize = 10 << 20;

/// Standard base64, padding optional when reading.
const B64_LENIENT: GeneralPurpose = GeneralPurpose::new(
    &base64::alphabet::STANDARD,
    GeneralPurposeConfig::new().with_decode_padding_mode(DecodePaddingMode::Indifferent),
);

// ---------------------------------------------------------------------------
// Errors

/// The spec's error codes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ErrorCode {
    Parse,
    Version,
    Schema,
    MissingField,
    InvalidParam,
    AuthFailed,
    Signature,
    Capability,
    Consent,
    Classification,
    RateLimit,
    Timeout,
    TaskFailed,
    Internal,
}

/// The category column of the spec's error table.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ErrorCategory {
    Protocol,
    Validation,
    Auth,
    Privacy,
    Transport,
    Execution,
}

impl ErrorCategory {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Protocol => "protocol",
            Self::Validation => "validation",
            Self::Auth => "auth",
            Self::Privacy => "privacy",
            Self::Transport => "transport",
            Self::Execution => "execution",
        }
    }
}

impl ErrorCode {
    pub const ALL: [ErrorCode; 14] = [
        Self::Parse,
        Self::Version,
        Self::Schema,
        Self::MissingField,
        Self::InvalidParam,
        Self::AuthFailed,
        Self::Signature,
        Self::Capability,
        Self::Consent,
        Self::Classification,
        Self::RateLimit,
        Self::Timeout,
        Self::TaskFailed,
        Self::Internal,
    ];

    pub fn as_str(self) -> &'static str {
        self.row().0
    }

    pub fn category(self) -> ErrorCategory {
        self.row().1
    }

    /// The spec's description column.
    pub fn description(self) -> &'static str {
        self.row().2
    }

    /// The default `recoverable` of an error reply. The spec shows it only
    /// for examples (`E_INVALID_PARAM`, `E_RATE_LIMIT`, `E_CONSENT`: true);
    /// the rest follow one rule: recoverable when the sender can fix and
    /// resend or wait and resend, not when identity, version or the work
    /// itself failed.
    pub fn recoverable(self) -> bool {
        !matches!(
            self,
            Self::Version
                | Self::AuthFailed
                | Self::Signature
                | Self::Capability
                | Self::TaskFailed
        )
    }

    fn row(self) -> (&'static str, ErrorCategory, &'static str) {
        use ErrorCategory as C;
        match self {
            Self::Parse => ("E_PARSE", C::Protocol, "Message not valid JSON"),
            Self::Version => ("E_VERSION", C::Protocol, "Unsupported protocol version"),
            Self::Schema => ("E_SCHEMA", C::Validation, "Message doesn't match schema"),
            Self::MissingField => ("E_MISSING_FIELD", C::Validation, "Required field missing"),
            Self::InvalidParam => ("E_INVALID_PARAM", C::Validation, "Parameter value invalid"),
            Self::AuthFailed => ("E_AUTH_FAILED", C::Auth, "Authentication failed"),
            Self::Signature => ("E_SIGNATURE", C::Auth, "Signature verification failed"),
            Self::Capability => ("E_CAPABILITY", C::Auth, "Required capability not held"),
            Self::Consent => ("E_CONSENT", C::Privacy, "PII transmitted without consent"),
            Self::Classification => (
                "E_CLASSIFICATION",
                C::Privacy,
                "Classification level mismatch",
            ),
            Self::RateLimit => ("E_RATE_LIMIT", C::Transport, "Too many requests"),
            Self::Timeout => ("E_TIMEOUT", C::Transport, "Operation timed out"),
            Self::TaskFailed => ("E_TASK_FAILED", C::Execution, "Task could not complete"),
            Self::Internal => ("E_INTERNAL", C::Execution, "Internal agent error"),
        }
    }
}

impl fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for ErrorCode {
    type Err = MoltError;
    fn from_str(s: &str) -> Result<Self, MoltError> {
        Self::ALL
            .into_iter()
            .find(|c| c.as_str() == s)
            .ok_or_else(|| MoltError::invalid("p.code", format!("unknown error code {s:?}")))
    }
}

impl Serialize for ErrorCode {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

/// Why a message was refused: the code, a one-line message, the field
/// concerned, and for `E_CONSENT` what PII was found where.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct MoltError {
    pub code: ErrorCode,
    pub message: String,
    pub field: Option<String>,
    pub detected_pii: Option<PiiReport>,
}

impl fmt::Display for MoltError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.field {
            Some(field) => write!(f, "{} {}: {}", self.code, field, self.message),
            None => write!(f, "{} {}", self.code, self.message),
        }
    }
}

impl MoltError {
    pub fn new(code: ErrorCode, message: impl Into<String>, field: Option<&str>) -> Self {
        Self {
            code,
            message: message.into(),
            field: field.map(str::to_owned),
            detected_pii: None,
        }
    }

    fn schema(field: &str, message: impl Into<String>) -> Self {
        Self::new(ErrorCode::Schema, message, Some(field))
    }

    fn missing(field: &str) -> Self {
        Self::new(
            ErrorCode::MissingField,
            "required field is missing",
            Some(field),
        )
    }

    fn invalid(field: &str, message: impl Into<String>) -> Self {
        Self::new(ErrorCode::InvalidParam, message, Some(field))
    }

    fn consent(message: impl Into<String>, field: &str, report: &PiiReport) -> Self {
        Self {
            detected_pii: (!report.is_empty()).then(|| report.clone()),
            ..Self::new(ErrorCode::Consent, message, Some(field))
        }
    }
}

// ---------------------------------------------------------------------------
// Values

/// `cls`: the data classification.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Classification {
    Public,
    Internal,
    Confidential,
    Pii,
    Secret,
}

impl Classification {
    /// The short tag of the spec's classification table.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Public => "pub",
            Self::Internal => "int",
            Self::Confidential => "conf",
            Self::Pii => "pii",
            Self::Secret => "sec",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "pub" | "public" => Self::Public,
            "int" | "internal" => Self::Internal,
            "conf" | "confidential" => Self::Confidential,
            "pii" => Self::Pii,
            "sec" | "secret" => Self::Secret,
            _ => return None,
        })
    }
}

impl fmt::Display for Classification {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for Classification {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

/// `op`: the operations of the spec's table, including the response ops it
/// names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Op {
    Hello,
    HelloAck,
    Verify,
    VerifyResponse,
    Query,
    Respond,
    Task,
    TaskAck,
    Stream,
    Tool,
    Consent,
    ConsentResponse,
    Error,
}

impl Op {
    pub const ALL: [Op; 13] = [
        Self::Hello,
        Self::HelloAck,
        Self::Verify,
        Self::VerifyResponse,
        Self::Query,
        Self::Respond,
        Self::Task,
        Self::TaskAck,
        Self::Stream,
        Self::Tool,
        Self::Consent,
        Self::ConsentResponse,
        Self::Error,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Hello => "hello",
            Self::HelloAck => "hello_ack",
            Self::Verify => "verify",
            Self::VerifyResponse => "verify_response",
            Self::Query => "query",
            Self::Respond => "respond",
            Self::Task => "task",
            Self::TaskAck => "task_ack",
            Self::Stream => "stream",
            Self::Tool => "tool",
            Self::Consent => "consent",
            Self::ConsentResponse => "consent_response",
            Self::Error => "error",
        }
    }

    /// Whether the op answers another message and so needs `re`.
    pub fn is_response(self) -> bool {
        matches!(
            self,
            Self::HelloAck
                | Self::VerifyResponse
                | Self::Respond
                | Self::TaskAck
                | Self::ConsentResponse
                | Self::Error
        )
    }
}

impl fmt::Display for Op {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Why a `ed25519:<base64>` key did not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct KeyFormatError(String);

/// An Ed25519 public key in the `ed25519:<base64>` form.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PublicKey(VerifyingKey);

impl PublicKey {
    /// Refuses malformed and weak (small-order) keys.
    pub fn parse(s: &str) -> Result<Self, KeyFormatError> {
        let bytes = decode_prefixed::<32>(s, "ed25519:").map_err(KeyFormatError)?;
        let key = VerifyingKey::from_bytes(&bytes)
            .map_err(|_| KeyFormatError("not an Ed25519 point".into()))?;
        if key.is_weak() {
            return Err(KeyFormatError("a weak (small-order) Ed25519 key".into()));
        }
        Ok(Self(key))
    }

    pub fn verifying_key(&self) -> &VerifyingKey {
        &self.0
    }
}

impl From<VerifyingKey> for PublicKey {
    fn from(key: VerifyingKey) -> Self {
        Self(key)
    }
}

impl fmt::Display for PublicKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ed25519:{}", STANDARD.encode(self.0.as_bytes()))
    }
}

impl Serialize for PublicKey {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

fn decode_prefixed<const N: usize>(s: &str, prefix: &str) -> Result<[u8; N], String> {
    let body = s
        .strip_prefix(prefix)
        .ok_or_else(|| format!("must start with {prefix:?}"))?;
    let bytes = B64_LENIENT
        .decode(body)
        .map_err(|_| format!("must be {prefix} followed by standard base64"))?;
    let len = bytes.len();
    bytes
        .try_into()
        .map_err(|_| format!("must encode {N} bytes, not {len}"))
}

/// `from` / `to`: an agent, its organization and its keys.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Party {
    pub agent: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub org: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub key: Option<PublicKey>,
    /// `x25519:<base64 of 32 bytes>`: where encrypted envelopes for this
    /// party are sealed to.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub enc_key: Option<EncryptionKey>,
}

impl Party {
    pub fn new(agent: impl Into<String>, org: Option<&str>) -> Self {
        Self {
            agent: agent.into(),
            org: org.map(str::to_owned),
            key: None,
            enc_key: None,
        }
    }
}

/// `pii_meta.consent`: who granted what, until when, with which proof.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Consent {
    pub granted_by: String,
    pub purpose: String,
    /// Unix milliseconds.
    pub expires: u64,
    pub proof: String,
}

/// `pii_meta`: the PII a message declares and the consent covering it.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize)]
pub struct PiiMeta {
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub types: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub consent: Option<Consent>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub mask_fields: Vec<String>,
}

// ---------------------------------------------------------------------------
// Messages

/// A structurally valid MoltSpeak 0.1 message. It keeps the object exactly as
/// received next to the typed view, because the signature covers the former.
/// Policy that needs a clock (`exp`, consent expiry, PII) is [`Message::check`].
#[derive(Debug, Clone, PartialEq)]
pub struct Message {
    raw: Map<String, Value>,
    id: String,
    ts: Option<u64>,
    op: Op,
    from: Option<Party>,
    to: Option<Party>,
    cls: Classification,
    sig: Option<Signature>,
    re: Option<String>,
    exp: Option<u64>,
    cap: Vec<String>,
    pii_meta: Option<PiiMeta>,
}

const TOP_LEVEL_KEYS: [&str; 15] = [
    "v", "id", "ts", "op", "from", "to", "p", "cls", "sig", "enc", "re", "exp", "cap", "pii_meta",
    "ext",
];

impl Message {
    /// Parses and validates at most [`MAX_MESSAGE_BYTES`].
    pub fn from_slice(bytes: &[u8]) -> Result<Self, MoltError> {
        check_size(bytes.len(), MAX_MESSAGE_BYTES, "message")?;
        Self::from_value(parse_json(bytes)?)
    }

    /// Validates an already-parsed JSON value.
    pub fn from_value(value: Value) -> Result<Self, MoltError> {
        let Value::Object(raw) = value else {
            return Err(MoltError::new(
                ErrorCode::Schema,
                "a MoltSpeak message must be a JSON object",
                None,
            ));
        };
        parse_message(raw)
    }

    /// Parses, validates, and applies [`Message::check`] at `now_ms`.
    pub fn validate(bytes: &[u8], now_ms: u64) -> Result<Self, MoltError> {
        let message = Self::from_slice(bytes)?;
        message.check(now_ms)?;
        Ok(message)
    }

    pub fn id(&self) -> &str {
        &self.id
    }
    /// Unix milliseconds, when given.
    pub fn ts(&self) -> Option<u64> {
        self.ts
    }
    pub fn op(&self) -> Op {
        self.op
    }
    pub fn from(&self) -> Option<&Party> {
        self.from.as_ref()
    }
    pub fn to(&self) -> Option<&Party> {
        self.to.as_ref()
    }
    pub fn cls(&self) -> Classification {
        self.cls
    }
    pub fn signature(&self) -> Option<&Signature> {
        self.sig.as_ref()
    }
    pub fn re(&self) -> Option<&str> {
        self.re.as_deref()
    }
    pub fn exp(&self) -> Option<u64> {
        self.exp
    }
    pub fn cap(&self) -> &[String] {
        &self.cap
    }
    pub fn pii_meta(&self) -> Option<&PiiMeta> {
        self.pii_meta.as_ref()
    }
    /// `p`.
    pub fn payload(&self) -> &Map<String, Value> {
        // Parsing guarantees `p` is an object; the fallback is never taken.
        static NO_PAYLOAD: std::sync::LazyLock<Map<String, Value>> =
            std::sync::LazyLock::new(Map::new);
        self.raw
            .get("p")
            .and_then(Value::as_object)
            .unwrap_or(&NO_PAYLOAD)
    }
    /// `enc`, kept opaque.
    pub fn enc(&self) -> Option<&Map<String, Value>> {
        self.raw.get("enc").and_then(Value::as_object)
    }
    /// `ext`, every extension kept, known or not.
    pub fn ext(&self) -> Option<&Map<String, Value>> {
        self.raw.get("ext").and_then(Value::as_object)
    }
    /// The message object as received (or built).
    pub fn as_object(&self) -> &Map<String, Value> {
        &self.raw
    }
    pub fn to_value(&self) -> Value {
        Value::Object(self.raw.clone())
    }
    pub fn to_vec(&self) -> Vec<u8> {
        // A map of JSON values always serializes.
        serde_json::to_vec(&self.raw).unwrap_or_default()
    }

    /// The policy checks that need a clock: `exp` not passed, and the PII
    /// rule: PII found in `p` (the `human` a consent op asks about aside)
    /// needs `cls: pii` and a `pii_meta.consent` that has not expired and
    /// whose `pii_meta.types` lists every kind found; a message classified
    /// `pii` needs that consent even when the scanner finds nothing.
    pub fn check(&self, now_ms: u64) -> Result<(), MoltError> {
        if let Some(exp) = self.exp
            && now_ms >= exp
        {
            return Err(MoltError::new(
                ErrorCode::Timeout,
                format!("message expired at {exp} (now {now_ms})"),
                Some("exp"),
            ));
        }
        let report = self.scan_pii();
        if report.is_empty() && self.cls != Classification::Pii {
            if self.pii_meta.is_some() {
                return Err(MoltError::new(
                    ErrorCode::Classification,
                    format!("pii_meta on a message classified {}, not pii", self.cls),
                    Some("cls"),
                ));
            }
            return Ok(());
        }
        let found = describe(&report);
        if self.cls != Classification::Pii {
            return Err(MoltError::consent(
                format!(
                    "PII detected without valid consent: {found}; cls is {}, not pii",
                    self.cls
                ),
                "cls",
                &report,
            ));
        }
        let Some(consent) = self.pii_meta.as_ref().and_then(|m| m.consent.as_ref()) else {
            return Err(MoltError::consent(
                format!("PII without consent proof ({found}): pii_meta.consent is missing"),
                "pii_meta.consent",
                &report,
            ));
        };
        if now_ms >= consent.expires {
            return Err(MoltError::consent(
                format!("consent expired at {} (now {now_ms})", consent.expires),
                "pii_meta.consent.expires",
                &report,
            ));
        }
        let declared: BTreeSet<&str> = self
            .pii_meta
            .iter()
            .flat_map(|m| m.types.iter().map(String::as_str))
            .collect();
        let undeclared: Vec<&str> = report
            .types()
            .into_iter()
            .map(PiiType::as_str)
            .filter(|t| !declared.contains(t))
            .collect();
        if !undeclared.is_empty() {
            return Err(MoltError::consent(
                format!(
                    "PII of types not covered by pii_meta.types: {}",
                    undeclared.join(", ")
                ),
                "pii_meta.types",
                &report,
            ));
        }
        Ok(())
    }

    /// The PII in `p`, with paths from `p`.
    pub fn scan_pii(&self) -> PiiReport {
        let payload = self.raw.get("p").unwrap_or(&Value::Null);
        // The consent flow must name the human it asks; that is its purpose.
        // So must its answer name who granted it.
        let exempt: &[&str] = match self.op {
            Op::Consent => &["p.human"],
            Op::ConsentResponse => &["p.granted_by"],
            _ => &[],
        };
        pii::scan_value(payload, "p", exempt)
    }

    /// `E_CAPABILITY` unless every capability in `cap` is among `held`.
    pub fn check_capabilities(&self, held: &[&str]) -> Result<(), MoltError> {
        match self.cap.iter().find(|c| !held.contains(&c.as_str())) {
            Some(missing) => Err(MoltError::new(
                ErrorCode::Capability,
                format!("capability {missing:?} is required but not held"),
                Some("cap"),
            )),
            None => Ok(()),
        }
    }

    /// The bytes a signature covers: JCS of the message without `sig`.
    pub fn signing_bytes(&self) -> Result<Vec<u8>, MoltError> {
        let mut unsigned = self.raw.clone();
        unsigned.remove("sig");
        canonical::to_jcs_bytes(&Value::Object(unsigned)).map_err(|e| match e {
            CanonicalError::UnsafeInteger { ref path, .. } => MoltError::invalid(
                path.trim_start_matches("$."),
                format!("cannot be signed: {e}"),
            ),
            CanonicalError::Serialize(_) => {
                MoltError::new(ErrorCode::Internal, e.to_string(), None)
            }
        })
    }

    /// Signs the message (replacing any signature) with `key`.
    pub fn sign(mut self, key: &SigningKey) -> Result<Self, MoltError> {
        let signature = key.sign(&self.signing_bytes()?);
        self.raw.insert(
            "sig".into(),
            Value::String(format!("ed25519:{}", STANDARD.encode(signature.to_bytes()))),
        );
        self.sig = Some(signature);
        Ok(self)
    }

    /// Verifies the signature with a key the caller trusts.
    pub fn verify(&self, key: &VerifyingKey) -> Result<(), MoltError> {
        let signature = self.sig.as_ref().ok_or_else(|| {
            MoltError::new(
                ErrorCode::AuthFailed,
                "the message is not signed",
                Some("sig"),
            )
        })?;
        key.verify_strict(&self.signing_bytes()?, signature)
            .map_err(|_| {
                MoltError::new(
                    ErrorCode::Signature,
                    "signature does not match the message and key",
                    Some("sig"),
                )
            })
    }

    /// Verifies the signature with the sender's own `from.key`. This proves
    /// integrity and possession of that key, not who owns it: check the key
    /// against a trusted registry before trusting the sender.
    pub fn verify_with_sender_key(&self) -> Result<(), MoltError> {
        let key = self
            .from
            .as_ref()
            .and_then(|f| f.key.as_ref())
            .ok_or_else(|| {
                MoltError::new(
                    ErrorCode::AuthFailed,
                    "no sender key to verify with",
                    Some("from.key"),
                )
            })?;
        self.verify(key.verifying_key())
    }
}

fn describe(report: &PiiReport) -> String {
    if report.is_empty() {
        return "message classified pii".into();
    }
    let types: Vec<&str> = report.types().into_iter().map(PiiType::as_str).collect();
    format!(
        "{} found in {}",
        types.join(", "),
        report.fields().join(", ")
    )
}

impl Serialize for Message {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.raw.serialize(s)
    }
}

impl<'de> Deserialize<'de> for Message {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Message::from_value(Value::deserialize(d)?).map_err(serde::de::Error::custom)
    }
}

// ---------------------------------------------------------------------------
// Building messages

/// Builds a message from typed parts; `build` runs the same validation as
/// parsing, so a built message is as valid as a received one.
#[derive(Debug, Clone)]
pub struct MessageBuilder {
    raw: Map<String, Value>,
}

impl MessageBuilder {
    pub fn new(
        id: impl Into<String>,
        op: Op,
        cls: Classification,
        payload: Map<String, Value>,
    ) -> Self {
        let mut raw = Map::new();
        raw.insert("v".into(), VERSION.into());
        raw.insert("id".into(), Value::String(id.into()));
        raw.insert("op".into(), op.as_str().into());
        raw.insert("p".into(), Value::Object(payload));
        raw.insert("cls".into(), cls.as_str().into());
        Self { raw }
    }

    fn set(mut self, key: &str, value: Value) -> Self {
        self.raw.insert(key.into(), value);
        self
    }

    pub fn ts(self, ts_ms: u64) -> Self {
        self.set("ts", ts_ms.into())
    }
    pub fn from(self, party: &Party) -> Self {
        self.set("from", json!(party))
    }
    pub fn to(self, party: &Party) -> Self {
        self.set("to", json!(party))
    }
    pub fn re(self, id: impl Into<String>) -> Self {
        self.set("re", Value::String(id.into()))
    }
    pub fn exp(self, exp_ms: u64) -> Self {
        self.set("exp", exp_ms.into())
    }
    pub fn cap(self, caps: &[&str]) -> Self {
        self.set("cap", json!(caps))
    }
    pub fn pii_meta(self, meta: &PiiMeta) -> Self {
        self.set("pii_meta", json!(meta))
    }
    /// Adds the extension `name` (`{org}.{extension}`).
    pub fn ext(mut self, name: impl Into<String>, value: Value) -> Self {
        let ext = self
            .raw
            .entry("ext")
            .or_insert_with(|| Value::Object(Map::new()));
        if let Value::Object(map) = ext {
            map.insert(name.into(), value);
        }
        self
    }

    pub fn build(self) -> Result<Message, MoltError> {
        Message::from_value(Value::Object(self.raw))
    }
}

/// The payload of an `error` op, in the spec's shape.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ErrorReport {
    pub code: ErrorCode,
    pub message: String,
    pub field: Option<String>,
    pub recoverable: bool,
    /// `{"action": ..., ...}`: how the sender can recover.
    pub suggestion: Option<Map<String, Value>>,
    pub detected_pii: Option<PiiReport>,
}

impl ErrorReport {
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
            field: None,
            recoverable: code.recoverable(),
            suggestion: None,
            detected_pii: None,
        }
    }

    /// `p`: code, category, message, field, recoverable, suggestion and, for
    /// consent errors, detected_pii.
    pub fn to_payload(&self) -> Map<String, Value> {
        let mut p = Map::new();
        p.insert("code".into(), self.code.as_str().into());
        p.insert("category".into(), self.code.category().as_str().into());
        p.insert("message".into(), self.message.clone().into());
        if let Some(field) = &self.field {
            p.insert("field".into(), field.clone().into());
        }
        p.insert("recoverable".into(), self.recoverable.into());
        if let Some(suggestion) = &self.suggestion {
            p.insert("suggestion".into(), Value::Object(suggestion.clone()));
        }
        if let Some(report) = &self.detected_pii {
            p.insert("detected_pii".into(), json!(report));
        }
        p
    }

    /// An `error` message answering `re`, classified `int` like the spec's
    /// error examples. Fails only for an empty `id` or `re`.
    pub fn to_message(
        &self,
        id: impl Into<String>,
        re: impl Into<String>,
        ts_ms: u64,
    ) -> Result<Message, MoltError> {
        MessageBuilder::new(id, Op::Error, Classification::Internal, self.to_payload())
            .re(re)
            .ts(ts_ms)
            .build()
    }
}

impl From<&MoltError> for ErrorReport {
    /// With a suggestion where the code implies one.
    fn from(e: &MoltError) -> Self {
        let suggestion = match e.code {
            ErrorCode::Consent => {
                let types: Vec<&str> = e
                    .detected_pii
                    .iter()
                    .flat_map(|r| r.types())
                    .map(PiiType::as_str)
                    .collect();
                Some(
                    json!({"action": "request_consent", "consent_type": "pii", "data_types": types}),
                )
            }
            ErrorCode::MissingField => e
                .field
                .as_ref()
                .map(|f| json!({"action": "retry", "fix": format!("Add the {f} field")})),
            ErrorCode::Version => {
                Some(json!({"action": "downgrade", "supported_versions": [VERSION]}))
            }
            _ => None,
        };
        Self {
            code: e.code,
            message: e.message.clone(),
            field: e.field.clone(),
            recoverable: e.code.recoverable(),
            suggestion: suggestion.and_then(|s| s.as_object().cloned()),
            detected_pii: e.detected_pii.clone(),
        }
    }
}

/// The `id` of a message that was refused, if its bytes hold one, to use as
/// the error reply's `re`.
pub fn salvage_id(bytes: &[u8]) -> Option<String> {
    let value: Value = serde_json::from_slice(bytes).ok()?;
    let message = value.get("message").unwrap_or(&value);
    message.get("id")?.as_str().map(str::to_owned)
}

// ---------------------------------------------------------------------------
// Envelopes and batches

/// The transport wrapper around a message.
#[derive(Debug, Clone, PartialEq)]
pub enum Envelope {
    /// `encrypted: false`: the message travels as JSON.
    Plain(Box<Message>),
    Encrypted(EncryptedEnvelope),
}

/// An encrypted envelope, checked for shape; [`crypto::open`] decrypts it
/// with the keys of the session it names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EncryptedEnvelope {
    pub algorithm: String,
    /// Raw X25519 public key of the sender.
    pub sender_public: [u8; 32],
    /// XSalsa20's 24-byte nonce.
    pub nonce: [u8; 24],
    /// `envelope.session`: the id of the verified session whose keys sealed
    /// it (the registry reads only envelopes of its sessions).
    pub session: Option<String>,
    pub ciphertext: Vec<u8>,
}

/// The only encryption algorithm the spec names.
pub const ENCRYPTION_ALGORITHM: &str = "x25519-xsalsa20-poly1305";

/// What a message endpoint receives: a bare message or an envelope (told
/// apart by the envelope's `moltspeak` key).
#[derive(Debug, Clone, PartialEq)]
pub enum Transmission {
    Message(Box<Message>),
    Envelope(Envelope),
}

impl Transmission {
    /// Parses at most [`MAX_MESSAGE_BYTES`].
    pub fn from_slice(bytes: &[u8]) -> Result<Self, MoltError> {
        check_size(bytes.len(), MAX_MESSAGE_BYTES, "message")?;
        Self::from_value(parse_json(bytes)?)
    }

    pub fn from_value(value: Value) -> Result<Self, MoltError> {
        if value.get("moltspeak").is_some() {
            parse_envelope(value).map(Self::Envelope)
        } else {
            Message::from_value(value).map(|m| Self::Message(Box::new(m)))
        }
    }

    /// Parses and applies [`Message::check`] at `now_ms` to the plain
    /// message carried; an encrypted envelope is checked for shape only.
    pub fn validate(bytes: &[u8], now_ms: u64) -> Result<Self, MoltError> {
        let transmission = Self::from_slice(bytes)?;
        if let Some(message) = transmission.message() {
            message.check(now_ms)?;
        }
        Ok(transmission)
    }

    /// The plain message carried, if any.
    pub fn message(&self) -> Option<&Message> {
        match self {
            Self::Message(m) | Self::Envelope(Envelope::Plain(m)) => Some(m),
            Self::Envelope(Envelope::Encrypted(_)) => None,
        }
    }
}

/// Messages one batch may hold. The spec bounds a batch's bytes
/// ([`MAX_BATCH_BYTES`]); this bounds the work one batch asks of a receiver
/// (ten megabytes of `0,` would otherwise be five million items).
pub const MAX_BATCH_ITEMS: usize = 100;

/// Why a batch could not be split into its items.
#[derive(Debug, Clone, PartialEq)]
pub enum BatchError {
    /// More than the given number of items; counting stopped there.
    TooMany { limit: usize },
    /// Not JSON, or not an array.
    Invalid(MoltError),
}

/// The raw items of a batch (a JSON array), without parsing them: at most
/// `max` of them, refused as soon as one more is seen, so a huge array costs
/// no more memory than `max` items.
pub fn batch_items(bytes: &[u8], max: usize) -> Result<Vec<&RawValue>, BatchError> {
    struct Items<'c> {
        max: usize,
        overflow: &'c std::cell::Cell<bool>,
    }
    impl<'de> serde::de::Visitor<'de> for Items<'_> {
        type Value = Vec<&'de RawValue>;
        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("a JSON array")
        }
        fn visit_seq<A: serde::de::SeqAccess<'de>>(
            self,
            mut seq: A,
        ) -> Result<Self::Value, A::Error> {
            let mut items = Vec::new();
            while let Some(item) = seq.next_element::<&'de RawValue>()? {
                if items.len() == self.max {
                    self.overflow.set(true);
                    return Err(serde::de::Error::custom("too many items"));
                }
                items.push(item);
            }
            Ok(items)
        }
    }
    let overflow = std::cell::Cell::new(false);
    let mut de = serde_json::Deserializer::from_slice(bytes);
    let items = serde::Deserializer::deserialize_seq(
        &mut de,
        Items {
            max,
            overflow: &overflow,
        },
    )
    .and_then(|items| de.end().map(|()| items));
    items.map_err(|e| {
        if overflow.get() {
            BatchError::TooMany { limit: max }
        } else if e.is_data() {
            BatchError::Invalid(MoltError::new(
                ErrorCode::Schema,
                "a batch must be a JSON array",
                None,
            ))
        } else {
            BatchError::Invalid(MoltError::new(
                ErrorCode::Parse,
                format!("not valid JSON: {e}"),
                None,
            ))
        }
    })
}

/// Parses a batch (a JSON array of messages or envelopes) of at most
/// [`MAX_BATCH_BYTES`] and [`MAX_BATCH_ITEMS`]. The batch as a whole fails
/// only when it is too large or not an array; each item succeeds or fails on
/// its own, and an item over [`MAX_MESSAGE_BYTES`] fails without being
/// parsed further.
pub fn parse_batch(bytes: &[u8]) -> Result<Vec<Result<Transmission, MoltError>>, MoltError> {
    check_size(bytes.len(), MAX_BATCH_BYTES, "batch")?;
    let items = batch_items(bytes, MAX_BATCH_ITEMS).map_err(|e| match e {
        BatchError::TooMany { limit } => MoltError::new(
            ErrorCode::InvalidParam,
            format!("a batch holds at most {limit} messages"),
            None,
        ),
        BatchError::Invalid(e) => e,
    })?;
    Ok(items
        .into_iter()
        .map(|item| Transmission::from_slice(item.get().as_bytes()))
        .collect())
}

fn parse_envelope(value: Value) -> Result<Envelope, MoltError> {
    let Value::Object(mut m) = value else {
        return Err(MoltError::new(
            ErrorCode::Schema,
            "an envelope must be a JSON object",
            None,
        ));
    };
    match m.get("moltspeak") {
        Some(Value::String(v)) if v == VERSION => {}
        Some(Value::String(v)) => {
            return Err(MoltError::new(
                ErrorCode::Version,
                format!("version {v:?} is not supported; this receiver speaks MoltSpeak {VERSION}"),
                Some("moltspeak"),
            ));
        }
        _ => return Err(MoltError::schema("moltspeak", "must be a string")),
    }
    let Some(Value::Object(env)) = m.get("envelope") else {
        return Err(match m.get("envelope") {
            None => MoltError::missing("envelope"),
            Some(_) => MoltError::schema("envelope", "must be an object"),
        });
    };
    let encrypted = match env.get("encrypted") {
        Some(Value::Bool(b)) => *b,
        None => return Err(MoltError::missing("envelope.encrypted")),
        Some(_) => return Err(MoltError::schema("envelope.encrypted", "must be a boolean")),
    };
    let env_str = |key: &str| -> Result<Option<&str>, MoltError> {
        match env.get(key) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s)),
            Some(_) => Err(MoltError::schema(
                &format!("envelope.{key}"),
                "must be a string",
            )),
        }
    };
    if !encrypted {
        if let Some(key) = m
            .keys()
            .find(|k| !matches!(k.as_str(), "moltspeak" | "envelope" | "message"))
        {
            return Err(MoltError::schema(key, "unknown field in a plain envelope"));
        }
        if let Some(key) = env
            .keys()
            .find(|k| !matches!(k.as_str(), "encrypted" | "compressed" | "encoding"))
        {
            return Err(MoltError::schema(
                &format!("envelope.{key}"),
                "unknown field",
            ));
        }
        match env.get("compressed") {
            None | Some(Value::Bool(false)) => {}
            Some(Value::Bool(true)) => {
                return Err(MoltError::invalid(
                    "envelope.compressed",
                    "compressed envelopes are not supported",
                ));
            }
            Some(_) => {
                return Err(MoltError::schema(
                    "envelope.compressed",
                    "must be a boolean",
                ));
            }
        }
        if let Some(encoding) = env_str("encoding")?
            && !encoding.eq_ignore_ascii_case("utf-8")
        {
            return Err(MoltError::invalid(
                "envelope.encoding",
                "only utf-8 is supported",
            ));
        }
        let message = m
            .remove("message")
            .ok_or_else(|| MoltError::missing("message"))?;
        return Message::from_value(message)
            .map(|m| Envelope::Plain(Box::new(m)))
            .map_err(|e| MoltError {
                field: Some(match &e.field {
                    Some(f) => format!("message.{f}"),
                    None => "message".into(),
                }),
                ..e
            });
    }
    if let Some(key) = m
        .keys()
        .find(|k| !matches!(k.as_str(), "moltspeak" | "envelope" | "ciphertext"))
    {
        return Err(MoltError::schema(
            key,
            "unknown field in an encrypted envelope",
        ));
    }
    let algorithm =
        env_str("algorithm")?.ok_or_else(|| MoltError::missing("envelope.algorithm"))?;
    if algorithm != ENCRYPTION_ALGORITHM {
        return Err(MoltError::invalid(
            "envelope.algorithm",
            format!("unsupported algorithm {algorithm:?}; expected {ENCRYPTION_ALGORITHM}"),
        ));
    }
    let sender_public = env_str("sender_public")?
        .ok_or_else(|| MoltError::missing("envelope.sender_public"))
        .and_then(|s| {
            decode_prefixed::<32>(s, "x25519:")
                .map_err(|e| MoltError::invalid("envelope.sender_public", e))
        })?;
    let nonce = env_str("nonce")?
        .ok_or_else(|| MoltError::missing("envelope.nonce"))
        .and_then(|s| {
            decode_prefixed::<24>(s, "base64:").map_err(|e| MoltError::invalid("envelope.nonce", e))
        })?;
    let ciphertext = match m.get("ciphertext") {
        None => return Err(MoltError::missing("ciphertext")),
        Some(Value::String(s)) => s
            .strip_prefix("base64:")
            .and_then(|b| B64_LENIENT.decode(b).ok())
            .ok_or_else(|| {
                MoltError::invalid("ciphertext", "must be base64: followed by standard base64")
            })?,
        Some(_) => return Err(MoltError::schema("ciphertext", "must be a string")),
    };
    let session = env_str("session")?
        .map(|s| {
            if s.is_empty() || s.len() > 128 {
                Err(MoltError::invalid(
                    "envelope.session",
                    "must be a session id of 1 to 128 characters",
                ))
            } else {
                Ok(s.to_owned())
            }
        })
        .transpose()?;
    Ok(Envelope::Encrypted(EncryptedEnvelope {
        algorithm: algorithm.to_owned(),
        sender_public,
        nonce,
        session,
        ciphertext,
    }))
}

// ---------------------------------------------------------------------------
// Parsing

fn check_size(len: usize, limit: usize, what: &str) -> Result<(), MoltError> {
    if len > limit {
        return Err(MoltError::new(
            ErrorCode::Schema,
            format!("{what} is {len} bytes; the limit is {limit}"),
            None,
        ));
    }
    Ok(())
}

fn parse_json(bytes: &[u8]) -> Result<Value, MoltError> {
    // Duplicate keys would let signer and reader see different messages.
    canonical::from_slice_strict(bytes)
        .map_err(|e| MoltError::new(ErrorCode::Parse, format!("not valid JSON: {e}"), None))
}

fn parse_message(raw: Map<String, Value>) -> Result<Message, MoltError> {
    match raw.get("v") {
        Some(Value::String(v)) if v == VERSION => {}
        Some(Value::String(v)) => {
            return Err(MoltError::new(
                ErrorCode::Version,
                format!("version {v:?} is not supported; this receiver speaks MoltSpeak {VERSION}"),
                Some("v"),
            ));
        }
        Some(_) => return Err(MoltError::schema("v", "must be a string")),
        None => return Err(MoltError::missing("v")),
    }
    if let Some(key) = raw.keys().find(|k| !TOP_LEVEL_KEYS.contains(&k.as_str())) {
        return Err(MoltError::schema(
            key,
            "unknown field (extensions belong under ext)",
        ));
    }
    let id = non_empty(required_str(&raw, "id")?, "id")?.to_owned();
    let ts = optional_u64(&raw, "ts")?;
    let op_name = required_str(&raw, "op")?;
    let op = Op::ALL
        .into_iter()
        .find(|o| o.as_str() == op_name)
        .ok_or_else(|| MoltError::invalid("op", format!("unknown operation {op_name:?}")))?;
    let from = raw
        .get("from")
        .map(|v| parse_party(v, "from"))
        .transpose()?;
    if op == Op::Hello && from.is_none() {
        return Err(MoltError::new(
            ErrorCode::MissingField,
            "hello must carry the sender's identity",
            Some("from"),
        ));
    }
    let to = raw.get("to").map(|v| parse_party(v, "to")).transpose()?;
    match raw.get("p") {
        Some(Value::Object(_)) => {}
        Some(_) => return Err(MoltError::schema("p", "must be an object")),
        None => return Err(MoltError::missing("p")),
    }
    let cls_name = required_str(&raw, "cls")?;
    let cls = Classification::parse(cls_name).ok_or_else(|| {
        MoltError::invalid(
            "cls",
            format!("unknown classification {cls_name:?}; expected pub, int, conf, pii or sec"),
        )
    })?;
    let sig = match raw.get("sig") {
        None => None,
        Some(Value::String(s)) => {
            let bytes = decode_prefixed::<64>(s, "ed25519:")
                .map_err(|e| MoltError::new(ErrorCode::Signature, e, Some("sig")))?;
            Some(Signature::from_bytes(&bytes))
        }
        Some(_) => return Err(MoltError::schema("sig", "must be a string")),
    };
    match raw.get("enc") {
        None | Some(Value::Object(_)) => {}
        Some(_) => return Err(MoltError::schema("enc", "must be an object")),
    }
    let re = match raw.get("re") {
        None => None,
        Some(Value::String(s)) => Some(non_empty(s, "re")?.to_owned()),
        Some(_) => return Err(MoltError::schema("re", "must be a string (a message id)")),
    };
    if op.is_response() && re.is_none() {
        return Err(MoltError::new(
            ErrorCode::MissingField,
            format!("{op} must reference the message it answers"),
            Some("re"),
        ));
    }
    let exp = optional_u64(&raw, "exp")?;
    let cap = match raw.get("cap") {
        None => Vec::new(),
        Some(v) => string_array(v, "cap")?,
    };
    if let Some((i, _)) = cap.iter().enumerate().find(|(_, c)| c.is_empty()) {
        return Err(MoltError::invalid(
            &format!("cap[{i}]"),
            "a capability cannot be empty",
        ));
    }
    let pii_meta = raw.get("pii_meta").map(parse_pii_meta).transpose()?;
    match raw.get("ext") {
        None => {}
        Some(Value::Object(ext)) => {
            if let Some(name) = ext.keys().find(|k| !is_namespaced(k)) {
                return Err(MoltError::invalid(
                    &format!("ext.{name}"),
                    "extensions must be namespaced as {org}.{extension}",
                ));
            }
        }
        Some(_) => return Err(MoltError::schema("ext", "must be an object")),
    }
    Ok(Message {
        raw,
        id,
        ts,
        op,
        from,
        to,
        cls,
        sig,
        re,
        exp,
        cap,
        pii_meta,
    })
}

/// `{org}.{extension}`: two non-empty parts of letters, digits, `-` and `_`
/// (the extension may itself hold dots).
fn is_namespaced(name: &str) -> bool {
    let part_ok = |p: &str| {
        !p.is_empty()
            && p.chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
    };
    match name.split_once('.') {
        Some((org, ext)) => part_ok(org) && ext.split('.').all(part_ok),
        None => false,
    }
}

fn required_str<'a>(m: &'a Map<String, Value>, key: &str) -> Result<&'a str, MoltError> {
    match m.get(key) {
        Some(Value::String(s)) => Ok(s),
        Some(_) => Err(MoltError::schema(key, "must be a string")),
        None => Err(MoltError::missing(key)),
    }
}

fn non_empty<'a>(s: &'a str, field: &str) -> Result<&'a str, MoltError> {
    if s.is_empty() {
        return Err(MoltError::invalid(field, "cannot be empty"));
    }
    Ok(s)
}

fn optional_u64(m: &Map<String, Value>, key: &str) -> Result<Option<u64>, MoltError> {
    match m.get(key) {
        None => Ok(None),
        Some(Value::Number(n)) => n.as_u64().map(Some).ok_or_else(|| {
            MoltError::invalid(key, "must be a non-negative integer (Unix milliseconds)")
        }),
        Some(_) => Err(MoltError::schema(
            key,
            "must be an integer (Unix milliseconds)",
        )),
    }
}

fn string_array(v: &Value, field: &str) -> Result<Vec<String>, MoltError> {
    let Value::Array(items) = v else {
        return Err(MoltError::schema(field, "must be an array of strings"));
    };
    items
        .iter()
        .enumerate()
        .map(|(i, item)| {
            item.as_str()
                .map(str::to_owned)
                .ok_or_else(|| MoltError::schema(&format!("{field}[{i}]"), "must be a string"))
        })
        .collect()
}

fn parse_party(v: &Value, field: &str) -> Result<Party, MoltError> {
    let Value::Object(m) = v else {
        return Err(MoltError::schema(field, "must be an object"));
    };
    if let Some(key) = m
        .keys()
        .find(|k| !matches!(k.as_str(), "agent" | "org" | "key" | "enc_key"))
    {
        return Err(MoltError::schema(
            &format!("{field}.{key}"),
            "unknown field",
        ));
    }
    let path = |k: &str| format!("{field}.{k}");
    let string = |k: &str| -> Result<Option<&str>, MoltError> {
        match m.get(k) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s)),
            Some(_) => Err(MoltError::schema(&path(k), "must be a string")),
        }
    };
    let agent = string("agent")?.ok_or_else(|| MoltError::missing(&path("agent")))?;
    non_empty(agent, &path("agent"))?;
    let key = string("key")?
        .map(|k| PublicKey::parse(k).map_err(|e| MoltError::invalid(&path("key"), e.to_string())))
        .transpose()?;
    let enc_key = string("enc_key")?
        .map(|k| {
            EncryptionKey::parse(k).map_err(|e| MoltError::invalid(&path("enc_key"), e.to_string()))
        })
        .transpose()?;
    Ok(Party {
        agent: agent.to_owned(),
        org: string("org")?.map(str::to_owned),
        key,
        enc_key,
    })
}

fn parse_pii_meta(v: &Value) -> Result<PiiMeta, MoltError> {
    let Value::Object(m) = v else {
        return Err(MoltError::schema("pii_meta", "must be an object"));
    };
    if let Some(key) = m
        .keys()
        .find(|k| !matches!(k.as_str(), "types" | "consent" | "mask_fields"))
    {
        return Err(MoltError::schema(
            &format!("pii_meta.{key}"),
            "unknown field",
        ));
    }
    let types = m
        .get("types")
        .map(|t| string_array(t, "pii_meta.types"))
        .transpose()?
        .unwrap_or_default();
    let mask_fields = m
        .get("mask_fields")
        .map(|t| string_array(t, "pii_meta.mask_fields"))
        .transpose()?
        .unwrap_or_default();
    let consent = match m.get("consent") {
        None => None,
        Some(Value::Object(c)) => {
            let s = |k: &str| -> Result<String, MoltError> {
                let field = format!("pii_meta.consent.{k}");
                match c.get(k) {
                    Some(Value::String(s)) => Ok(non_empty(s, &field)?.to_owned()),
                    Some(_) => Err(MoltError::schema(&field, "must be a string")),
                    None => Err(MoltError::missing(&field)),
                }
            };
            let expires = optional_u64(c, "expires")
                .map_err(|e| MoltError {
                    field: Some("pii_meta.consent.expires".into()),
                    ..e
                })?
                .ok_or_else(|| MoltError::missing("pii_meta.consent.expires"))?;
            Some(Consent {
                granted_by: s("granted_by")?,
                purpose: s("purpose")?,
                expires,
                proof: s("proof")?,
            })
        }
        Some(_) => return Err(MoltError::schema("pii_meta.consent", "must be an object")),
    };
    Ok(PiiMeta {
        types,
        consent,
        mask_fields,
    })
}
