//! Identifiers that reach SQL, object-store keys and file paths: they are
//! validated on construction and on deserialization, so an unvalidated string
//! never gets that far.

use std::{fmt, str::FromStr};

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// Longest package name DESIGN.md allows.
pub const MAX_NAME_LEN: usize = 64;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NameError {
    #[error("name is empty")]
    Empty,
    #[error("name is {0} characters long; at most {MAX_NAME_LEN} are allowed")]
    TooLong(usize),
    #[error("name must start with an ASCII letter, found {0:?}")]
    BadStart(char),
    #[error("name may hold only ASCII letters, digits, '-' and '_', found {0:?}")]
    BadChar(char),
    #[error("{0:?} is not a valid SemVer 2.0 version: {1}")]
    BadVersion(String, String),
    #[error(
        "the version's {part} is {len} bytes long; at most {MAX_VERSION_LABEL_LEN} are allowed"
    )]
    VersionLabelTooLong { part: &'static str, len: usize },
    #[error("the version requirement is {0} bytes long; at most {MAX_REQUIREMENT_LEN} are allowed")]
    RequirementTooLong(usize),
    #[error("{0:?} is not a version requirement: {1}")]
    BadRequirement(String, String),
    #[error("{0:?} is not a package kind (expected \"agent\", \"tool\" or \"protocol\")")]
    BadKind(String),
}

/// A package name: ASCII letters, digits, `-`, `_`; starts with a letter; at
/// most 64 characters. Two names with the same [`PackageName::normalized`]
/// form are the same package.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct PackageName(String);

impl PackageName {
    pub fn new(name: impl Into<String>) -> Result<Self, NameError> {
        let name = name.into();
        let mut chars = name.chars();
        let first = chars.next().ok_or(NameError::Empty)?;
        if name.len() > MAX_NAME_LEN {
            return Err(NameError::TooLong(name.chars().count()));
        }
        if !first.is_ascii_alphabetic() {
            return Err(NameError::BadStart(first));
        }
        if let Some(bad) = chars.find(|c| !(c.is_ascii_alphanumeric() || *c == '-' || *c == '_')) {
            return Err(NameError::BadChar(bad));
        }
        Ok(Self(name))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The form uniqueness is judged on ([`normalize`]), so `Web-Search`
    /// and `web_search` are one package.
    pub fn normalized(&self) -> String {
        normalize(&self.0)
    }
}

/// Lowercase with `-` turned into `_`: the one form in which two package
/// names, two account names or two words of a prompt are compared, so
/// `Web-Search` and `web_search` are one. Non-ASCII characters are kept as
/// they are (validated names have none).
pub fn normalize(name: &str) -> String {
    // Bytes for ASCII, not chars: a byte iterator's exact length lets
    // `collect` allocate once instead of growing (the resolver calls this
    // for every requirement it reads).
    if name.is_ascii() {
        return name
            .bytes()
            .map(|b| {
                if b == b'-' {
                    '_'
                } else {
                    char::from(b.to_ascii_lowercase())
                }
            })
            .collect();
    }
    name.chars()
        .map(|c| {
            if c == '-' {
                '_'
            } else {
                c.to_ascii_lowercase()
            }
        })
        .collect()
}

/// Longest account name.
pub const MAX_USERNAME_LEN: usize = 39;

/// An account name: 1 to 39 ASCII letters, digits, `-` or `_`, starting with
/// a letter. Unique in normalized form (case and `-`/`_` folded).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[cfg_attr(feature = "openapi", schema(value_type = String, example = "alice"))]
pub struct Username(String);

impl Username {
    pub fn parse(s: &str) -> Result<Self, String> {
        let first = s.chars().next().ok_or("must not be empty")?;
        if s.len() > MAX_USERNAME_LEN {
            return Err(format!("must be at most {MAX_USERNAME_LEN} characters"));
        }
        if !first.is_ascii_alphabetic() {
            return Err("must start with an ASCII letter".to_owned());
        }
        if let Some(bad) = s
            .chars()
            .find(|c| !(c.is_ascii_alphanumeric() || *c == '-' || *c == '_'))
        {
            return Err(format!(
                "may hold only ASCII letters, digits, '-' and '_', found {bad:?}"
            ));
        }
        Ok(Self(s.to_owned()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The form uniqueness is judged on ([`normalize`]).
    pub fn normalized(&self) -> String {
        normalize(&self.0)
    }
}

impl fmt::Display for Username {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl FromStr for Username {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::parse(s)
    }
}

impl Serialize for Username {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.0)
    }
}

impl<'de> Deserialize<'de> for Username {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        Self::parse(&s).map_err(serde::de::Error::custom)
    }
}

impl fmt::Display for PackageName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl FromStr for PackageName {
    type Err = NameError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::new(s)
    }
}

