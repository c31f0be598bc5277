//! `agent.lock`: the resolved tools, subagents, models and file hashes of an
//! agent, in the shape DESIGN.md fixes.
//!
//! Every map is a `BTreeMap`, so the same value always serializes to the same
//! bytes (only `resolved_at` varies between runs, and it honours
//! `SOURCE_DATE_EPOCH`). Parsing is strict: unknown keys, malformed hashes,
//! versions, names or timestamps are errors, and the bytes pass the bounded
//! [`crate::yaml::from_slice`] first.

use std::{collections::BTreeMap, collections::BTreeSet, fmt};

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use time::{OffsetDateTime, UtcOffset, format_description::well_known::Rfc3339};

use crate::{
    digest::{DigestError, Sha256Digest},
    names::{PackageName, Version},
    tree::MemberPath,
    yaml::{YamlError, YamlLimits},
};

/// The most tools one agent.lock may pin: it bounds the registry's work per
/// publish (one index read per pin) and install's downloads.
pub const MAX_LOCKED_TOOLS: usize = 256;

/// The most skill packages one agent.lock may pin, for the same reasons.
pub const MAX_LOCKED_SKILLS: usize = 64;

/// Longest model identifier accepted.
pub const MAX_MODEL_ID_LEN: usize = 128;

#[derive(Debug, thiserror::Error)]
pub enum LockfileError {
    #[error("agent.lock: {0}")]
    Yaml(#[from] YamlError),
    #[error("agent.lock could not be written: {0}")]
    Write(String),
    #[error(transparent)]
    BadHash(#[from] DigestError),
    #[error("{0:?} is not an RFC 3339 UTC timestamp like 2025-01-29T10:30:00Z")]
    BadTimestamp(String),
    #[error("SOURCE_DATE_EPOCH={0:?} is not a whole number of seconds in the supported range")]
    BadSourceDateEpoch(String),
    #[error(
        "{0:?} is not a model id (1 to {MAX_MODEL_ID_LEN} printable ASCII characters, no spaces)"
    )]
    BadModelId(String),
    #[error("{0} is not a price (a finite, non-negative number)")]
    BadPrice(f64),
}

/// A UTC instant with whole seconds, written `2025-01-29T10:30:00Z`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ResolvedAt(OffsetDateTime);

impl ResolvedAt {
    /// Parses an RFC 3339 timestamp whose offset is UTC (`Z` or `+00:00`).
    /// Fractions of a second are dropped, so that writing it back gives the
    /// canonical form.
    pub fn parse(s: &str) -> Result<Self, LockfileError> {
        let t = OffsetDateTime::parse(s, &Rfc3339)
            .map_err(|_| LockfileError::BadTimestamp(s.to_owned()))?;
        if t.offset() != UtcOffset::UTC {
            return Err(LockfileError::BadTimestamp(s.to_owned()));
        }
        Ok(Self::truncated(t))
    }

    /// Seconds since the Unix epoch. Only years 0000-9999 are accepted,
    /// the range RFC 3339 can write.
    pub fn from_unix(seconds: i64) -> Result<Self, LockfileError> {
        let t = OffsetDateTime::from_unix_timestamp(seconds)
            .ok()
            .filter(|t| (0..=9999).contains(&t.year()))
            .ok_or_else(|| LockfileError::BadSourceDateEpoch(seconds.to_string()))?;
        Ok(Self::truncated(t))
    }

    pub fn unix_timestamp(&self) -> i64 {
        self.0.unix_timestamp()
    }

    fn truncated(t: OffsetDateTime) -> Self {
        let t = t.to_offset(UtcOffset::UTC);
        Self(t.replace_nanosecond(0).unwrap_or(t))
    }
}

impl fmt::Display for ResolvedAt {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let d = self.0;
        write!(
            f,
            "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}Z",
            d.year(),
            u8::from(d.month()),
            d.day(),
            d.hour(),
            d.minute(),
            d.second()
        )
    }
}

impl Serialize for ResolvedAt {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for ResolvedAt {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        Self::parse(&s).map_err(serde::de::Error::custom)
    }
}

