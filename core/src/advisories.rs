//! Security advisories in the OSV format (docs/advisories.md): an advisory
//! read from untrusted bytes behind limits, held to the OSV JSON Schema and
//! to the registry's own rules (ids, how a package is named, SemVer
//! ranges, a severity level), and the one answer to which versions it
//! affects ([`Advisory::affects`]).
//!
//! The schema is [`OSV_SCHEMA`], vendored unedited from `ossf/osv-schema`
//! (`validation/schema.json` at commit
//! `51b8156b69b9e2e9ff2301e649db61636067fcfa`, v1.7.5 plus later
//! additions of ecosystems and prefixes; the file last changed in
//! `2a6a0b9b0ccd8b91eeec05081b2642f53cfbe81e`). CI checks served
//! advisories against the same file with `check-jsonschema`.
//!
//! The schema's ecosystems are a closed list, and AgentLang is not on it,
//! so an `affected[].package` naming an AgentLang package cannot be valid
//! OSV. An affected entry names its package in
//! `affected[].database_specific.package` (`tool/web_fetch`) instead and
//! carries no `package` ([`PACKAGE_KEY`]).

use std::{collections::BTreeSet, fmt, str::FromStr, sync::OnceLock};

use jsonschema::{ValidationError, Validator, error::ValidationErrorKind};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value as Json};
use time::{OffsetDateTime, format_description::well_known::Rfc3339};

use crate::{
    Kind, PackageName, Version,
    diagnostics::{index, join},
    json_schema::dotted,
};

/// The OSV JSON Schema (draft 2020-12), as vendored.
pub const OSV_SCHEMA: &str = include_str!("../schemas/osv-schema.json");

/// The `schema_version` the registry writes into an advisory posted
/// without one: the release the vendored schema belongs to.
pub const SCHEMA_VERSION: &str = "1.7.5";

/// Largest advisory document, in bytes.
pub const MAX_DOCUMENT_BYTES: usize = 64 * 1024;
/// Most entries of `affected`.
pub const MAX_AFFECTED: usize = 64;
/// Most `ranges` of one affected entry.
pub const MAX_RANGES: usize = 16;
/// Most `events` of one range.
pub const MAX_EVENTS: usize = 32;
/// Most `versions` of one affected entry.
pub const MAX_VERSIONS: usize = 256;
/// Most entries of `references`, `aliases`, `related`, `upstream`,
/// `credits` and `severity`, each.
pub const MAX_LIST_ITEMS: usize = 64;

/// The registry's own id prefix: ids it assigns are
/// `x_AGENTLANG-<year>-<number, at least 4 digits>`. OSV reserves `x_`
/// for databases that osv.dev does not aggregate.
pub const ID_PREFIX: &str = "x_AGENTLANG-";
/// The id to post (or leave `id` out) for the registry to assign one.
pub const ID_PLACEHOLDER: &str = "x_AGENTLANG-NEW";
/// Longest advisory id.
pub const MAX_ID_LEN: usize = 64;

/// The key of `affected[].database_specific` naming the package,
/// `<kind>/<name>`.
pub const PACKAGE_KEY: &str = "package";

// ------------------------------------------------------------------- ids

/// An advisory's id: `x_` and then letters, digits, `.`, `_` or `-`
/// (the schema's local-database prefix), never [`ID_PLACEHOLDER`].
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct AdvisoryId(String);

impl AdvisoryId {
    pub fn parse(s: &str) -> Result<Self, String> {
        let Some(rest) = s.strip_prefix("x_") else {
            return Err(format!(
                "must start with \"x_\" (the registry's own ids are {ID_PREFIX}<year>-<number>; \
                 other databases' ids such as CVE or GHSA belong in \"aliases\")"
            ));
        };
        if s.len() > MAX_ID_LEN {
            return Err(format!("must be at most {MAX_ID_LEN} characters"));
        }
        if rest.is_empty() || !rest.starts_with(|c: char| c.is_ascii_alphanumeric()) {
            return Err("must have a letter or digit after \"x_\"".to_owned());
        }
        if !rest
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
        {
            return Err("may hold only ASCII letters, digits, '.', '_' and '-'".to_owned());
        }
        if s == ID_PLACEHOLDER {
            return Err("is the placeholder that asks the registry for an id".to_owned());
        }
        Ok(Self(s.to_owned()))
    }