impl AsRef<str> for PackageName {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

impl Serialize for PackageName {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.0)
    }
}

impl<'de> Deserialize<'de> for PackageName {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        Self::new(s).map_err(serde::de::Error::custom)
    }
}

/// Longest pre-release (`-rc.1`) and longest build metadata (`+sha.abc`)
/// a version may carry, each in bytes without its `-` or `+`. A version
/// reaches log entries, database keys, file names and pages, so it has a
/// bound; with three `u64` numbers it is at most 192 bytes long.
pub const MAX_VERSION_LABEL_LEN: usize = 64;

/// How much of an unreadable version an error quotes.
const QUOTED_VERSION_CHARS: usize = 80;

/// A strict SemVer 2.0 version (no `v` prefix, no missing components),
/// with at most [`MAX_VERSION_LABEL_LEN`] bytes of pre-release and of
/// build metadata.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Version(semver::Version);

impl Version {
    pub fn parse(s: &str) -> Result<Self, NameError> {
        // The labels' lengths are read off the text before it is parsed, so
        // an overlong one is named as such and never copied.
        let (rest, build) = s.split_once('+').unwrap_or((s, ""));
        let pre = rest.split_once('-').map_or("", |(_, pre)| pre);
        check_label("pre-release", pre.len())?;
        check_label("build metadata", build.len())?;
        semver::Version::parse(s).map(Self).map_err(|e| {
            NameError::BadVersion(
                crate::diagnostics::clip(s.to_owned(), QUOTED_VERSION_CHARS),
                e.to_string(),
            )
        })
    }

    /// A version made elsewhere, held to the same bounds as a parsed one.
    pub fn checked(v: semver::Version) -> Result<Self, NameError> {
        check_label("pre-release", v.pre.len())?;
        check_label("build metadata", v.build.len())?;
        Ok(Self(v))
    }

    pub fn semver(&self) -> &semver::Version {
        &self.0
    }

    pub fn is_prerelease(&self) -> bool {
        !self.0.pre.is_empty()
    }
}

/// Longest version requirement (`>=1.2.0-rc.1, <2.0.0`), in bytes: room
/// for two comparators with the longest pre-releases a version may have.
/// Requirements reach the resolver's explanations, locks and pages.
pub const MAX_REQUIREMENT_LEN: usize = 256;

/// A Cargo-style version requirement (`^1.2`, `>=1, <2`; a bare `1.2.0`
/// means `^1.2.0`) of at most [`MAX_REQUIREMENT_LEN`] bytes: the one way
/// untrusted requirement text is read.
pub fn parse_requirement(s: &str) -> Result<semver::VersionReq, NameError> {
    if s.len() > MAX_REQUIREMENT_LEN {
        return Err(NameError::RequirementTooLong(s.len()));
    }
    semver::VersionReq::parse(s).map_err(|e| NameError::BadRequirement(s.to_owned(), e.to_string()))
}

/// `#[serde(deserialize_with)]` for an optional requirement read through
/// [`parse_requirement`].
pub fn deserialize_requirement<'de, D: Deserializer<'de>>(
    d: D,
) -> Result<Option<semver::VersionReq>, D::Error> {
    Option::<String>::deserialize(d)?
        .map(|s| parse_requirement(&s).map_err(serde::de::Error::custom))
        .transpose()
}

fn check_label(part: &'static str, len: usize) -> Result<(), NameError> {
    if len > MAX_VERSION_LABEL_LEN {
        return Err(NameError::VersionLabelTooLong { part, len });
    }
    Ok(())
}

/// For versions that were a [`Version`] before (the resolver works in
/// `semver` types over published versions); anything else goes through
/// [`Version::parse`] or [`Version::checked`].
impl From<semver::Version> for Version {
    fn from(v: semver::Version) -> Self {
        Self(v)
    }
}

impl From<Version> for semver::Version {
    fn from(v: Version) -> Self {
        v.0
    }
}

impl fmt::Display for Version {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

impl FromStr for Version {
    type Err = NameError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::parse(s)
    }
}

impl Serialize for Version {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let v = &self.0;
        if !v.pre.is_empty() || !v.build.is_empty() {
            return s.collect_str(v);
        }
        // A lock spells a version per tool, and through `fmt` they were a
        // large share of a server's rendering of a lock as JSON
        // (`deploy/bench/RESULTS.md`, Decisions).
        let mut text = [0u8; 3 * 20 + 2];
        let mut len = 0;
        for (i, part) in [v.major, v.minor, v.patch].into_iter().enumerate() {
            if i > 0 {
                text[len] = b'.';
                len += 1;
            }
            let mut digits = itoa::Buffer::new();
            let digits = digits.format(part).as_bytes();
            text[len..len + digits.len()].copy_from_slice(digits);
            len += digits.len();
        }
        s.serialize_str(std::str::from_utf8(&text[..len]).unwrap_or_default())
    }
}

