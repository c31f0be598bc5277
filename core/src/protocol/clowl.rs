//! CLowl 0.2: typed messages, validation of every rule of the spec, and the
//! spec's E001–E016 error codes.
//!
//! Decisions the spec leaves open, fixed here:
//! - A message is parsed from at most [`MAX_MESSAGE_BYTES`] (the spec sets no
//!   limit; this is MoltSpeak's single-message limit).
//! - Unknown keys at the top level, in `body` and in `ctx` are refused (E001):
//!   a misspelt optional field would otherwise vanish silently.
//! - Only `pid` may be `null` (its type is `string|null`); every other
//!   optional field is either absent or of its type.
//! - Identifiers (`mid`, `from`, `to`, `cid`, `tid`, `pid`) are non-empty
//!   strings. `mid` *should* be a UUIDv7 but the spec's own examples use
//!   `m004` and `caps-001`, so this library accepts any non-empty string;
//!   a receiver that insists (the registry's `/clowl` does) checks
//!   [`Id::is_uuid_v7`].
//! - `to` as an array is a non-empty multicast list of agent ids; `"*"` is only
//!   meaningful alone.
//! - `ctx.inline` counts Unicode scalar values (characters), at most 2000.
//! - `ctx.hash` is accepted as 64 hex digits, optionally prefixed `sha256:`,
//!   in either case; it is written back as 64 lowercase hex digits, the form
//!   the spec's field table describes ("SHA-256 of the content at ref").
//! - `ctx.ref` forms a registry can dereference are read by
//!   [`ContextRef::parse`]; a hash that does not match what `ref` names is
//!   E016 (security: the content was altered), an unreachable `ref` with no
//!   `inline` is E003.
//! - Structural problems are E001 (malformed message); a `clowl` other than
//!   `"0.2"` is E014 (as is a CLowl 0.1 message, recognised by its `cl` key);
//!   problems inside `body.d` that a performative requires (DLGT's
//!   `delegation_mode`, ERR's `code`/`msg`/`retry`, CAPS's `clowl`) are E008,
//!   the code whose fix is "fix body.d".

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value, json};

use crate::digest::Sha256Digest;

/// The protocol version this module speaks.
pub const VERSION: &str = "0.2";
/// The largest message [`Message::from_slice`] accepts, in bytes.
pub const MAX_MESSAGE_BYTES: usize = 1 << 20;
/// The longest `ctx.inline`, in characters.
pub const MAX_INLINE_CHARS: usize = 2000;

// ---------------------------------------------------------------------------
// Error codes

/// The spec's error codes, each with its category and retryable flag.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ErrorCode {
    E001,
    E002,
    E003,
    E004,
    E005,
    E006,
    E007,
    E008,
    E009,
    E010,
    E011,
    E012,
    E013,
    E014,
    E015,
    E016,
}

/// The category column of the spec's error table.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ErrorCategory {
    Parse,
    Auth,
    Context,
    Capacity,
    Task,
    Timeout,
    Dependency,
    Validation,
    Internal,
    Delegation,
    Conflict,
    Budget,
    Cancelled,
    Version,
    Cycle,
    Security,
}

impl ErrorCategory {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Parse => "parse",
            Self::Auth => "auth",
            Self::Context => "context",
            Self::Capacity => "capacity",
            Self::Task => "task",
            Self::Timeout => "timeout",
            Self::Dependency => "dependency",
            Self::Validation => "validation",
            Self::Internal => "internal",
            Self::Delegation => "delegation",
            Self::Conflict => "conflict",
            Self::Budget => "budget",
            Self::Cancelled => "cancelled",
            Self::Version => "version",
            Self::Cycle => "cycle",
            Self::Security => "security",
        }
    }
}

impl fmt::Display for ErrorCategory {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl ErrorCode {
    pub const ALL: [ErrorCode; 16] = [
        Self::E001,
        Self::E002,
        Self::E003,
        Self::E004,
        Self::E005,
        Self::E006,
        Self::E007,
        Self::E008,
        Self::E009,
        Self::E010,
        Self::E011,
        Self::E012,
        Self::E013,
        Self::E014,
        Self::E015,
        Self::E016,
    ];

    pub fn as_str(self) -> &'static str {
        self.row().0
    }

    pub fn category(self) -> ErrorCategory {
        self.row().1
    }

    /// Whether the spec marks the error retryable (possibly after a fix).
    pub fn retryable(self) -> bool {
        self.row().2
    }