    /// The registry's `number`th id of `year`.
    pub fn assigned(year: i32, number: u32) -> Self {
        Self(format!("{ID_PREFIX}{year}-{number:04}"))
    }

    /// The number of an id the registry assigned in `year`.
    pub fn assigned_number(&self, year: i32) -> Option<u32> {
        let rest = self.0.strip_prefix(ID_PREFIX)?;
        let number = rest.strip_prefix(&format!("{year}-"))?;
        if number.len() < 4 || !number.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        number.parse().ok()
    }

    /// Whether the id is in the registry's own series (which only the
    /// registry assigns).
    pub fn is_registry_series(&self) -> bool {
        self.0.starts_with(ID_PREFIX)
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for AdvisoryId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl FromStr for AdvisoryId {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        Self::parse(s)
    }
}

impl Serialize for AdvisoryId {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.0)
    }
}

impl<'de> Deserialize<'de> for AdvisoryId {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Self::parse(&String::deserialize(d)?).map_err(serde::de::Error::custom)
    }
}

// -------------------------------------------------------------- severity

/// An advisory's severity level, as npm names them, from its
/// `database_specific.severity` (the spelling GitHub's advisories use:
/// `LOW`, `MODERATE`, `HIGH`, `CRITICAL`, any case).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    Low,
    Moderate,
    High,
    Critical,
}

impl Severity {
    pub const ALL: [Severity; 4] = [
        Severity::Low,
        Severity::Moderate,
        Severity::High,
        Severity::Critical,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Low => "low",
            Severity::Moderate => "moderate",
            Severity::High => "high",
            Severity::Critical => "critical",
        }
    }
}

impl fmt::Display for Severity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Severity {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        Severity::ALL
            .into_iter()
            .find(|l| l.as_str().eq_ignore_ascii_case(s))
            .ok_or_else(|| format!("{s:?} is not one of low, moderate, high, critical"))
    }
}

// ------------------------------------------------------------------ model

/// One event of a SemVer range.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event {
    /// `introduced`; `None` is `"0"`, before every version.
    Introduced(Option<Version>),
    Fixed(Version),
    LastAffected(Version),
    Limit(Version),
}

impl Event {
    /// Where the event sits in the order of versions (`"0"` first).
    fn at(&self) -> Option<&Version> {
        match self {
            Event::Introduced(v) => v.as_ref(),
            Event::Fixed(v) | Event::LastAffected(v) | Event::Limit(v) => Some(v),
        }
    }
}

/// One `affected` entry: the package and what of it is affected.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Affected {
    pub kind: Kind,
    pub name: PackageName,
    /// Each range's events, sorted by version.
    pub ranges: Vec<Vec<Event>>,
    pub versions: Vec<Version>,
}

impl Affected {
    /// OSV's evaluation of SEMVER ranges: a version is affected when a
    /// listed version equals it, or when, walking a range's events in
    /// version order, the last that applies to it is an `introduced`
    /// (a `fixed` applies from its version on, a `last_affected` after
    /// its version). Versions at or above a `limit` are outside that range.
    pub fn affects(&self, version: &Version) -> bool {
        self.versions.iter().any(|v| v == version)
            || self
                .ranges
                .iter()
                .any(|events| range_affects(events, version))
    }
}