/// The `resolved_at` to write: `SOURCE_DATE_EPOCH` when the caller read one
/// from the environment (reproducible builds), else the current time. The
/// environment read stays in the CLI so this crate does no IO.
pub fn resolved_at_now_or_source_date_epoch(
    source_date_epoch: Option<&str>,
) -> Result<ResolvedAt, LockfileError> {
    match source_date_epoch {
        Some(raw) => {
            let seconds: i64 = raw
                .trim()
                .parse()
                .map_err(|_| LockfileError::BadSourceDateEpoch(raw.to_owned()))?;
            ResolvedAt::from_unix(seconds)
                .map_err(|_| LockfileError::BadSourceDateEpoch(raw.to_owned()))
        }
        None => Ok(ResolvedAt::truncated(OffsetDateTime::now_utc())),
    }
}

/// The only lockfile format version so far; written as the string `"1"`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub enum LockfileVersion {
    #[default]
    #[serde(rename = "1")]
    V1,
}

/// A model identifier such as `claude-sonnet-4` or `gpt-4.1`: model names are
/// the providers', not ours, so they follow looser rules than package names.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ModelId(String);

impl ModelId {
    pub fn new(id: impl Into<String>) -> Result<Self, LockfileError> {
        let id = id.into();
        let ok = !id.is_empty()
            && id.len() <= MAX_MODEL_ID_LEN
            && id.bytes().all(|b| b.is_ascii_graphic());
        if ok {
            Ok(Self(id))
        } else {
            Err(LockfileError::BadModelId(id))
        }
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for ModelId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl Serialize for ModelId {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.0)
    }
}

impl<'de> Deserialize<'de> for ModelId {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Self::new(String::deserialize(d)?).map_err(serde::de::Error::custom)
    }
}

/// Dollars per million tokens: finite and non-negative.
#[derive(Debug, Clone, Copy, PartialEq, PartialOrd)]
pub struct Price(f64);

impl Price {
    pub fn new(dollars: f64) -> Result<Self, LockfileError> {
        if dollars.is_finite() && dollars >= 0.0 {
            Ok(Self(dollars))
        } else {
            Err(LockfileError::BadPrice(dollars))
        }
    }

    pub fn get(self) -> f64 {
        self.0
    }
}

impl Serialize for Price {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_f64(self.0)
    }
}

impl<'de> Deserialize<'de> for Price {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Self::new(f64::deserialize(d)?).map_err(serde::de::Error::custom)
    }
}

/// One resolved tool.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct LockedTool {
    #[cfg_attr(feature = "openapi", schema(value_type = String, example = "1.2.0"))]
    pub version: Version,
    /// Of the `.tool` container.
    #[cfg_attr(feature = "openapi", schema(value_type = String, pattern = "^sha256:[0-9a-f]{64}$"))]
    #[serde(with = "crate::digest::prefixed")]
    pub hash: Sha256Digest,
    /// The requirement it was resolved against, as the agent wrote it; absent
    /// for tools that only other tools depend on.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "crate::names::deserialize_requirement"
    )]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<String>, example = "^1.2.0"))]
    pub requirement: Option<semver::VersionReq>,
    /// Names of the locked tools this one depends on.
    #[serde(default, skip_serializing_if = "BTreeSet::is_empty")]
    #[cfg_attr(feature = "openapi", schema(value_type = Vec<String>))]
    pub dependencies: BTreeSet<PackageName>,
    /// The registry's transparency-log entry of this version's publish:
    /// with it, `install` fetches and keeps the version's receipt and
    /// `verify` proves it offline. Absent in locks made before it existed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub log_index: Option<u64>,
}

/// One published skill the agent depends on (a `skills:` entry with a
/// `version`). Skills depend on nothing, so there is no `dependencies`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct LockedSkill {
    #[cfg_attr(feature = "openapi", schema(value_type = String, example = "0.1.0"))]
    pub version: Version,
    /// Of the `.skill` container.
    #[cfg_attr(feature = "openapi", schema(value_type = String, pattern = "^sha256:[0-9a-f]{64}$"))]
    #[serde(with = "crate::digest::prefixed")]
    pub hash: Sha256Digest,
    /// The requirement it was resolved against, as the agent wrote it.
    #[serde(deserialize_with = "requirement")]
    #[cfg_attr(feature = "openapi", schema(value_type = String, example = "^0.1"))]
    pub requirement: semver::VersionReq,
    /// The publish's transparency-log entry, as for tools.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub log_index: Option<u64>,
}