    /// The spec's "Meaning" column.
    pub fn meaning(self) -> &'static str {
        self.row().3
    }

    fn row(self) -> (&'static str, ErrorCategory, bool, &'static str) {
        use ErrorCategory as C;
        match self {
            Self::E001 => ("E001", C::Parse, true, "Malformed CLowl message"),
            Self::E002 => ("E002", C::Auth, false, "Sender not authorized"),
            Self::E003 => (
                "E003",
                C::Context,
                true,
                "Referenced context not found or inaccessible",
            ),
            Self::E004 => (
                "E004",
                C::Capacity,
                true,
                "Agent rate-limited or at capacity",
            ),
            Self::E005 => ("E005", C::Task, false, "Unknown task type"),
            Self::E006 => ("E006", C::Timeout, true, "Task exceeded time limit"),
            Self::E007 => (
                "E007",
                C::Dependency,
                true,
                "Required upstream result missing",
            ),
            Self::E008 => ("E008", C::Validation, true, "Task data failed validation"),
            Self::E009 => ("E009", C::Internal, true, "Unexpected internal error"),
            Self::E010 => (
                "E010",
                C::Delegation,
                false,
                "No suitable agent to delegate to",
            ),
            Self::E011 => (
                "E011",
                C::Conflict,
                true,
                "Conflicting concurrent operation",
            ),
            Self::E012 => ("E012", C::Budget, false, "Token or cost budget exceeded"),
            Self::E013 => ("E013", C::Cancelled, false, "Task was aborted via CNCL"),
            Self::E014 => ("E014", C::Version, false, "Incompatible CLowl versions"),
            Self::E015 => ("E015", C::Cycle, false, "Delegation cycle detected"),
            Self::E016 => ("E016", C::Security, false, "Security violation"),
        }
    }
}

impl fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown CLowl error code {0:?} (expected E001 to E016)")]
pub struct UnknownErrorCode(pub String);

impl FromStr for ErrorCode {
    type Err = UnknownErrorCode;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::ALL
            .into_iter()
            .find(|c| c.as_str() == s)
            .ok_or_else(|| UnknownErrorCode(s.to_owned()))
    }
}

impl Serialize for ErrorCode {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for ErrorCode {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

/// Why a message was refused: the E-code to answer with, a one-line message,
/// and the field concerned (`body.d.delegation_mode`), if any.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct ClowlError {
    pub code: ErrorCode,
    pub msg: String,
    pub field: Option<String>,
}

impl fmt::Display for ClowlError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.field {
            Some(field) => write!(f, "{} {}: {}", self.code, field, self.msg),
            None => write!(f, "{} {}", self.code, self.msg),
        }
    }
}

impl ClowlError {
    pub fn new(code: ErrorCode, msg: impl Into<String>, field: Option<&str>) -> Self {
        Self {
            code,
            msg: msg.into(),
            field: field.map(str::to_owned),
        }
    }

    fn malformed(field: &str, msg: impl Into<String>) -> Self {
        Self::new(ErrorCode::E001, msg, Some(field))
    }

    fn bad_data(field: &str, msg: impl Into<String>) -> Self {
        Self::new(ErrorCode::E008, msg, Some(field))
    }

    /// The ERR `body.d` reporting this error; the field, when known, is
    /// named in `msg` since the spec's ERR body has no field of its own.
    pub fn to_error_body(&self) -> ErrorBody {
        let msg = match &self.field {
            Some(field) => format!("{field}: {}", self.msg),
            None => self.msg.clone(),
        };
        ErrorBody {
            code: self.code,
            msg,
            retry: self.code.retryable(),
        }
    }
}

// ---------------------------------------------------------------------------
// Values

/// A non-empty identifier: a message, agent, conversation or trace id.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Id(String);

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("an identifier must be a non-empty string")]
pub struct EmptyId;

impl Id {
    pub fn new(id: impl Into<String>) -> Result<Self, EmptyId> {
        let id = id.into();
        if id.is_empty() {
            return Err(EmptyId);
        }
        Ok(Self(id))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Whether the id is a UUIDv7 in its hyphenated text form (RFC 9562:
    /// version nibble 7, variant bits `10`), the form the spec recommends
    /// for `mid`. Checked by hand: a fixed 36-character layout, and the
    /// core carries no UUID crate for one predicate.
    pub fn is_uuid_v7(&self) -> bool {
        let b = self.0.as_bytes();
        b.len() == 36
            && b.iter().enumerate().all(|(i, c)| match i {
                8 | 13 | 18 | 23 => *c == b'-',
                _ => c.is_ascii_hexdigit(),
            })
            && b[14] == b'7'
            && matches!(b[19], b'8' | b'9' | b'a' | b'b' | b'A' | b'B')
    }
}

impl fmt::Display for Id {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl Serialize for Id {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.0)
    }
}

impl<'de> Deserialize<'de> for Id {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Id::new(String::deserialize(d)?).map_err(serde::de::Error::custom)
    }
}

/// The ten performatives.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Performative {
    Req,
    Inf,
    Ack,
    Err,
    Dlgt,
    Done,
    Cncl,
    Qry,
    Prog,
    Caps,
}

impl Performative {
    pub const ALL: [Performative; 10] = [
        Self::Req,
        Self::Inf,
        Self::Ack,
        Self::Err,
        Self::Dlgt,
        Self::Done,
        Self::Cncl,
        Self::Qry,
        Self::Prog,
        Self::Caps,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Req => "REQ",
            Self::Inf => "INF",
            Self::Ack => "ACK",
            Self::Err => "ERR",
            Self::Dlgt => "DLGT",
            Self::Done => "DONE",
            Self::Cncl => "CNCL",
            Self::Qry => "QRY",
            Self::Prog => "PROG",
            Self::Caps => "CAPS",
        }
    }
}