fn range_affects(events: &[Event], version: &Version) -> bool {
    let v = version.semver();
    if events
        .iter()
        .any(|e| matches!(e, Event::Limit(limit) if v.cmp_precedence(limit.semver()).is_ge()))
    {
        return false;
    }
    let mut affected = false;
    for event in events {
        match event {
            Event::Introduced(None) => affected = true,
            Event::Introduced(Some(at)) if v.cmp_precedence(at.semver()).is_ge() => {
                affected = true;
            }
            Event::Fixed(at) if v.cmp_precedence(at.semver()).is_ge() => affected = false,
            Event::LastAffected(at) if v.cmp_precedence(at.semver()).is_gt() => affected = false,
            _ => {}
        }
    }
    affected
}

/// A problem of a posted advisory, at its path (`affected[0].ranges[0]`;
/// empty for the document itself).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    pub path: String,
    pub message: String,
}

impl Problem {
    fn new(path: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            path: path.into(),
            message: message.into(),
        }
    }
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.path.is_empty() {
            f.write_str(&self.message)
        } else {
            write!(f, "{}: {}", self.path, self.message)
        }
    }
}

/// A valid advisory: its document and what the registry reads of it.
#[derive(Debug, Clone)]
pub struct Advisory {
    /// `None`: posted without an id (or with [`ID_PLACEHOLDER`]), for the
    /// registry to assign one ([`Advisory::with_id`]).
    pub id: Option<AdvisoryId>,
    pub modified: OffsetDateTime,
    /// `withdrawn`, as written.
    pub withdrawn: Option<String>,
    pub summary: Option<String>,
    pub severity: Severity,
    pub affected: Vec<Affected>,
    document: Map<String, Json>,
}

impl Advisory {
    /// Reads an advisory from untrusted bytes: at most
    /// [`MAX_DOCUMENT_BYTES`], a JSON object within the counts above,
    /// valid against the OSV schema, and by the registry's rules: an id as
    /// [`AdvisoryId`] says (or none, for the registry to assign), every
    /// affected entry naming an AgentLang package in
    /// `database_specific.package` with `SEMVER` ranges and SemVer
    /// versions, and a severity level. Every problem at once.
    pub fn parse(bytes: &[u8]) -> Result<Self, Vec<Problem>> {
        if bytes.len() > MAX_DOCUMENT_BYTES {
            return Err(vec![Problem::new(
                "",
                format!("the advisory is larger than {MAX_DOCUMENT_BYTES} bytes"),
            )]);
        }
        let value: Json = serde_json::from_slice(bytes)
            .map_err(|e| vec![Problem::new("", format!("not JSON: {e}"))])?;
        let Json::Object(posted) = value else {
            return Err(vec![Problem::new(
                "",
                "must be a JSON object (one OSV advisory)",
            )]);
        };
        let mut problems = bounds(&posted);
        if !problems.is_empty() {
            return Err(problems);
        }
        // An id left out (or the placeholder) is the registry's to assign:
        // the document is checked with the placeholder in its place.
        let id = match posted.get("id") {
            None => None,
            Some(Json::String(s)) if s == ID_PLACEHOLDER => None,
            Some(Json::String(s)) => match AdvisoryId::parse(s) {
                Ok(id) => Some(id),
                Err(e) => {
                    problems.push(Problem::new("id", e));
                    None
                }
            },
            Some(_) => None, // the schema says what is wrong
        };
        let mut document = Map::new();
        document.insert(
            "id".to_owned(),
            posted
                .get("id")
                .cloned()
                .unwrap_or_else(|| Json::String(ID_PLACEHOLDER.to_owned())),
        );
        for (k, v) in posted {
            if k != "id" {
                document.insert(k, v);
            }
        }
        if !document.contains_key("schema_version") {
            document.insert(
                "schema_version".to_owned(),
                Json::String(SCHEMA_VERSION.to_owned()),
            );
        }
        let as_json = Json::Object(document);
        problems.extend(
            validator()
                .iter_errors(&as_json)
                .flat_map(|e| explain(&e))
                .map(|(path, message)| Problem::new(path, message)),
        );
        let Json::Object(document) = as_json else {
            unreachable!("built as an object above")
        };
        let modified = timestamp(&document, "modified", &mut problems);
        let withdrawn = document
            .get("withdrawn")
            .and_then(Json::as_str)
            .map(str::to_owned);
        let summary = document
            .get("summary")
            .and_then(Json::as_str)
            .map(str::to_owned);
        let severity = severity_level(&document, &mut problems);
        let affected = affected_entries(&document, &mut problems);
        problems.sort_by(|a, b| a.path.cmp(&b.path));
        problems.dedup();
        match (problems.is_empty(), modified, severity) {
            (true, Some(modified), Some(severity)) => Ok(Self {
                id,
                modified,
                withdrawn,
                summary,
                severity,
                affected,
                document,
            }),
            _ => Err(problems),
        }
    }

