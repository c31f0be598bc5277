//! Protocol versions, deprecation and custom protocol definitions: what an
//! agent's `protocols:` may name and which version each requirement picks.
//!
//! (Not to be confused with [`crate::protocol`], the CLowl and MoltSpeak
//! message models the registry itself speaks.)
//!
//! Like Kubernetes API versions, a protocol has versions, each `stable`,
//! `deprecated` (with a successor and a message) or `removed`. The registry
//! keeps a catalog of the well-known ones ([`ProtocolEntry`], seeded with
//! `mcp` and `a2a`); anyone can define a custom protocol, named
//! `custom/<name>` by agents, either inline under `x-protocols` or as a
//! published package of kind `protocol` carrying a `protocol.yaml`
//! ([`ProtocolSpec`]).
//!
//! Selection ([`select`]) prefers, among the versions a requirement
//! matches, the newest stable one, then the newest deprecated one (a
//! warning naming the successor); a requirement that only removed versions
//! match is an error, as is one nothing matches. A version an existing
//! lock pins is kept while it still matches and is not removed, so a lock
//! does not move on its own.

use std::{collections::BTreeMap, fmt, str::FromStr};

use semver::VersionReq;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use yaml_serde::Value;

use crate::{
    agent::{
        model::{AgentSpec, Extensions},
        reader::{Fields, Reader},
    },
    diagnostics::{Diagnostic, Diagnostics, index, join},
    digest::Sha256Digest,
    names::{NameError, PackageName, Version},
    yaml::{YamlLimits, parse_value},
};

/// How agents name a protocol defined outside the catalog.
pub const CUSTOM_PREFIX: &str = "custom/";
/// The extension key of inline custom protocol definitions.
pub const INLINE_KEY: &str = "x-protocols";
/// The definition file of a `protocol` package.
pub const PROTOCOL_FILE: &str = "protocol.yaml";
/// Most versions one catalog entry may list: a bound on every request body
/// and on the work of one selection.
pub const MAX_VERSIONS: usize = 200;
/// Longest description or message accepted.
pub const MAX_TEXT_LEN: usize = 2_000;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ProtocolError {
    #[error("{0:?} is not a protocol name like a2a or custom/<name>: {1}")]
    BadName(String, NameError),
    #[error("a catalog entry lists at most {MAX_VERSIONS} versions, this one {0}")]
    TooManyVersions(usize),
    #[error("a catalog entry needs at least one version")]
    NoVersions,
    #[error("version {0} is listed twice")]
    DuplicateVersion(Version),
    #[error("version {version}: successor {successor} is not a version of this protocol")]
    UnknownSuccessor {
        version: Version,
        successor: Version,
    },
    #[error("version {version}: successor {successor} must be newer")]
    OlderSuccessor {
        version: Version,
        successor: Version,
    },
    #[error("version {0}: a successor must be stable, not itself deprecated or removed")]
    SuccessorNotStable(Version),
    #[error("version {0}: a deprecation needs a message saying what to do")]
    EmptyMessage(Version),
    #[error("{field} is longer than {MAX_TEXT_LEN} characters")]
    TooLong { field: &'static str },
}

/// A protocol as agents name it: `a2a`, `mcp`, or `custom/<name>`. The bare
/// part follows package-name rules.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ProtocolName(String);

impl ProtocolName {
    pub fn new(name: impl Into<String>) -> Result<Self, ProtocolError> {
        let name = name.into();
        let bare = name.strip_prefix(CUSTOM_PREFIX).unwrap_or(&name);
        match PackageName::new(bare) {
            Ok(_) => Ok(Self(name)),
            Err(e) => Err(ProtocolError::BadName(name, e)),
        }
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The package name of a custom protocol (`acme-sync` for
    /// `custom/acme-sync`); `None` for catalog protocols.
    pub fn custom_package(&self) -> Option<PackageName> {
        self.0
            .strip_prefix(CUSTOM_PREFIX)
            .and_then(|n| PackageName::new(n).ok())
    }

    pub fn is_custom(&self) -> bool {
        self.0.starts_with(CUSTOM_PREFIX)
    }
}

impl fmt::Display for ProtocolName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// Maps keyed by protocol name can be looked up by `&str`: the name is its
/// text, so equality, order and hash agree.
impl std::borrow::Borrow<str> for ProtocolName {
    fn borrow(&self) -> &str {
        &self.0
    }
}

impl FromStr for ProtocolName {
    type Err = ProtocolError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::new(s)
    }
}

impl Serialize for ProtocolName {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.0)
    }
}