impl fmt::Display for Performative {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Performative {
    type Err = ClowlError;
    fn from_str(s: &str) -> Result<Self, ClowlError> {
        Self::ALL
            .into_iter()
            .find(|p| p.as_str() == s)
            .ok_or_else(|| {
                ClowlError::malformed(
                    "p",
                    format!("unknown performative {s:?}; expected one of REQ, INF, ACK, ERR, DLGT, DONE, CNCL, QRY, PROG, CAPS"),
                )
            })
    }
}

/// `to`: one agent, everyone (`"*"`), or a multicast list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Recipient {
    Agent(Id),
    Broadcast,
    Multicast(Vec<Id>),
}

impl Recipient {
    fn to_value(&self) -> Value {
        match self {
            Self::Agent(id) => Value::String(id.0.clone()),
            Self::Broadcast => Value::String("*".into()),
            Self::Multicast(ids) => ids.iter().map(|id| Value::String(id.0.clone())).collect(),
        }
    }
}

/// DLGT's `body.d.delegation_mode`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DelegationMode {
    /// Full handoff: the delegate takes full ownership.
    Transfer,
    /// Parallel work: the original agent continues independently.
    Fork,
    /// Helper role: the original agent remains accountable.
    Assist,
}

impl DelegationMode {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Transfer => "transfer",
            Self::Fork => "fork",
            Self::Assist => "assist",
        }
    }
}

/// `body`: a free-form task type and its task-specific data.
#[derive(Debug, Clone, PartialEq)]
pub struct Body {
    pub t: String,
    pub d: Map<String, Value>,
}

impl Body {
    pub fn new(t: impl Into<String>, d: Map<String, Value>) -> Self {
        Self { t: t.into(), d }
    }

    fn to_value(&self) -> Value {
        json!({"t": self.t, "d": self.d})
    }
}

/// The `body.d` of an ERR message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ErrorBody {
    pub code: ErrorCode,
    pub msg: String,
    pub retry: bool,
}

impl ErrorBody {
    pub fn to_body(&self) -> Body {
        let mut d = Map::new();
        d.insert("code".into(), Value::String(self.code.as_str().into()));
        d.insert("msg".into(), Value::String(self.msg.clone()));
        d.insert("retry".into(), Value::Bool(self.retry));
        Body::new("error", d)
    }
}

/// What a message's performative requires of its body, checked once at
/// construction so callers read it without re-validating.
#[derive(Debug, Clone, PartialEq)]
pub enum BodyKind {
    /// Performatives with no rule on `body.d`.
    Free,
    Delegation(DelegationMode),
    Error(ErrorBody),
    /// CAPS: the advertised `supports` list (empty when absent).
    Capabilities(Vec<String>),
}

/// Reads `ctx.hash`: 64 hex digits, optionally prefixed `sha256:`, in
/// either case (the spec does not fix a spelling, so a receiver accepts all).
pub fn parse_ctx_hash(s: &str) -> Result<Sha256Digest, ClowlError> {
    let hex_part = s.strip_prefix(Sha256Digest::PREFIX).unwrap_or(s);
    let mut bytes = [0u8; 32];
    match hex::decode_to_slice(hex_part, &mut bytes) {
        Ok(()) => Ok(Sha256Digest::from_bytes(bytes)),
        Err(_) => Err(ClowlError::malformed(
            "ctx.hash",
            "must be a SHA-256 digest: 64 hex digits, optionally prefixed sha256:",
        )),
    }
}

/// The `ctx` object: a reference, an inline fallback and a content hash.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Context {
    reference: Option<String>,
    inline: Option<String>,
    hash: Option<Sha256Digest>,
}