impl<'de> Deserialize<'de> for Version {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        Self::parse(&s).map_err(serde::de::Error::custom)
    }
}

/// What a package is. The set is closed in code but open in storage (a text
/// column), so a later kind (skills, say) is a new variant, not a migration.
/// A `protocol` package carries a custom protocol definition
/// (`protocol.yaml`), which agents name as `custom/<name>`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    Agent,
    Tool,
    Protocol,
    /// An Agent Skills folder (`SKILL.md`, scripts, resources).
    Skill,
}

impl Kind {
    pub const ALL: [Kind; 4] = [Kind::Agent, Kind::Tool, Kind::Protocol, Kind::Skill];

    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Agent => "agent",
            Kind::Tool => "tool",
            Kind::Protocol => "protocol",
            Kind::Skill => "skill",
        }
    }

    /// The plural used in URL paths: `/api/v1/agents/...`.
    pub fn plural(self) -> &'static str {
        match self {
            Kind::Agent => "agents",
            Kind::Tool => "tools",
            Kind::Protocol => "protocols",
            Kind::Skill => "skills",
        }
    }

    /// The kind a URL path's plural names (`agents`), and only a plural.
    pub fn from_plural(plural: &str) -> Option<Self> {
        Kind::ALL.into_iter().find(|kind| kind.plural() == plural)
    }

    /// The container file extension, without the dot.
    pub fn extension(self) -> &'static str {
        self.as_str()
    }
}