impl<'de> Deserialize<'de> for ProtocolName {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Self::new(String::deserialize(d)?).map_err(serde::de::Error::custom)
    }
}

/// Where one version of a protocol stands.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum ProtocolStatus {
    Stable,
    /// Still works; agents are warned to move to `successor`.
    Deprecated {
        successor: Version,
        message: String,
    },
    /// No longer accepted: agents requiring only this fail validation.
    Removed {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        successor: Option<Version>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        message: Option<String>,
    },
}

impl ProtocolStatus {
    pub fn label(&self) -> &'static str {
        match self {
            ProtocolStatus::Stable => "stable",
            ProtocolStatus::Deprecated { .. } => "deprecated",
            ProtocolStatus::Removed { .. } => "removed",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProtocolVersion {
    pub version: Version,
    #[serde(flatten)]
    pub status: ProtocolStatus,
}

/// One protocol of the catalog with every version it has had. Built only
/// through [`ProtocolEntry::new`] (also when deserialized), so versions are
/// unique, sorted oldest first, at most [`MAX_VERSIONS`], and every
/// successor is a newer stable version of the same protocol.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ProtocolEntry {
    description: String,
    versions: Vec<ProtocolVersion>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawEntry {
    #[serde(default)]
    description: String,
    versions: Vec<ProtocolVersion>,
}

impl<'de> Deserialize<'de> for ProtocolEntry {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let raw = RawEntry::deserialize(d)?;
        Self::new(raw.description, raw.versions).map_err(|errors| {
            serde::de::Error::custom(
                errors
                    .iter()
                    .map(ToString::to_string)
                    .collect::<Vec<_>>()
                    .join("; "),
            )
        })
    }
}

impl ProtocolEntry {
    /// Checks every rule and reports every broken one.
    pub fn new(
        description: String,
        mut versions: Vec<ProtocolVersion>,
    ) -> Result<Self, Vec<ProtocolError>> {
        let mut errors = Vec::new();
        if versions.len() > MAX_VERSIONS {
            return Err(vec![ProtocolError::TooManyVersions(versions.len())]);
        }
        if versions.is_empty() {
            errors.push(ProtocolError::NoVersions);
        }
        if description.chars().count() > MAX_TEXT_LEN {
            errors.push(ProtocolError::TooLong {
                field: "description",
            });
        }
        versions.sort_by(|a, b| a.version.semver().cmp_precedence(b.version.semver()));
        for pair in versions.windows(2) {
            if pair[0]
                .version
                .semver()
                .cmp_precedence(pair[1].version.semver())
                .is_eq()
            {
                errors.push(ProtocolError::DuplicateVersion(pair[1].version.clone()));
            }
        }
        let stable = |v: &Version| {
            versions
                .iter()
                .find(|p| &p.version == v)
                .map(|p| matches!(p.status, ProtocolStatus::Stable))
        };
        for p in &versions {
            let (successor, message) = match &p.status {
                ProtocolStatus::Stable => continue,
                ProtocolStatus::Deprecated { successor, message } => {
                    if message.trim().is_empty() {
                        errors.push(ProtocolError::EmptyMessage(p.version.clone()));
                    }
                    (Some(successor), Some(message))
                }
                ProtocolStatus::Removed { successor, message } => {
                    (successor.as_ref(), message.as_ref())
                }
            };
            if message.is_some_and(|m| m.chars().count() > MAX_TEXT_LEN) {
                errors.push(ProtocolError::TooLong { field: "message" });
            }
            let Some(successor) = successor else { continue };
            match stable(successor) {
                None => errors.push(ProtocolError::UnknownSuccessor {
                    version: p.version.clone(),
                    successor: successor.clone(),
                }),
                Some(false) => errors.push(ProtocolError::SuccessorNotStable(p.version.clone())),
                Some(true) => {}
            }
            if successor <= &p.version {
                errors.push(ProtocolError::OlderSuccessor {
                    version: p.version.clone(),
                    successor: successor.clone(),
                });
            }
        }
        if errors.is_empty() {
            Ok(Self {
                description,
                versions,
            })
        } else {
            Err(errors)
        }
    }