/// The context a receiver should use, from [`Context::resolve`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ContextContent<'a> {
    /// The content fetched from `ref` (hash-checked when `hash` is set).
    Referenced(&'a [u8]),
    /// The degraded path: `inline`, used because `ref` was unreachable.
    Inline(&'a str),
}

impl Context {
    pub fn new(
        reference: Option<String>,
        inline: Option<String>,
        hash: Option<Sha256Digest>,
    ) -> Result<Self, ClowlError> {
        if let Some(text) = &inline {
            let chars = text.chars().count();
            if chars > MAX_INLINE_CHARS {
                return Err(ClowlError::malformed(
                    "ctx.inline",
                    format!("is {chars} characters; at most {MAX_INLINE_CHARS} are allowed"),
                ));
            }
        }
        Ok(Self {
            reference,
            inline,
            hash,
        })
    }

    pub fn reference(&self) -> Option<&str> {
        self.reference.as_deref()
    }

    pub fn inline(&self) -> Option<&str> {
        self.inline.as_deref()
    }

    pub fn hash(&self) -> Option<&Sha256Digest> {
        self.hash.as_ref()
    }

    /// Applies the spec's ctx rules given what fetching `ref` produced
    /// (`None`: no ref, or unreachable): fetched content must match `hash`
    /// when one is given (else E016: the content was altered); without
    /// content, `inline` is the fallback; with neither, the answer is E003.
    pub fn resolve<'a>(
        &'a self,
        fetched: Option<&'a [u8]>,
    ) -> Result<ContextContent<'a>, ClowlError> {
        if let Some(content) = fetched {
            if let Some(hash) = &self.hash
                && !hash.matches(content)
            {
                return Err(hash_mismatch());
            }
            return Ok(ContextContent::Referenced(content));
        }
        match &self.inline {
            Some(text) => Ok(ContextContent::Inline(text)),
            None => Err(unreachable_without_inline()),
        }
    }

    /// The same rules for a receiver that knows the digest of what `ref`
    /// names without reading its bytes (content-addressed storage):
    /// `held` is that digest, `None` when `ref` is unreachable or absent.
    /// A `hash` that differs is E016; an unreachable `ref` falls back to
    /// `inline`, or is E003 without one. No `ref` and no `inline`: nothing.
    pub fn check_held(&self, held: Option<&Sha256Digest>) -> Result<ContextUse<'_>, ClowlError> {
        match (&self.reference, held) {
            (Some(_), Some(digest)) => match &self.hash {
                Some(hash) if hash != digest => Err(hash_mismatch()),
                _ => Ok(ContextUse::Referenced),
            },
            (reference, None) => match (&self.inline, reference) {
                (Some(text), _) => Ok(ContextUse::Inline(text)),
                (None, Some(_)) => Err(unreachable_without_inline()),
                (None, None) => Ok(ContextUse::Nothing),
            },
            (None, Some(_)) => match &self.inline {
                Some(text) => Ok(ContextUse::Inline(text)),
                None => Ok(ContextUse::Nothing),
            },
        }
    }

    fn to_value(&self) -> Value {
        json!({
            "ref": self.reference,
            "inline": self.inline,
            "hash": self.hash.map(|h| h.to_hex()),
        })
    }
}

fn hash_mismatch() -> ClowlError {
    ClowlError::new(
        ErrorCode::E016,
        "the content ctx.ref names does not match ctx.hash",
        Some("ctx.hash"),
    )
}

fn unreachable_without_inline() -> ClowlError {
    ClowlError::new(
        ErrorCode::E003,
        "ctx.ref is unreachable and ctx.inline is null",
        Some("ctx"),
    )
}

/// What [`Context::check_held`] decided the receiver uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ContextUse<'a> {
    /// `ref` named content the receiver holds (and `hash`, if any, matched).
    Referenced,
    /// The degraded path: `inline`, because `ref` was absent or unreachable.
    Inline(&'a str),
    /// Neither a reachable `ref` nor `inline`, and no `ref` was asked for.
    Nothing,
}

/// A `ctx.ref` a registry can dereference without fetching anything
/// foreign. Forms: `agentlang:<kind>/<name>` (a package),
/// `agentlang:<kind>/<name>@<version>` (a version), `sha256:<64 hex>` (a
/// blob held by digest), and the registry's own URLs
/// `<base>/api/v1/<kinds>/<name>[/<version>]`. Anything else (another
/// host's URL, a file path) is [`ContextRef::Foreign`]: unreachable.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ContextRef {
    Package(crate::Kind, crate::PackageName),
    Version(crate::Kind, crate::PackageName, crate::Version),
    Blob(Sha256Digest),
    Foreign,
}

impl ContextRef {
    /// The prefix of the registry's own ref scheme.
    pub const SCHEME: &'static str = "agentlang:";

    /// Reads `reference`; `base` is the receiver's public URL (no trailing
    /// slash needed), whose `/api/v1/` URLs count as its own. A ref of one
    /// of the forms whose name or version cannot be one is `Foreign` too:
    /// it names nothing the registry could hold.
    pub fn parse(reference: &str, base: &str) -> Self {
        if let Some(hex_part) = reference.strip_prefix(Sha256Digest::PREFIX) {
            let mut bytes = [0u8; 32];
            return match hex::decode_to_slice(hex_part, &mut bytes) {
                Ok(()) => Self::Blob(Sha256Digest::from_bytes(bytes)),
                Err(_) => Self::Foreign,
            };
        }
        if let Some(rest) = reference.strip_prefix(Self::SCHEME) {
            let Some((kind, rest)) = rest.split_once('/') else {
                return Self::Foreign;
            };
            let Ok(kind) = kind.parse::<crate::Kind>() else {
                return Self::Foreign;
            };
            let (name, version) = match rest.split_once('@') {
                Some((name, version)) => (name, Some(version)),
                None => (rest, None),
            };
            return Self::named(kind, name, version);
        }
        let base = base.trim_end_matches('/');
        if let Some(path) = reference
            .strip_prefix(base)
            .and_then(|p| p.strip_prefix("/api/v1/"))
        {
            let segments: Vec<&str> = path.split('/').collect();
            let (kinds, name, version) = match segments.as_slice() {
                [kinds, name] => (*kinds, *name, None),
                [kinds, name, version] => (*kinds, *name, Some(*version)),
                _ => return Self::Foreign,
            };
            let Some(kind) = crate::Kind::ALL.into_iter().find(|k| k.plural() == kinds) else {
                return Self::Foreign;
            };
            return Self::named(kind, name, version);
        }
        Self::Foreign
    }