    /// The advisory under `id` (the registry's assigned one).
    pub fn with_id(mut self, id: AdvisoryId) -> Self {
        self.document
            .insert("id".to_owned(), Json::String(id.as_str().to_owned()));
        self.id = Some(id);
        self
    }

    /// `modified` as written (RFC 3339, UTC).
    pub fn modified_text(&self) -> &str {
        self.document
            .get("modified")
            .and_then(Json::as_str)
            .unwrap_or_default()
    }

    /// The document as the registry serves it: compact JSON, keys in the
    /// order posted (`id` first).
    pub fn to_bytes(&self) -> Vec<u8> {
        serde_json::to_vec(&self.document).expect("a JSON map serializes")
    }

    pub fn document(&self) -> &Map<String, Json> {
        &self.document
    }

    /// The packages it names, `(kind, normalized name)`, each once.
    pub fn packages(&self) -> BTreeSet<(Kind, String)> {
        self.affected
            .iter()
            .map(|a| (a.kind, a.name.normalized()))
            .collect()
    }

    /// Whether it affects `kind` `name` at `version` (a withdrawn advisory
    /// affects nothing).
    pub fn affects(&self, kind: Kind, name: &PackageName, version: &Version) -> bool {
        let normalized = name.normalized();
        self.withdrawn.is_none()
            && self
                .affected
                .iter()
                .filter(|a| a.kind == kind && a.name.normalized() == normalized)
                .any(|a| a.affects(version))
    }
}

/// Every array over its count, before anything costlier looks at it.
fn bounds(document: &Map<String, Json>) -> Vec<Problem> {
    let mut problems = Vec::new();
    let mut over = |path: &str, value: Option<&Json>, max: usize| {
        if let Some(Json::Array(items)) = value
            && items.len() > max
        {
            problems.push(Problem::new(path, format!("must hold at most {max} items")));
        }
    };
    for key in [
        "aliases",
        "related",
        "upstream",
        "credits",
        "severity",
        "references",
    ] {
        over(key, document.get(key), MAX_LIST_ITEMS);
    }
    over("affected", document.get("affected"), MAX_AFFECTED);
    if let Some(Json::Array(affected)) = document.get("affected") {
        for (i, entry) in affected.iter().take(MAX_AFFECTED).enumerate() {
            let at = index("affected", i);
            over(&join(&at, "ranges"), entry.get("ranges"), MAX_RANGES);
            over(&join(&at, "versions"), entry.get("versions"), MAX_VERSIONS);
            over(
                &join(&at, "severity"),
                entry.get("severity"),
                MAX_LIST_ITEMS,
            );
            if let Some(Json::Array(ranges)) = entry.get("ranges") {
                for (r, range) in ranges.iter().take(MAX_RANGES).enumerate() {
                    let at = index(&join(&at, "ranges"), r);
                    over(&join(&at, "events"), range.get("events"), MAX_EVENTS);
                }
            }
        }
    }
    problems
}

fn timestamp(
    document: &Map<String, Json>,
    key: &str,
    problems: &mut Vec<Problem>,
) -> Option<OffsetDateTime> {
    let text = document.get(key)?.as_str()?;
    match OffsetDateTime::parse(text, &Rfc3339) {
        Ok(t) if text.ends_with('Z') => Some(t),
        _ => {
            problems.push(Problem::new(
                key,
                "must be an RFC 3339 time in UTC, ending in Z",
            ));
            None
        }
    }
}