    pub fn description(&self) -> &str {
        &self.description
    }

    /// Oldest first.
    pub fn versions(&self) -> &[ProtocolVersion] {
        &self.versions
    }

    pub fn version(&self, v: &Version) -> Option<&ProtocolVersion> {
        self.versions.iter().find(|p| &p.version == v)
    }
}

/// The catalog view of a published protocol package: every live release
/// is stable, except yanked ones, which are deprecated in favour of the
/// newest unyanked release above them, or removed when there is none. So
/// a yank warns agents that still name the version, and new locks move on.
/// `releases` are `(version, Some(yank reason or "") when yanked)`; `None`
/// when there are none.
pub fn entry_from_releases(
    description: String,
    releases: &[(Version, Option<String>)],
) -> Option<ProtocolEntry> {
    let versions = releases
        .iter()
        .map(|(version, yanked)| {
            let status = match yanked {
                None => ProtocolStatus::Stable,
                Some(reason) => {
                    let message = if reason.trim().is_empty() {
                        "this version was yanked".to_owned()
                    } else {
                        format!("this version was yanked: {reason}")
                    };
                    let successor = releases
                        .iter()
                        .filter(|(v, y)| y.is_none() && v > version && !v.is_prerelease())
                        .map(|(v, _)| v)
                        .max();
                    match successor {
                        Some(successor) => ProtocolStatus::Deprecated {
                            successor: successor.clone(),
                            message,
                        },
                        None => ProtocolStatus::Removed {
                            successor: None,
                            message: Some(message),
                        },
                    }
                }
            };
            ProtocolVersion {
                version: version.clone(),
                status,
            }
        })
        .collect();
    ProtocolEntry::new(description, versions).ok()
}

/// The version a requirement picked, and whether it is deprecated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Selected {
    pub version: Version,
    /// `(successor, message)` when the chosen version is deprecated.
    pub deprecated: Option<(Version, String)>,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SelectError {
    #[error("no version of {name} satisfies {requirement} (versions: {available})")]
    NoMatch {
        name: String,
        requirement: String,
        available: String,
    },
    #[error("{name} {version} has been removed{}{}", successor.as_ref().map(|s| format!("; migrate to {s}")).unwrap_or_default(), message.as_ref().map(|m| format!(" ({m})")).unwrap_or_default())]
    Removed {
        name: String,
        version: Version,
        successor: Option<Version>,
        message: Option<String>,
    },
}

fn describe_requirement(req: Option<&VersionReq>) -> String {
    req.map_or_else(|| "any version".to_owned(), ToString::to_string)
}

fn matches(req: Option<&VersionReq>, v: &Version) -> bool {
    match req {
        Some(r) => r.matches(v.semver()),
        // No requirement: the newest release, never a prerelease.
        None => !v.is_prerelease(),
    }
}

/// Picks the version of `entry` that `req` selects (see the module docs);
/// `pinned` is the version an existing lock holds.
pub fn select(
    name: &str,
    entry: &ProtocolEntry,
    req: Option<&VersionReq>,
    pinned: Option<&Version>,
) -> Result<Selected, Box<SelectError>> {
    let selected = |p: &ProtocolVersion| Selected {
        version: p.version.clone(),
        deprecated: match &p.status {
            ProtocolStatus::Deprecated { successor, message } => {
                Some((successor.clone(), message.clone()))
            }
            _ => None,
        },
    };
    let matching: Vec<&ProtocolVersion> = entry
        .versions
        .iter()
        .filter(|p| matches(req, &p.version))
        .collect();
    let usable = |p: &ProtocolVersion| !matches!(p.status, ProtocolStatus::Removed { .. });
    if let Some(pin) = pinned
        && let Some(p) = matching
            .iter()
            .find(|p| &p.version == pin)
            .filter(|p| usable(p))
    {
        return Ok(selected(p));
    }
    let newest = |want_stable: bool| {
        matching
            .iter()
            .rev()
            .find(|p| usable(p) && matches!(p.status, ProtocolStatus::Stable) == want_stable)
    };
    if let Some(p) = newest(true).or_else(|| newest(false)) {
        return Ok(selected(p));
    }
    match matching.last() {
        Some(p) => {
            let (successor, message) = match &p.status {
                ProtocolStatus::Removed { successor, message } => {
                    (successor.clone(), message.clone())
                }
                _ => (None, None),
            };
            Err(Box::new(SelectError::Removed {
                name: name.to_owned(),
                version: p.version.clone(),
                successor,
                message,
            }))
        }
        None => Err(Box::new(SelectError::NoMatch {
            name: name.to_owned(),
            requirement: describe_requirement(req),
            available: entry
                .versions
                .iter()
                .map(|p| format!("{} {}", p.version, p.status.label()))
                .collect::<Vec<_>>()
                .join(", "),
        })),
    }
}

// ------------------------------------------------------------ definitions

macro_rules! closed_set {
    ($(#[$doc:meta])* $name:ident { $($variant:ident => $text:literal,)* }) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum $name {
            $($variant,)*
        }

        impl $name {
            pub const NAMES: &'static [&'static str] = &[$($text,)*];

            pub fn as_str(self) -> &'static str {
                match self {
                    $($name::$variant => $text,)*
                }
            }

            fn parse(s: &str) -> Option<Self> {
                match s {
                    $($text => Some($name::$variant),)*
                    _ => None,
                }
            }
        }