fn requirement<'de, D: Deserializer<'de>>(d: D) -> Result<semver::VersionReq, D::Error> {
    crate::names::parse_requirement(&String::deserialize(d)?).map_err(serde::de::Error::custom)
}

/// One co-located subagent.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct LockedAgent {
    #[cfg_attr(feature = "openapi", schema(value_type = String))]
    pub version: Version,
    /// Of the subagent file.
    #[cfg_attr(feature = "openapi", schema(value_type = String, pattern = "^sha256:[0-9a-f]{64}$"))]
    #[serde(with = "crate::digest::prefixed")]
    pub hash: Sha256Digest,
}

/// What the agent was resolved against for one model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct LockedModel {
    pub context_window: u64,
    pub supports_tools: bool,
    /// Dollars per million input tokens.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<f64>))]
    pub input_1m_price: Option<Price>,
    /// Dollars per million output tokens.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<f64>))]
    pub output_1m_price: Option<Price>,
}

/// The version of one protocol the agent speaks, as `lock` chose it from
/// the registry's catalog, a published protocol package or the agent's own
/// `x-protocols`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct LockedProtocol {
    #[cfg_attr(feature = "openapi", schema(value_type = String))]
    pub version: Version,
    /// The requirement it was chosen for, as the agent wrote it.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "crate::names::deserialize_requirement"
    )]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<String>))]
    pub requirement: Option<semver::VersionReq>,
    pub source: crate::protocols::ProtocolSource,
    /// Of the `.protocol` container, for a published custom protocol.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<String>, pattern = "^sha256:[0-9a-f]{64}$"))]
    #[serde(with = "crate::digest::prefixed::option")]
    pub hash: Option<Sha256Digest>,
}

/// A whole `agent.lock`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Lockfile {
    pub version: LockfileVersion,
    #[cfg_attr(feature = "openapi", schema(value_type = String, format = DateTime))]
    pub resolved_at: ResolvedAt,
    /// The registry the tools were resolved from. The spec's example omits
    /// it, so reading tolerates its absence; the CLI always writes it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub registry: Option<String>,
    #[serde(default)]
    #[cfg_attr(feature = "openapi", schema(value_type = BTreeMap<String, LockedTool>))]
    pub tools: BTreeMap<PackageName, LockedTool>,
    #[serde(default)]
    #[cfg_attr(feature = "openapi", schema(value_type = BTreeMap<String, LockedAgent>))]
    pub agents: BTreeMap<PackageName, LockedAgent>,
    #[serde(default)]
    #[cfg_attr(feature = "openapi", schema(value_type = BTreeMap<String, LockedModel>))]
    pub models: BTreeMap<ModelId, LockedModel>,
    /// Absent from locks written before protocols were locked, and from
    /// agents that declare none, so those locks keep their bytes.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    #[cfg_attr(feature = "openapi", schema(value_type = BTreeMap<String, LockedProtocol>))]
    pub protocols: BTreeMap<crate::protocols::ProtocolName, LockedProtocol>,
    /// Published skills. Absent when the agent depends on none, so locks
    /// written before skills were packages keep their bytes.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    #[cfg_attr(feature = "openapi", schema(value_type = BTreeMap<String, LockedSkill>))]
    pub skills: BTreeMap<PackageName, LockedSkill>,
    /// Each interface the agent requires (a `tools:` entry naming an
    /// interface rather than a tool) to the tool the resolver picked to
    /// provide it, which `tools` pins like any tool. Absent when the agent
    /// requires none, so older locks keep their bytes.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    #[cfg_attr(feature = "openapi", schema(value_type = BTreeMap<String, String>))]
    pub interfaces: BTreeMap<PackageName, PackageName>,
    #[serde(default, with = "crate::digest::prefixed::map")]
    #[cfg_attr(feature = "openapi", schema(value_type = BTreeMap<String, String>))]
    pub files: BTreeMap<MemberPath, Sha256Digest>,
}