fn severity_level(document: &Map<String, Json>, problems: &mut Vec<Problem>) -> Option<Severity> {
    let path = "database_specific.severity";
    match document
        .get("database_specific")
        .and_then(|d| d.get("severity"))
    {
        Some(Json::String(s)) => match s.parse() {
            Ok(level) => Some(level),
            Err(e) => {
                problems.push(Problem::new(path, e));
                None
            }
        },
        Some(_) => {
            problems.push(Problem::new(path, "must be a string"));
            None
        }
        None => {
            problems.push(Problem::new(
                path,
                "is required: the advisory's level, one of low, moderate, high, critical",
            ));
            None
        }
    }
}

fn affected_entries(document: &Map<String, Json>, problems: &mut Vec<Problem>) -> Vec<Affected> {
    let Some(Json::Array(entries)) = document.get("affected") else {
        problems.push(Problem::new(
            "affected",
            "is required: the packages the advisory affects",
        ));
        return Vec::new();
    };
    if entries.is_empty() {
        problems.push(Problem::new("affected", "must name at least one package"));
    }
    let mut affected = Vec::new();
    for (i, entry) in entries.iter().enumerate() {
        let at = index("affected", i);
        if let Some(a) = affected_entry(entry, &at, problems) {
            affected.push(a);
        }
    }
    affected
}

fn affected_entry(entry: &Json, at: &str, problems: &mut Vec<Problem>) -> Option<Affected> {
    let before = problems.len();
    if entry.get("package").is_some() {
        problems.push(Problem::new(
            join(at, "package"),
            "AgentLang is not one of OSV's ecosystems, so no `package` can name one validly: \
             name the package in database_specific.package (`tool/web_fetch`)",
        ));
    }
    let package_at = join(&join(at, "database_specific"), PACKAGE_KEY);
    let package = match entry
        .get("database_specific")
        .and_then(|d| d.get(PACKAGE_KEY))
    {
        Some(Json::String(s)) => match parse_package(s) {
            Ok(p) => Some(p),
            Err(e) => {
                problems.push(Problem::new(&package_at, e));
                None
            }
        },
        _ => {
            problems.push(Problem::new(
                &package_at,
                "is required: the package as <kind>/<name>, e.g. tool/web_fetch",
            ));
            None
        }
    };
    let mut ranges = Vec::new();
    if let Some(Json::Array(items)) = entry.get("ranges") {
        for (r, range) in items.iter().enumerate() {
            let range_at = index(&join(at, "ranges"), r);
            if let Some(events) = semver_range(range, &range_at, problems) {
                ranges.push(events);
            }
        }
    }
    let mut versions = Vec::new();
    if let Some(Json::Array(items)) = entry.get("versions") {
        for (v, item) in items.iter().enumerate() {
            if let Some(text) = item.as_str() {
                match Version::parse(text) {
                    Ok(version) => versions.push(version),
                    Err(e) => problems.push(Problem::new(
                        index(&join(at, "versions"), v),
                        format!("not a SemVer version: {e}"),
                    )),
                }
            }
        }
    }
    if ranges.is_empty() && versions.is_empty() && problems.len() == before {
        problems.push(Problem::new(
            at,
            "must say what is affected: `ranges` or `versions`",
        ));
    }
    let (kind, name) = package?;
    (problems.len() == before).then_some(Affected {
        kind,
        name,
        ranges,
        versions,
    })
}

/// `<kind>/<name>`: `tool/web_fetch`.
pub fn parse_package(s: &str) -> Result<(Kind, PackageName), String> {
    let (kind, name) = s
        .split_once('/')
        .ok_or_else(|| format!("{s:?} is not <kind>/<name>, e.g. tool/web_fetch"))?;
    let kind: Kind = kind.parse().map_err(|e: crate::NameError| e.to_string())?;
    let name = PackageName::new(name).map_err(|e| e.to_string())?;
    Ok((kind, name))
}