        impl Serialize for $name {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(self.as_str())
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.as_str())
            }
        }
    };
}

closed_set! {
    /// How messages are encoded.
    MessageFormat {
        Json => "json",
        Cbor => "cbor",
        Msgpack => "msgpack",
        Protobuf => "protobuf",
        Text => "text",
    }
}

closed_set! {
    /// How messages travel.
    Transport {
        Http => "http",
        Websocket => "websocket",
        Sse => "sse",
        Grpc => "grpc",
        Stdio => "stdio",
        Tcp => "tcp",
    }
}

closed_set! {
    /// How peers authenticate.
    ProtocolAuth {
        None => "none",
        Bearer => "bearer",
        Basic => "basic",
        ApiKey => "api_key",
        Mtls => "mtls",
        Oauth2 => "oauth2",
        Signature => "signature",
    }
}

/// The `schema:` block of a custom protocol: how its messages look and
/// travel. `messages` is an optional JSON Schema of one message.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ProtocolSchema {
    pub message_format: MessageFormat,
    pub transport: Transport,
    pub auth: ProtocolAuth,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub messages: Option<serde_json::Value>,
    #[serde(flatten)]
    pub extensions: Extensions,
}

/// One inline definition under an agent's `x-protocols`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct InlineProtocol {
    pub version: Version,
    pub schema: ProtocolSchema,
    #[serde(flatten)]
    pub extensions: Extensions,
}

/// A `protocol` package's `protocol.yaml`: the same definition, published
/// on its own, signed and versioned like a tool.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ProtocolSpec {
    pub name: PackageName,
    pub version: Version,
    pub description: String,
    pub schema: ProtocolSchema,
    #[serde(flatten)]
    pub extensions: Extensions,
}

impl ProtocolSpec {
    /// How agents refer to it: `custom/<name>`.
    pub fn protocol_name(&self) -> String {
        format!("{CUSTOM_PREFIX}{}", self.name)
    }
}

fn read_schema(r: &mut Reader, v: &Value, path: &str) -> Option<ProtocolSchema> {
    let f = r.fields(
        v,
        path,
        &["message_format", "transport", "auth", "messages"],
    )?;
    let message_format = r.required(&f, "message_format").and_then(|m| {
        r.one_of(
            m,
            &f.at("message_format"),
            MessageFormat::NAMES,
            MessageFormat::parse,
        )
    });
    let transport = r
        .required(&f, "transport")
        .and_then(|t| r.one_of(t, &f.at("transport"), Transport::NAMES, Transport::parse));
    let auth = r
        .required(&f, "auth")
        .and_then(|a| r.one_of(a, &f.at("auth"), ProtocolAuth::NAMES, ProtocolAuth::parse));
    let messages = f
        .get("messages")
        .and_then(|m| json_schema(r, m, &f.at("messages")));
    Some(ProtocolSchema {
        message_format: message_format?,
        transport: transport?,
        auth: auth?,
        messages,
        extensions: f.extensions,
    })
}