impl Lockfile {
    /// An empty lockfile resolved at `resolved_at`.
    pub fn new(resolved_at: ResolvedAt, registry: Option<String>) -> Self {
        Self {
            version: LockfileVersion::V1,
            resolved_at,
            registry,
            tools: BTreeMap::new(),
            agents: BTreeMap::new(),
            models: BTreeMap::new(),
            protocols: BTreeMap::new(),
            skills: BTreeMap::new(),
            interfaces: BTreeMap::new(),
            files: BTreeMap::new(),
        }
    }

    /// Parses untrusted bytes with the default [`YamlLimits`].
    pub fn from_slice(bytes: &[u8]) -> Result<Self, LockfileError> {
        Self::from_slice_with_limits(bytes, &YamlLimits::default())
    }

    pub fn from_slice_with_limits(
        bytes: &[u8],
        limits: &YamlLimits,
    ) -> Result<Self, LockfileError> {
        Ok(crate::yaml::from_slice(bytes, limits)?)
    }

    /// The canonical YAML text: equal values give identical bytes.
    pub fn to_yaml(&self) -> Result<String, LockfileError> {
        yaml_serde::to_string(self).map_err(|e| LockfileError::Write(e.to_string()))
    }

    /// The locked versions of tools, the pins a re-resolution keeps while
    /// they still satisfy every requirement.
    pub fn tool_pins(&self) -> BTreeMap<PackageName, Version> {
        self.tools
            .iter()
            .map(|(name, tool)| (name.clone(), tool.version.clone()))
            .collect()
    }

    /// The locked versions of skills, kept by a re-resolution while they
    /// still satisfy their requirements.
    pub fn skill_pins(&self) -> BTreeMap<PackageName, Version> {
        self.skills
            .iter()
            .map(|(name, skill)| (name.clone(), skill.version.clone()))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_are_utc_and_canonical() {
        let t = ResolvedAt::parse("2025-01-29T10:30:00.123Z").unwrap();
        assert_eq!(t.to_string(), "2025-01-29T10:30:00Z");
        assert_eq!(
            ResolvedAt::parse("2025-01-29T10:30:00+00:00")
                .unwrap()
                .to_string(),
            "2025-01-29T10:30:00Z"
        );
        assert!(matches!(
            ResolvedAt::parse("2025-01-29T10:30:00+01:00"),
            Err(LockfileError::BadTimestamp(_))
        ));
        assert!(matches!(
            ResolvedAt::parse("yesterday"),
            Err(LockfileError::BadTimestamp(_))
        ));
    }

    #[test]
    fn source_date_epoch_wins_over_the_clock() {
        let t = resolved_at_now_or_source_date_epoch(Some("1738146600")).unwrap();
        assert_eq!(t.to_string(), "2025-01-29T10:30:00Z");
        assert!(matches!(
            resolved_at_now_or_source_date_epoch(Some("soon")),
            Err(LockfileError::BadSourceDateEpoch(s)) if s == "soon"
        ));
        assert!(matches!(
            resolved_at_now_or_source_date_epoch(Some("99999999999999999")),
            Err(LockfileError::BadSourceDateEpoch(_))
        ));
        assert!(matches!(
            resolved_at_now_or_source_date_epoch(Some("-62200000000")),
            Err(LockfileError::BadSourceDateEpoch(_))
        ));
        let now = resolved_at_now_or_source_date_epoch(None).unwrap();
        assert!(now.unix_timestamp() > 1_738_146_600);
    }

    #[test]
    fn model_ids_and_prices_are_validated() {
        assert!(ModelId::new("gpt-4.1").is_ok());
        assert!(matches!(
            ModelId::new(""),
            Err(LockfileError::BadModelId(_))
        ));
        assert!(matches!(
            ModelId::new("two words"),
            Err(LockfileError::BadModelId(_))
        ));
        assert!(Price::new(3.0).is_ok());
        assert!(matches!(Price::new(-1.0), Err(LockfileError::BadPrice(_))));
        assert!(matches!(
            Price::new(f64::NAN),
            Err(LockfileError::BadPrice(_))
        ));
    }
}