    fn named(kind: crate::Kind, name: &str, version: Option<&str>) -> Self {
        let Ok(name) = crate::PackageName::new(name) else {
            return Self::Foreign;
        };
        match version {
            None => Self::Package(kind, name),
            Some(v) => match crate::Version::parse(v) {
                Ok(v) => Self::Version(kind, name, v),
                Err(_) => Self::Foreign,
            },
        }
    }
}

// ---------------------------------------------------------------------------
// Messages

/// Everything a message is made of, for [`Message::new`]; the version is
/// implied.
#[derive(Debug, Clone, PartialEq)]
pub struct MessageParts {
    pub mid: Id,
    /// Unix time in seconds.
    pub ts: u64,
    pub tid: Option<Id>,
    pub pid: Option<Id>,
    pub p: Performative,
    pub from: Id,
    pub to: Recipient,
    pub cid: Id,
    pub body: Body,
    pub ctx: Option<Context>,
    pub auth: Option<String>,
    pub det: Option<bool>,
}

/// A valid CLowl 0.2 message. Built only through [`Message::new`], the
/// parsers and the reply constructors, all of which check every rule.
#[derive(Debug, Clone, PartialEq)]
pub struct Message {
    parts: MessageParts,
    kind: BodyKind,
}

impl Message {
    /// Checks the rules that tie the body to the performative.
    pub fn new(parts: MessageParts) -> Result<Self, ClowlError> {
        if let Recipient::Multicast(ids) = &parts.to {
            if ids.is_empty() {
                return Err(ClowlError::malformed(
                    "to",
                    "a multicast list needs at least one agent",
                ));
            }
            if let Some(i) = ids.iter().position(|id| id.as_str() == "*") {
                return Err(ClowlError::malformed(
                    &format!("to[{i}]"),
                    "\"*\" means broadcast and must stand alone, not inside a list",
                ));
            }
        }
        if let Recipient::Agent(id) = &parts.to
            && id.as_str() == "*"
        {
            // Normalised below: "*" is always Broadcast.
            return Self::new(MessageParts {
                to: Recipient::Broadcast,
                ..parts
            });
        }
        let kind = body_kind(parts.p, &parts.body.d)?;
        Ok(Self { parts, kind })
    }

    /// Parses and validates at most [`MAX_MESSAGE_BYTES`].
    pub fn from_slice(bytes: &[u8]) -> Result<Self, ClowlError> {
        Self::from_slice_with_limit(bytes, MAX_MESSAGE_BYTES)
    }

    pub fn from_slice_with_limit(bytes: &[u8], max_bytes: usize) -> Result<Self, ClowlError> {
        Self::from_value(parse_bounded(bytes, max_bytes)?)
    }

    /// Validates an already-parsed JSON value.
    pub fn from_value(value: Value) -> Result<Self, ClowlError> {
        let Value::Object(map) = value else {
            return Err(ClowlError::new(
                ErrorCode::E001,
                "a CLowl message must be a JSON object",
                None,
            ));
        };
        parse_message(&map)
    }

    /// The wire form, fields in the spec's order.
    pub fn to_value(&self) -> Value {
        let p = &self.parts;
        let mut m = Map::new();
        m.insert("clowl".into(), VERSION.into());
        m.insert("mid".into(), p.mid.0.clone().into());
        m.insert("ts".into(), p.ts.into());
        if let Some(tid) = &p.tid {
            m.insert("tid".into(), tid.0.clone().into());
        }
        if let Some(pid) = &p.pid {
            m.insert("pid".into(), pid.0.clone().into());
        }
        m.insert("p".into(), p.p.as_str().into());
        m.insert("from".into(), p.from.0.clone().into());
        m.insert("to".into(), p.to.to_value());
        m.insert("cid".into(), p.cid.0.clone().into());
        m.insert("body".into(), p.body.to_value());
        if let Some(ctx) = &p.ctx {
            m.insert("ctx".into(), ctx.to_value());
        }
        if let Some(auth) = &p.auth {
            m.insert("auth".into(), auth.clone().into());
        }
        if let Some(det) = p.det {
            m.insert("det".into(), det.into());
        }
        Value::Object(m)
    }

    pub fn to_vec(&self) -> Vec<u8> {
        // Serializing a Value cannot fail: keys are strings, numbers finite.
        serde_json::to_vec(&self.to_value()).unwrap_or_default()
    }