/// A JSON Schema that compiles (the draft its `$schema` names, 2020-12 when
/// absent), its regexes bounded (`json_schema::check`).
fn json_schema(r: &mut Reader, v: &Value, path: &str) -> Option<serde_json::Value> {
    let json = crate::agent::reader::to_json(v);
    if !json.is_object() {
        r.error(path, "expected a JSON Schema mapping");
        return None;
    }
    crate::json_schema::check(&json, path, &mut r.regexes, &mut r.diags).then_some(json)
}

fn read_version(r: &mut Reader, f: &Fields<'_>) -> Option<Version> {
    let v = r.required(f, "version")?;
    let s = r.scalar(v, &f.at("version"))?;
    match Version::parse(&s) {
        Ok(v) => Some(v),
        Err(e @ crate::names::NameError::VersionLabelTooLong { .. }) => {
            r.error(f.at("version"), e);
            None
        }
        Err(_) => {
            r.error(
                f.at("version"),
                format!("{s:?} is not a strict SemVer version like 1.0.0"),
            );
            None
        }
    }
}

/// Reads and validates `protocol.yaml`, reporting every problem with its
/// path.
pub fn parse_protocol(bytes: &[u8]) -> Result<ProtocolSpec, Diagnostics> {
    let doc = parse_value(bytes, &YamlLimits::default())?;
    let mut r = Reader::new();
    let spec = (|| {
        let f = r.fields(&doc, "", &["name", "version", "description", "schema"])?;
        let name = r.required(&f, "name").and_then(|n| {
            let s = r.string(n, "name")?;
            match PackageName::new(s.as_str()) {
                Ok(n) => Some(n),
                Err(e) => {
                    r.error("name", format!("{s:?} is not a valid name: {e}"));
                    None
                }
            }
        });
        let version = read_version(&mut r, &f);
        let description = r.req_text(&f, "description");
        if description
            .as_ref()
            .is_some_and(|d| d.chars().count() > MAX_TEXT_LEN)
        {
            r.error(
                "description",
                format!("longer than {MAX_TEXT_LEN} characters"),
            );
        }
        let schema = r
            .required(&f, "schema")
            .and_then(|s| read_schema(&mut r, s, "schema"));
        Some(ProtocolSpec {
            name: name?,
            version: version?,
            description: description?,
            schema: schema?,
            extensions: f.extensions,
        })
    })();
    let diags = r.finish();
    match spec {
        Some(spec) if diags.is_empty() => Ok(spec),
        _ => Err(diags),
    }
}

impl<'de> Deserialize<'de> for ProtocolSpec {
    /// The registry stores the spec as JSON and reads it back through the
    /// same checks.
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let json = serde_json::Value::deserialize(d)?;
        let text = serde_json::to_vec(&json).map_err(serde::de::Error::custom)?;
        // JSON is YAML: the same reader checks both.
        parse_protocol(&text).map_err(serde::de::Error::custom)
    }
}

/// The agent's inline definitions (`x-protocols`), each checked for shape.
/// Keys are the bare names agents write after `custom/`.
pub fn inline_protocols(
    spec: &AgentSpec,
) -> Result<BTreeMap<PackageName, InlineProtocol>, Diagnostics> {
    let Some(raw) = spec.extensions.get(INLINE_KEY) else {
        return Ok(BTreeMap::new());
    };
    let mut r = Reader::new();
    let mut out = BTreeMap::new();
    let value = match yaml_serde::to_value(raw) {
        Ok(v) => v,
        Err(e) => {
            r.error(INLINE_KEY, e.to_string());
            return Err(r.finish());
        }
    };
    for (name, def) in r.dict(&value, INLINE_KEY) {
        let p = join(INLINE_KEY, name);
        let Ok(package) = PackageName::new(name) else {
            r.error(
                &p,
                format!("{name:?} is not a protocol name (letters, digits, '-', '_')"),
            );
            continue;
        };
        let Some(f) = r.fields(def, &p, &["version", "schema"]) else {
            continue;
        };
        let version = read_version(&mut r, &f);
        let schema = r
            .required(&f, "schema")
            .and_then(|s| read_schema(&mut r, s, &f.at("schema")));
        if let (Some(version), Some(schema)) = (version, schema) {
            out.insert(
                package,
                InlineProtocol {
                    version,
                    schema,
                    extensions: f.extensions,
                },
            );
        }
    }
    let diags = r.finish();
    if diags.is_empty() {
        Ok(out)
    } else {
        Err(diags)
    }
}