fn semver_range(range: &Json, at: &str, problems: &mut Vec<Problem>) -> Option<Vec<Event>> {
    match range.get("type").and_then(Json::as_str) {
        Some("SEMVER") => {}
        Some(other) => {
            problems.push(Problem::new(
                join(at, "type"),
                format!("must be SEMVER (AgentLang versions are SemVer), not {other}"),
            ));
            return None;
        }
        None => return None, // the schema says what is wrong
    }
    let Some(Json::Array(items)) = range.get("events") else {
        return None;
    };
    let before = problems.len();
    let mut events = Vec::new();
    for (e, item) in items.iter().enumerate() {
        let event_at = index(&join(at, "events"), e);
        let Some(object) = item.as_object() else {
            continue;
        };
        let keys: Vec<&str> = ["introduced", "fixed", "last_affected", "limit"]
            .into_iter()
            .filter(|k| object.contains_key(*k))
            .collect();
        let [key] = keys[..] else {
            problems.push(Problem::new(
                &event_at,
                "must hold exactly one of introduced, fixed, last_affected, limit",
            ));
            continue;
        };
        let Some(text) = object[key].as_str() else {
            continue;
        };
        if key == "introduced" && text == "0" {
            events.push(Event::Introduced(None));
            continue;
        }
        let version = match Version::parse(text) {
            Ok(v) => v,
            Err(e) => {
                problems.push(Problem::new(
                    join(&event_at, key),
                    format!("not a SemVer version: {e}"),
                ));
                continue;
            }
        };
        events.push(match key {
            "introduced" => Event::Introduced(Some(version)),
            "fixed" => Event::Fixed(version),
            "last_affected" => Event::LastAffected(version),
            _ => Event::Limit(version),
        });
    }
    if !events.iter().any(|e| matches!(e, Event::Introduced(_))) && problems.len() == before {
        problems.push(Problem::new(
            join(at, "events"),
            "must hold an introduced event",
        ));
    }
    if problems.len() != before {
        return None;
    }
    // `"0"` first, then by precedence; at one version, `introduced` first.
    events.sort_by(|a, b| match (a.at(), b.at()) {
        (None, None) => std::cmp::Ordering::Equal,
        (None, Some(_)) => std::cmp::Ordering::Less,
        (Some(_), None) => std::cmp::Ordering::Greater,
        (Some(x), Some(y)) => x.semver().cmp_precedence(y.semver()).then_with(|| {
            let first = |e: &Event| !matches!(e, Event::Introduced(_));
            first(a).cmp(&first(b))
        }),
    });
    Some(events)
}

// ---------------------------------------------------------------- schema

/// The vendored schema, compiled once, formats included (as
/// `check-jsonschema` checks them).
fn validator() -> &'static Validator {
    static VALIDATOR: OnceLock<Validator> = OnceLock::new();
    VALIDATOR.get_or_init(|| {
        let schema: Json = serde_json::from_str(OSV_SCHEMA).expect("the vendored schema is JSON");
        jsonschema::options()
            .should_validate_formats(true)
            .build(&schema)
            .expect("the vendored schema compiles")
    })
}

/// An error at its path; for a `oneOf`/`anyOf` that no branch matched, the
/// errors of the closest branch (an event with a misspelt key is one
/// problem, not four).
fn explain(error: &ValidationError<'_>) -> Vec<(String, String)> {
    let branches = match error.kind() {
        ValidationErrorKind::AnyOf { context } | ValidationErrorKind::OneOfNotValid { context } => {
            Some(context)
        }
        _ => None,
    };
    if let Some(branch) =
        branches.and_then(|b| b.iter().filter(|b| !b.is_empty()).min_by_key(|b| b.len()))
    {
        return branch.iter().flat_map(|e| explain(e)).collect();
    }
    vec![(
        dotted("", error.instance_path().segments()),
        error.masked().to_string(),
    )]
}