    /// A reply to `req`: `pid` is the request's `mid`, `cid` and `tid` are
    /// the request's, and it goes back to the request's sender.
    pub fn reply(
        req: &Message,
        p: Performative,
        from: Id,
        body: Body,
        mid: Id,
        ts: u64,
    ) -> Result<Self, ClowlError> {
        Self::new(MessageParts {
            mid,
            ts,
            tid: req.parts.tid.clone(),
            pid: Some(req.parts.mid.clone()),
            p,
            from,
            to: Recipient::Agent(req.parts.from.clone()),
            cid: req.parts.cid.clone(),
            body,
            ctx: None,
            auth: None,
            det: None,
        })
    }

    /// An ERR reply to `req`; `retry` is the code's retryable flag.
    pub fn error(
        req: &Message,
        from: Id,
        code: ErrorCode,
        msg: impl Into<String>,
        mid: Id,
        ts: u64,
    ) -> Self {
        let body = ErrorBody {
            code,
            msg: msg.into(),
            retry: code.retryable(),
        };
        Self::from_parts_unchecked(
            MessageParts {
                mid,
                ts,
                tid: req.parts.tid.clone(),
                pid: Some(req.parts.mid.clone()),
                p: Performative::Err,
                from,
                to: Recipient::Agent(req.parts.from.clone()),
                cid: req.parts.cid.clone(),
                body: body.to_body(),
                ctx: None,
                auth: None,
                det: None,
            },
            BodyKind::Error(body),
        )
    }

    /// An ERR answer to bytes that did not parse. Whatever usable `mid`,
    /// `cid`, `tid` and `from` the bytes hold are kept so the sender can
    /// thread the answer; without a sender it is broadcast, and without a
    /// `cid` it opens a conversation named by its own `mid`.
    pub fn error_for_rejected(raw: &[u8], error: &ClowlError, from: Id, mid: Id, ts: u64) -> Self {
        let salvaged = serde_json::from_slice::<Value>(raw).ok();
        let field = |key: &str| {
            salvaged
                .as_ref()
                .and_then(|v| v.get(key))
                .and_then(Value::as_str)
                .and_then(|s| Id::new(s).ok())
        };
        let error_body = error.to_error_body();
        let body = error_body.to_body();
        let kind = BodyKind::Error(error_body);
        Self::from_parts_unchecked(
            MessageParts {
                tid: field("tid"),
                pid: field("mid"),
                p: Performative::Err,
                to: field("from").map_or(Recipient::Broadcast, Recipient::Agent),
                cid: field("cid").unwrap_or_else(|| mid.clone()),
                mid,
                ts,
                from,
                body,
                ctx: None,
                auth: None,
                det: None,
            },
            kind,
        )
    }

    /// The CAPS message an agent sends on connection, in the spec's shape:
    /// to `"*"`, conversation `system`, task `capabilities`.
    pub fn caps(from: Id, supports: Vec<String>, mid: Id, ts: u64) -> Self {
        let mut d = Map::new();
        d.insert(
            "supports".into(),
            supports.iter().cloned().map(Value::String).collect(),
        );
        d.insert("clowl".into(), VERSION.into());
        Self::from_parts_unchecked(
            MessageParts {
                mid,
                ts,
                tid: None,
                pid: None,
                p: Performative::Caps,
                from,
                to: Recipient::Broadcast,
                cid: Id("system".into()),
                body: Body::new("capabilities", d),
                ctx: None,
                auth: None,
                det: None,
            },
            BodyKind::Capabilities(supports),
        )
    }

    /// For constructors whose body is valid by construction.
    fn from_parts_unchecked(parts: MessageParts, kind: BodyKind) -> Self {
        debug_assert_eq!(body_kind(parts.p, &parts.body.d).as_ref(), Ok(&kind));
        Self { parts, kind }
    }

    pub fn mid(&self) -> &Id {
        &self.parts.mid
    }
    pub fn ts(&self) -> u64 {
        self.parts.ts
    }
    pub fn tid(&self) -> Option<&Id> {
        self.parts.tid.as_ref()
    }
    pub fn pid(&self) -> Option<&Id> {
        self.parts.pid.as_ref()
    }
    pub fn performative(&self) -> Performative {
        self.parts.p
    }
    pub fn from(&self) -> &Id {
        &self.parts.from
    }
    pub fn to(&self) -> &Recipient {
        &self.parts.to
    }
    pub fn cid(&self) -> &Id {
        &self.parts.cid
    }
    pub fn body(&self) -> &Body {
        &self.parts.body
    }
    pub fn body_kind(&self) -> &BodyKind {
        &self.kind
    }
    pub fn ctx(&self) -> Option<&Context> {
        self.parts.ctx.as_ref()
    }
    pub fn auth(&self) -> Option<&str> {
        self.parts.auth.as_deref()
    }
    pub fn det(&self) -> Option<bool> {
        self.parts.det
    }
    pub fn parts(&self) -> &MessageParts {
        &self.parts
    }
    pub fn into_parts(self) -> MessageParts {
        self.parts
    }
}

impl Serialize for Message {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.to_value().serialize(s)
    }
}

impl<'de> Deserialize<'de> for Message {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Message::from_value(Value::deserialize(d)?).map_err(serde::de::Error::custom)
    }
}