/// The single-file rules of an agent's protocols, which need no catalog:
/// `x-protocols` entries have the right shape, and an inline definition
/// satisfies the requirement that names it.
pub fn check_inline(spec: &AgentSpec, diags: &mut Diagnostics) {
    let inline = match inline_protocols(spec) {
        Ok(inline) => inline,
        Err(d) => {
            diags.extend(d);
            return;
        }
    };
    for (i, decl) in spec.protocols.iter().enumerate() {
        let Some(bare) = decl.custom_name() else {
            continue;
        };
        let Some(def) = PackageName::new(bare).ok().and_then(|n| inline.get(&n)) else {
            continue;
        };
        if let Some(req) = &decl.version
            && !req.matches(def.version.semver())
        {
            diags.push(
                join(&index("protocols", i), "version"),
                format!(
                    "{req} does not match the inline definition of {bare} ({INLINE_KEY}.{bare}.version is {})",
                    def.version
                ),
            );
        }
    }
}

// ------------------------------------------------------------ agent check

/// Where a chosen protocol version is defined.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub enum ProtocolSource {
    /// The registry's protocol catalog.
    Catalog,
    /// The agent's own `x-protocols`.
    Inline,
    /// A published `protocol` package.
    Package,
}

/// What a protocol requirement resolved to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProtocolChoice {
    pub name: ProtocolName,
    pub requirement: Option<VersionReq>,
    pub version: Version,
    pub source: ProtocolSource,
    /// Of the `.protocol` container, for a published custom protocol.
    pub hash: Option<Sha256Digest>,
    pub deprecated: Option<(Version, String)>,
}

/// A protocol as a caller's catalog knows it.
#[derive(Debug, Clone)]
pub struct KnownProtocol {
    pub entry: ProtocolEntry,
    pub source: ProtocolSource,
    /// Container hashes of a package-backed protocol's versions.
    pub hashes: BTreeMap<Version, Sha256Digest>,
}

/// The outcome of checking an agent's `protocols:` against a catalog.
#[derive(Debug, Clone, Default)]
pub struct ProtocolReport {
    pub choices: Vec<ProtocolChoice>,
    /// Unsatisfiable, removed or undefined protocols (`protocols[i]...`).
    pub errors: Diagnostics,
    /// Deprecated choices, each naming the successor.
    pub warnings: Vec<Diagnostic>,
}