impl fmt::Display for Kind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Kind {
    type Err = NameError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "agent" | "agents" => Ok(Kind::Agent),
            "tool" | "tools" => Ok(Kind::Tool),
            "protocol" | "protocols" => Ok(Kind::Protocol),
            "skill" | "skills" => Ok(Kind::Skill),
            other => Err(NameError::BadKind(other.to_owned())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_serialize_as_their_semver_spelling() {
        for text in [
            "0.0.0",
            "1.2.3",
            "10.200.3000",
            "18446744073709551615.18446744073709551615.18446744073709551615",
            "1.0.0-rc.1",
            "1.0.0+build.5",
            "2.0.0-alpha.1+sha.abc",
        ] {
            let version = Version::parse(text).unwrap();
            assert_eq!(
                serde_json::to_string(&version).unwrap(),
                format!("{text:?}")
            );
            assert_eq!(version.to_string(), text);
        }
    }

    #[test]
    fn version_labels_are_bounded_at_64_bytes() {
        let at = "a".repeat(MAX_VERSION_LABEL_LEN);
        let over = "a".repeat(MAX_VERSION_LABEL_LEN + 1);
        for ok in [
            format!("1.0.0-{at}"),
            format!("1.0.0+{at}"),
            format!("1.0.0-{at}+{at}"),
        ] {
            let v = Version::parse(&ok).unwrap();
            assert_eq!(
                serde_json::from_str::<Version>(&format!("{ok:?}")).unwrap(),
                v
            );
        }
        let longest =
            format!("18446744073709551615.18446744073709551615.18446744073709551615-{at}+{at}");
        assert_eq!(Version::parse(&longest).unwrap().to_string().len(), 192);
        for (bad, part) in [
            (format!("1.0.0-{over}"), "pre-release"),
            (format!("1.0.0+{over}"), "build metadata"),
            (format!("1.0.0-rc.1+{over}"), "build metadata"),
            (format!("1.0.0-{over}+b"), "pre-release"),
        ] {
            let want = NameError::VersionLabelTooLong {
                part,
                len: MAX_VERSION_LABEL_LEN + 1,
            };
            assert_eq!(Version::parse(&bad), Err(want.clone()), "{bad}");
            let err = serde_json::from_str::<Version>(&format!("{bad:?}")).unwrap_err();
            assert!(err.to_string().contains(&want.to_string()), "{err}");
            let semver = semver::Version::parse(&bad).unwrap();
            assert_eq!(Version::checked(semver), Err(want));
        }
        // The review's 70,000 bytes of build metadata: refused by length,
        // and the message does not repeat them.
        let huge = format!("1.0.0+{}", "x".repeat(70_000));
        let err = Version::parse(&huge).unwrap_err();
        assert!(err.to_string().len() < 200, "{err}");
        let junk = format!("{}.0.0", "9".repeat(10_000));
        assert!(Version::parse(&junk).unwrap_err().to_string().len() < 400);
    }

    #[test]
    fn requirements_are_bounded() {
        let at = format!(">={}", "1".repeat(MAX_REQUIREMENT_LEN - 6)) + ".0.0";
        // At the bound the text is parsed (and here refused for its
        // number); one byte more is refused for its length.
        assert_eq!(at.len(), MAX_REQUIREMENT_LEN);
        assert!(matches!(
            parse_requirement(&at),
            Err(NameError::BadRequirement(..))
        ));
        let fits = format!(">=1.0.0-{0}, <2.0.0-{0}", "a".repeat(64));
        assert!(fits.len() <= MAX_REQUIREMENT_LEN);
        assert!(parse_requirement(&fits).is_ok());
        let over = format!("{at} ");
        assert_eq!(
            parse_requirement(&over),
            Err(NameError::RequirementTooLong(MAX_REQUIREMENT_LEN + 1))
        );
        #[derive(serde::Deserialize)]
        struct Pin {
            #[serde(default, deserialize_with = "deserialize_requirement")]
            requirement: Option<semver::VersionReq>,
        }
        let pin: Pin = serde_json::from_str(r#"{"requirement": "^1.2"}"#).unwrap();
        assert_eq!(pin.requirement.unwrap().to_string(), "^1.2");
        assert!(
            serde_json::from_str::<Pin>(r#"{}"#)
                .unwrap()
                .requirement
                .is_none()
        );
        let long = format!(r#"{{"requirement": "{over}"}}"#);
        assert!(serde_json::from_str::<Pin>(&long).is_err());
    }

    #[test]
    fn names_follow_design_rules() {
        for ok in ["a", "web_search", "Research-Assistant", "x1-2_3"] {
            assert!(PackageName::new(ok).is_ok(), "{ok}");
        }
        assert_eq!(PackageName::new(""), Err(NameError::Empty));
        assert_eq!(PackageName::new("1abc"), Err(NameError::BadStart('1')));
        assert_eq!(PackageName::new("_abc"), Err(NameError::BadStart('_')));
        assert_eq!(PackageName::new("a/b"), Err(NameError::BadChar('/')));
        assert_eq!(PackageName::new("a.b"), Err(NameError::BadChar('.')));
        assert_eq!(PackageName::new("café"), Err(NameError::BadChar('é')));
        assert!(PackageName::new("a".repeat(64)).is_ok());
        assert_eq!(
            PackageName::new("a".repeat(65)),
            Err(NameError::TooLong(65))
        );
    }

    #[test]
    fn look_alike_names_normalize_together() {
        let a = PackageName::new("Web-Search").unwrap();
        let b = PackageName::new("web_search").unwrap();
        assert_ne!(a, b);
        assert_eq!(a.normalized(), b.normalized());
        assert_eq!(a.normalized(), "web_search");
    }

    #[test]
    fn usernames_are_checked() {
        assert!(Username::parse("alice-1").is_ok());
        assert_eq!(Username::parse("").unwrap_err(), "must not be empty");
        assert!(Username::parse("1alice").is_err());
        assert!(Username::parse("al ice").is_err());
        assert!(Username::parse(&"a".repeat(40)).is_err());
        assert!(serde_json::from_str::<Username>("\"../x\"").is_err());
        assert_eq!(Username::parse("Al-Ice").unwrap().normalized(), "al_ice");
    }

    #[test]
    fn normalize_folds_case_and_dashes_only() {
        assert_eq!(normalize("Web-Search_2"), "web_search_2");
        assert_eq!(normalize("Ünï-X"), "Ünï_x");
    }

    #[test]
    fn deserialize_validates() {
        let bad: Result<PackageName, _> = serde_json::from_str("\"../etc\"");
        assert!(bad.is_err());
        let bad: Result<Version, _> = serde_json::from_str("\"1.0\"");
        assert!(bad.is_err());
        let v: Version = serde_json::from_str("\"1.2.3-rc.1+build\"").unwrap();
        assert!(v.is_prerelease());
    }

    #[test]
    fn every_kind_round_trips_through_its_spellings() {
        for kind in Kind::ALL {
            assert_eq!(kind.as_str().parse::<Kind>(), Ok(kind));
            assert_eq!(kind.plural().parse::<Kind>(), Ok(kind));
            let json = serde_json::to_string(&kind).unwrap();
            assert_eq!(json, format!("\"{}\"", kind.as_str()));
            assert_eq!(serde_json::from_str::<Kind>(&json).unwrap(), kind);
        }
        assert_eq!(Kind::Protocol.extension(), "protocol");
        assert_eq!(Kind::Skill.extension(), "skill");
        assert_eq!(
            "widget".parse::<Kind>(),
            Err(NameError::BadKind("widget".into()))
        );
    }
}