// ---------------------------------------------------------------------------
// Parsing

fn parse_bounded(bytes: &[u8], max_bytes: usize) -> Result<Value, ClowlError> {
    if bytes.len() > max_bytes {
        return Err(ClowlError::new(
            ErrorCode::E001,
            format!(
                "message is {} bytes; at most {max_bytes} are accepted",
                bytes.len()
            ),
            None,
        ));
    }
    // Duplicate keys are refused: receivers must agree on what was sent.
    super::canonical::from_slice_strict(bytes)
        .map_err(|e| ClowlError::new(ErrorCode::E001, format!("not valid JSON: {e}"), None))
}

const TOP_LEVEL_KEYS: [&str; 13] = [
    "clowl", "mid", "ts", "tid", "pid", "p", "from", "to", "cid", "body", "ctx", "auth", "det",
];

fn parse_message(m: &Map<String, Value>) -> Result<Message, ClowlError> {
    // The version decides the schema, so it is checked first.
    match m.get("clowl") {
        Some(Value::String(v)) if v == VERSION => {}
        Some(Value::String(v)) => {
            return Err(ClowlError::new(
                ErrorCode::E014,
                format!("version {v:?} is not supported; this receiver speaks CLowl {VERSION}"),
                Some("clowl"),
            ));
        }
        Some(_) => return Err(ClowlError::malformed("clowl", "must be a string")),
        None if m.contains_key("cl") => {
            return Err(ClowlError::new(
                ErrorCode::E014,
                format!("a CLowl 0.1 message (\"cl\"); this receiver speaks CLowl {VERSION}"),
                Some("cl"),
            ));
        }
        None => return Err(missing("clowl")),
    }
    if let Some(key) = m.keys().find(|k| !TOP_LEVEL_KEYS.contains(&k.as_str())) {
        return Err(ClowlError::malformed(key, "unknown field"));
    }

    let mid = required_id(m, "mid")?;
    let ts = match required(m, "ts")? {
        Value::Number(n) => n.as_u64().ok_or_else(|| {
            ClowlError::malformed("ts", "must be a non-negative integer (Unix seconds)")
        })?,
        _ => {
            return Err(ClowlError::malformed(
                "ts",
                "must be an integer (Unix seconds)",
            ));
        }
    };
    let tid = optional_id(m, "tid")?;
    let pid = match m.get("pid") {
        None | Some(Value::Null) => None,
        Some(_) => Some(required_id(m, "pid")?),
    };
    let p: Performative = required_str(m, "p")?.parse()?;
    let from = required_id(m, "from")?;
    let to = parse_recipient(required(m, "to")?)?;
    let cid = required_id(m, "cid")?;
    let body = parse_body(required(m, "body")?)?;
    let ctx = m.get("ctx").map(parse_ctx).transpose()?;
    let auth = match m.get("auth") {
        None => None,
        Some(Value::String(s)) => Some(s.clone()),
        Some(_) => return Err(ClowlError::malformed("auth", "must be a string")),
    };
    let det = match m.get("det") {
        None => None,
        Some(Value::Bool(b)) => Some(*b),
        Some(_) => return Err(ClowlError::malformed("det", "must be a boolean")),
    };
    Message::new(MessageParts {
        mid,
        ts,
        tid,
        pid,
        p,
        from,
        to,
        cid,
        body,
        ctx,
        auth,
        det,
    })
}

fn missing(field: &str) -> ClowlError {
    ClowlError::malformed(field, "required field is missing")
}

fn required<'a>(m: &'a Map<String, Value>, key: &str) -> Result<&'a Value, ClowlError> {
    m.get(key).ok_or_else(|| missing(key))
}

fn required_str<'a>(m: &'a Map<String, Value>, key: &str) -> Result<&'a str, ClowlError> {
    required(m, key)?
        .as_str()
        .ok_or_else(|| ClowlError::malformed(key, "must be a string"))
}

fn id_at(value: &Value, field: &str) -> Result<Id, ClowlError> {
    let s = value
        .as_str()
        .ok_or_else(|| ClowlError::malformed(field, "must be a string"))?;
    Id::new(s).map_err(|e| ClowlError::malformed(field, e.to_string()))
}

fn required_id(m: &Map<String, Value>, key: &str) -> Result<Id, ClowlError> {
    id_at(required(m, key)?, key)
}

fn optional_id(m: &Map<String, Value>, key: &str) -> Result<Option<Id>, ClowlError> {
    m.get(key).map(|v| id_at(v, key)).transpose()
}

fn parse_recipient(value: &Value) -> Result<Recipient, ClowlError> {
    match value {
        Value::String(s) if s == "*" => Ok(Recipient::Broadcast),
        Value::String(_) => Ok(Recipient::Agent(id_at(value, "to")?)),
        Value::Array(items) => items
            .iter()
            .enumerate()
            .map(|(i, v)| id_at(v, &format!("to[{i}]")))
            .collect::<Result<_, _>>()
            .map(Recipient::Multicast),
        _ => Err(ClowlError::malformed(
            "to",
            "must be an agent id, \"*\" or an array of agent ids",
        )),
    }
}