/// Checks every `protocols:` entry of `spec`: inline custom protocols
/// against their definition, the rest against `lookup` (the registry's
/// catalog, and published protocol packages for `custom/` names).
/// `pins` are the versions an existing lock holds.
pub fn check_agent(
    spec: &AgentSpec,
    lookup: &dyn Fn(&ProtocolName) -> Option<KnownProtocol>,
    pins: &BTreeMap<String, Version>,
) -> ProtocolReport {
    let mut report = ProtocolReport::default();
    let inline = inline_protocols(spec).unwrap_or_default();
    for (i, decl) in spec.protocols.iter().enumerate() {
        let path = index("protocols", i);
        let Ok(name) = ProtocolName::new(decl.name.as_str()) else {
            // parse_agent reports bad names.
            continue;
        };
        let req = decl.version.as_ref();
        if let Some(def) = name.custom_package().and_then(|n| inline.get(&n)) {
            if req.is_none_or(|r| r.matches(def.version.semver())) {
                report.choices.push(ProtocolChoice {
                    name,
                    requirement: decl.version.clone(),
                    version: def.version.clone(),
                    source: ProtocolSource::Inline,
                    hash: None,
                    deprecated: None,
                });
            }
            // A mismatch is reported by check_inline, with the agent.
            continue;
        }
        let Some(known) = lookup(&name) else {
            let message = if name.is_custom() {
                format!(
                    "custom protocol {name} is neither defined under {INLINE_KEY} nor published as a protocol package"
                )
            } else {
                format!("{name} is not a protocol this registry knows")
            };
            report.errors.push(join(&path, "name"), message);
            continue;
        };
        match select(name.as_str(), &known.entry, req, pins.get(name.as_str())) {
            Ok(selected) => {
                if let Some((successor, message)) = &selected.deprecated {
                    report.warnings.push(Diagnostic {
                        file: None,
                        path: join(&path, "version"),
                        message: format!(
                            "{name} {} is deprecated, migrate to {successor}: {message}",
                            selected.version
                        ),
                        rule: None,
                    });
                }
                report.choices.push(ProtocolChoice {
                    hash: known.hashes.get(&selected.version).copied(),
                    name,
                    requirement: decl.version.clone(),
                    version: selected.version,
                    source: known.source,
                    deprecated: selected.deprecated,
                });
            }
            Err(e) => report.errors.push(join(&path, "version"), e.to_string()),
        }
    }
    report
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(s: &str) -> Version {
        Version::parse(s).unwrap()
    }

    fn a2a() -> ProtocolEntry {
        ProtocolEntry::new(
            "Agent-to-agent messaging".into(),
            vec![
                ProtocolVersion {
                    version: v("2.0.0"),
                    status: ProtocolStatus::Stable,
                },
                ProtocolVersion {
                    version: v("1.0.0"),
                    status: ProtocolStatus::Deprecated {
                        successor: v("2.0.0"),
                        message: "a2a v1 deprecated, migrate to v2".into(),
                    },
                },
                ProtocolVersion {
                    version: v("0.9.0"),
                    status: ProtocolStatus::Removed {
                        successor: Some(v("2.0.0")),
                        message: None,
                    },
                },
            ],
        )
        .unwrap()
    }

    #[test]
    fn selection_prefers_stable_then_deprecated_and_refuses_removed() {
        let e = a2a();
        let req = |s: &str| VersionReq::parse(s).unwrap();
        let s = select("a2a", &e, Some(&req("^2.0.0")), None).unwrap();
        assert_eq!((s.version, s.deprecated), (v("2.0.0"), None));
        let s = select("a2a", &e, Some(&req("^1.0.0")), None).unwrap();
        assert_eq!(s.version, v("1.0.0"));
        assert_eq!(s.deprecated.unwrap().0, v("2.0.0"));
        let s = select("a2a", &e, Some(&req(">=1.0.0")), None).unwrap();
        assert_eq!(s.version, v("2.0.0"), "stable wins over deprecated");
        let s = select("a2a", &e, Some(&req(">=1.0.0")), Some(&v("1.0.0"))).unwrap();
        assert_eq!(s.version, v("1.0.0"), "a lock's pin is kept");
        let err = select("a2a", &e, Some(&req("^0.9")), None).unwrap_err();
        assert_eq!(
            err.to_string(),
            "a2a 0.9.0 has been removed; migrate to 2.0.0"
        );
        let err = select("a2a", &e, Some(&req("^3")), None).unwrap_err();
        assert_eq!(
            err.to_string(),
            "no version of a2a satisfies ^3 (versions: 0.9.0 removed, 1.0.0 deprecated, 2.0.0 stable)"
        );
        assert_eq!(select("a2a", &e, None, None).unwrap().version, v("2.0.0"));
    }

    #[test]
    fn entries_are_checked_as_a_whole() {
        let errors = ProtocolEntry::new(
            String::new(),
            vec![
                ProtocolVersion {
                    version: v("1.0.0"),
                    status: ProtocolStatus::Deprecated {
                        successor: v("3.0.0"),
                        message: " ".into(),
                    },
                },
                ProtocolVersion {
                    version: v("2.0.0"),
                    status: ProtocolStatus::Removed {
                        successor: Some(v("1.0.0")),
                        message: None,
                    },
                },
                ProtocolVersion {
                    version: v("2.0.0+build"),
                    status: ProtocolStatus::Stable,
                },
            ],
        )
        .unwrap_err();
        let text: Vec<String> = errors.iter().map(ToString::to_string).collect();
        assert_eq!(
            text,
            [
                "version 2.0.0+build is listed twice",
                "version 1.0.0: a deprecation needs a message saying what to do",
                "version 1.0.0: successor 3.0.0 is not a version of this protocol",
                "version 2.0.0: a successor must be stable, not itself deprecated or removed",
                "version 2.0.0: successor 1.0.0 must be newer",
            ]
        );
        assert_eq!(
            ProtocolEntry::new(String::new(), vec![]).unwrap_err(),
            [ProtocolError::NoVersions]
        );
    }

    #[test]
    fn entries_round_trip_through_json_and_validate_when_read() {
        let json = serde_json::to_value(a2a()).unwrap();
        assert_eq!(
            json["versions"][1],
            serde_json::json!({"version": "1.0.0", "status": "deprecated", "successor": "2.0.0", "message": "a2a v1 deprecated, migrate to v2"})
        );
        let back: ProtocolEntry = serde_json::from_value(json).unwrap();
        assert_eq!(back, a2a());
        let bad = serde_json::json!({"versions": [{"version": "1.0.0", "status": "deprecated", "successor": "9.0.0", "message": "x"}]});
        let err = serde_json::from_value::<ProtocolEntry>(bad).unwrap_err();
        assert!(
            err.to_string().contains("not a version of this protocol"),
            "{err}"
        );
    }

    #[test]
    fn yanked_releases_point_to_the_newest_live_one() {
        let e = entry_from_releases(
            "x".into(),
            &[
                (v("1.0.0"), Some("broken".into())),
                (v("1.1.0"), None),
                (v("2.0.0-rc.1"), None),
                (v("2.0.0"), Some(String::new())),
            ],
        )
        .unwrap();
        let labels: Vec<String> = e
            .versions()
            .iter()
            .map(|p| format!("{} {:?}", p.version, p.status))
            .collect();
        assert_eq!(
            labels,
            [
                "1.0.0 Deprecated { successor: Version(Version { major: 1, minor: 1, patch: 0 }), message: \"this version was yanked: broken\" }",
                "1.1.0 Stable",
                "2.0.0-rc.1 Stable",
                "2.0.0 Removed { successor: None, message: Some(\"this version was yanked\") }",
            ]
        );
        assert!(entry_from_releases("x".into(), &[]).is_none());
    }

    #[test]
    fn names_take_the_custom_prefix() {
        assert!(ProtocolName::new("a2a").is_ok());
        let c = ProtocolName::new("custom/acme-sync").unwrap();
        assert_eq!(c.custom_package().unwrap().as_str(), "acme-sync");
        assert!(ProtocolName::new("custom/").is_err());
        assert!(ProtocolName::new("other/x").is_err());
    }

    #[test]
    fn protocol_yaml_is_read_with_every_problem_reported() {
        let ok = parse_protocol(
            b"name: acme-sync\nversion: 1.2.0\ndescription: Sync\nschema:\n  message_format: json\n  transport: websocket\n  auth: bearer\n  messages:\n    type: object\n",
        )
        .unwrap();
        assert_eq!(ok.protocol_name(), "custom/acme-sync");
        assert_eq!(ok.schema.transport, Transport::Websocket);
        let json = serde_json::to_value(&ok).unwrap();
        let back: ProtocolSpec = serde_json::from_value(json).unwrap();
        assert_eq!(back, ok);

        let err = parse_protocol(
            b"name: acme-sync\nversion: '1'\nschema:\n  message_format: xml\n  transport: websocket\n  auht: bearer\n",
        )
        .unwrap_err();
        let text: Vec<String> = err.iter().map(ToString::to_string).collect();
        assert_eq!(
            text,
            [
                "version: \"1\" is not a strict SemVer version like 1.0.0",
                "missing required key \"description\"",
                "schema.auht: unknown key; did you mean \"auth\"?",
                "schema.message_format: \"xml\" is not one of: json | cbor | msgpack | protobuf | text",
                "schema: missing required key \"auth\"",
            ]
        );
    }
}