fn parse_body(value: &Value) -> Result<Body, ClowlError> {
    let Value::Object(b) = value else {
        return Err(ClowlError::malformed("body", "must be an object"));
    };
    if let Some(key) = b.keys().find(|k| !matches!(k.as_str(), "t" | "d")) {
        return Err(ClowlError::malformed(
            &format!("body.{key}"),
            "unknown field",
        ));
    }
    let t = match b.get("t") {
        Some(Value::String(t)) => t.clone(),
        Some(_) => return Err(ClowlError::malformed("body.t", "must be a string")),
        None => return Err(missing("body.t")),
    };
    let d = match b.get("d") {
        Some(Value::Object(d)) => d.clone(),
        Some(_) => return Err(ClowlError::malformed("body.d", "must be an object")),
        None => return Err(missing("body.d")),
    };
    Ok(Body { t, d })
}

fn parse_ctx(value: &Value) -> Result<Context, ClowlError> {
    let Value::Object(c) = value else {
        return Err(ClowlError::malformed("ctx", "must be an object"));
    };
    if let Some(key) = c
        .keys()
        .find(|k| !matches!(k.as_str(), "ref" | "inline" | "hash"))
    {
        return Err(ClowlError::malformed(
            &format!("ctx.{key}"),
            "unknown field",
        ));
    }
    let nullable_str = |key: &str| match c.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(_) => Err(ClowlError::malformed(
            &format!("ctx.{key}"),
            "must be a string or null",
        )),
    };
    let reference = nullable_str("ref")?;
    let inline = nullable_str("inline")?;
    let hash = nullable_str("hash")?
        .map(|h| parse_ctx_hash(&h))
        .transpose()?;
    Context::new(reference, inline, hash)
}

fn body_kind(p: Performative, d: &Map<String, Value>) -> Result<BodyKind, ClowlError> {
    match p {
        Performative::Dlgt => match d.get("delegation_mode") {
            None => Err(ClowlError::bad_data(
                "body.d.delegation_mode",
                "DLGT requires a delegation mode: transfer, fork or assist",
            )),
            Some(v) => DelegationMode::deserialize(v)
                .map(BodyKind::Delegation)
                .map_err(|_| {
                    ClowlError::bad_data(
                        "body.d.delegation_mode",
                        format!("{v} is not a delegation mode; expected transfer, fork or assist"),
                    )
                }),
        },
        Performative::Err => {
            let code = match d.get("code") {
                None => return Err(ClowlError::bad_data("body.d.code", "ERR requires a code")),
                Some(Value::String(s)) => s.parse().map_err(|e: UnknownErrorCode| {
                    ClowlError::bad_data("body.d.code", e.to_string())
                })?,
                Some(_) => return Err(ClowlError::bad_data("body.d.code", "must be a string")),
            };
            let msg = match d.get("msg") {
                None => return Err(ClowlError::bad_data("body.d.msg", "ERR requires a msg")),
                Some(Value::String(s)) => s.clone(),
                Some(_) => return Err(ClowlError::bad_data("body.d.msg", "must be a string")),
            };
            let retry = match d.get("retry") {
                None => return Err(ClowlError::bad_data("body.d.retry", "ERR requires retry")),
                Some(Value::Bool(b)) => *b,
                Some(_) => return Err(ClowlError::bad_data("body.d.retry", "must be a boolean")),
            };
            Ok(BodyKind::Error(ErrorBody { code, msg, retry }))
        }
        Performative::Caps => {
            match d.get("clowl") {
                None => {
                    return Err(ClowlError::bad_data(
                        "body.d.clowl",
                        "CAPS must advertise its CLowl version",
                    ));
                }
                Some(Value::String(v)) if v == VERSION => {}
                Some(Value::String(v)) => {
                    return Err(ClowlError::new(
                        ErrorCode::E014,
                        format!("advertised version {v:?} is not CLowl {VERSION}"),
                        Some("body.d.clowl"),
                    ));
                }
                Some(_) => return Err(ClowlError::bad_data("body.d.clowl", "must be a string")),
            }
            let supports = match d.get("supports") {
                None => Vec::new(),
                Some(Value::Array(items)) => items
                    .iter()
                    .enumerate()
                    .map(|(i, v)| {
                        v.as_str().map(str::to_owned).ok_or_else(|| {
                            ClowlError::bad_data(
                                &format!("body.d.supports[{i}]"),
                                "must be a string",
                            )
                        })
                    })
                    .collect::<Result<_, _>>()?,
                Some(_) => {
                    return Err(ClowlError::bad_data(
                        "body.d.supports",
                        "must be an array of strings",
                    ));
                }
            };
            Ok(BodyKind::Capabilities(supports))
        }
        Performative::Req
        | Performative::Inf
        | Performative::Ack
        | Performative::Done
        | Performative::Cncl
        | Performative::Qry
        | Performative::Prog => Ok(BodyKind::Free),
    }
}
