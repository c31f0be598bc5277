//! `manifest.json`: what a container holds, and the exact bytes its
//! signature covers.
//!
//! Serialization is deterministic: fields in a fixed order, files sorted by
//! path, pretty-printed with two-space indents and a final newline (pretty,
//! because people read manifests with `cat` and `openssl` signs whatever bytes
//! we choose). Parsing is strict: duplicate keys, nesting deeper than
//! [`MAX_MANIFEST_DEPTH`], an unknown `format`, unknown fields, unsorted or
//! repeated paths are all refused, so two parsers can never read one manifest
//! two ways.

use std::{cell::Cell, collections::HashSet, fmt};

use serde::{
    Deserialize, Deserializer, Serialize, Serializer,
    de::{self, DeserializeSeed, MapAccess, SeqAccess, Visitor},
};
use time::{
    OffsetDateTime, UtcOffset, format_description::well_known::Rfc3339, macros::format_description,
};

use crate::{
    Kind, MemberPath, PackageName, Version,
    crypt::{ENCRYPTED_SUFFIX, PromptKeyId},
    digest::Sha256Digest,
    signing::KeyId,
};

/// The only `format` this code reads and writes.
pub const FORMAT: &str = "agentlang.container/1";
/// The manifest's own member path.
pub const MANIFEST_PATH: &str = "manifest.json";
/// The signature's member path.
pub const SIGNATURE_PATH: &str = "signature.sig";
/// Deepest nesting of arrays and objects a manifest may use. The format needs
/// three (object, `files` array, file object); the rest is headroom.
pub const MAX_MANIFEST_DEPTH: usize = 8;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ManifestError {
    #[error("manifest.json repeats the key {0:?}")]
    DuplicateKey(String),
    #[error("manifest.json nests deeper than {MAX_MANIFEST_DEPTH} levels")]
    TooDeep,
    #[error("manifest.json has format {0:?}; this version reads only \"{FORMAT}\"")]
    UnknownFormat(String),
    #[error("manifest.json is not valid: {0}")]
    Invalid(String),
    #[error("manifest.json files are not sorted by path, or list {0:?} twice")]
    Unsorted(String),
    #[error("manifest.json lists {0:?}, which is the container's own metadata")]
    ListsReserved(String),
    #[error("manifest.json marks {0:?} encrypted, but encrypted members end in \".enc\"")]
    EncryptedWithoutSuffix(String),
    #[error("manifest.json names a prompt key for {0:?}, which is not encrypted")]
    KeyIdWithoutEncryption(String),
    #[error(
        "{0:?} is not a creation time in RFC 3339 UTC with whole seconds (like 2025-01-29T10:30:00Z)"
    )]
    BadCreated(String),
}

/// When a container was built: UTC, whole seconds, always written as
/// `YYYY-MM-DDTHH:MM:SSZ`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Created(OffsetDateTime);

const CREATED_FORMAT: &[time::format_description::BorrowedFormatItem<'static>] =
    format_description!("[year]-[month]-[day]T[hour]:[minute]:[second]Z");

impl Created {
    /// Converts to UTC and drops sub-second precision, so the manifest (and
    /// with it the container's bytes) depends only on the second.
    pub fn from_datetime(at: OffsetDateTime) -> Self {
        let utc = at.to_offset(UtcOffset::UTC);
        Self(utc.replace_nanosecond(0).unwrap_or(utc))
    }

    /// From seconds since the Unix epoch, as `SOURCE_DATE_EPOCH` gives them.
    pub fn from_unix_seconds(seconds: i64) -> Result<Self, ManifestError> {
        let at = OffsetDateTime::from_unix_timestamp(seconds)
            .map_err(|_| ManifestError::BadCreated(seconds.to_string()))?;
        let created = Self(at);
        // Years outside 0..=9999 do not fit the four-digit form.
        if !(0..=9999).contains(&at.year()) {
            return Err(ManifestError::BadCreated(seconds.to_string()));
        }
        Ok(created)
    }

    pub fn parse(text: &str) -> Result<Self, ManifestError> {
        let bad = || ManifestError::BadCreated(text.to_owned());
        let at = OffsetDateTime::parse(text, &Rfc3339).map_err(|_| bad())?;
        let created = Self(at);
        // Only the canonical spelling is accepted: one manifest, one reading.
        if created.to_string() != text {
            return Err(bad());
        }
        Ok(created)
    }

    pub fn as_datetime(&self) -> OffsetDateTime {
        self.0
    }

    pub fn unix_seconds(&self) -> i64 {
        self.0.unix_timestamp()
    }
}

impl fmt::Display for Created {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let text = self.0.format(CREATED_FORMAT).map_err(|_| fmt::Error)?;
        f.write_str(&text)
    }
}

impl Serialize for Created {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Created {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Self::parse(&String::deserialize(d)?).map_err(de::Error::custom)
    }
}

/// One member the manifest vouches for.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FileEntry {
    pub path: MemberPath,
    pub size: u64,
    pub sha256: Sha256Digest,
    #[serde(default, skip_serializing_if = "is_false")]
    pub encrypted: bool,
    /// For an encrypted member: the id of the key that sealed it, so the
    /// registry can tell which grants open it (absent in containers built
    /// before grants).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key_id: Option<PromptKeyId>,
}

fn is_false(b: &bool) -> bool {
    !*b
}

impl FileEntry {
    pub fn of(path: MemberPath, bytes: &[u8], encrypted: bool) -> Self {
        Self {
            path,
            size: bytes.len() as u64,
            sha256: Sha256Digest::of(bytes),
            encrypted,
            key_id: None,
        }
    }

    /// An encrypted member, sealed by the key `key_id`.
    pub fn sealed(path: MemberPath, bytes: &[u8], key_id: PromptKeyId) -> Self {
        Self {
            key_id: Some(key_id),
            ..Self::of(path, bytes, true)
        }
    }
}

/// The parsed, checked `manifest.json`. `Deserialize` goes through the same
/// checks as [`Manifest::new`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "RawManifest")]
pub struct Manifest {
    format: String,
    kind: Kind,
    name: PackageName,
    version: Version,
    created: Created,
    signer: KeyId,
    files: Vec<FileEntry>,
}

/// The manifest's fields as they appear in JSON, before the checks.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawManifest {
    format: String,
    kind: Kind,
    name: PackageName,
    version: Version,
    created: Created,
    signer: KeyId,
    files: Vec<FileEntry>,
}

impl TryFrom<RawManifest> for Manifest {
    type Error = ManifestError;
    fn try_from(raw: RawManifest) -> Result<Self, ManifestError> {
        if raw.format != FORMAT {
            return Err(ManifestError::UnknownFormat(raw.format));
        }
        let manifest = Self {
            format: raw.format,
            kind: raw.kind,
            name: raw.name,
            version: raw.version,
            created: raw.created,
            signer: raw.signer,
            files: raw.files,
        };
        manifest.check_files()?;
        Ok(manifest)
    }
}

impl Manifest {
    /// Sorts `files` by path and checks them as [`Manifest::parse`] would.
    pub fn new(
        kind: Kind,
        name: PackageName,
        version: Version,
        created: Created,
        signer: KeyId,
        mut files: Vec<FileEntry>,
    ) -> Result<Self, ManifestError> {
        files.sort_by(|a, b| a.path.cmp(&b.path));
        let manifest = Self {
            format: FORMAT.to_owned(),
            kind,
            name,
            version,
            created,
            signer,
            files,
        };
        manifest.check_files()?;
        Ok(manifest)
    }

    /// Parses untrusted bytes strictly (see the module documentation).
    pub fn parse(bytes: &[u8]) -> Result<Self, ManifestError> {
        scan_structure(bytes)?;

        // The format is checked before the fields, so a future format with
        // new fields is reported as what it is.
        #[derive(Deserialize)]
        struct FormatOnly {
            format: Option<String>,
        }
        let probe: FormatOnly =
            serde_json::from_slice(bytes).map_err(|e| ManifestError::Invalid(e.to_string()))?;
        match probe.format {
            Some(format) if format == FORMAT => {}
            Some(other) => return Err(ManifestError::UnknownFormat(other)),
            None => return Err(ManifestError::Invalid("missing field `format`".into())),
        }

        let raw: RawManifest =
            serde_json::from_slice(bytes).map_err(|e| ManifestError::Invalid(e.to_string()))?;
        Self::try_from(raw)
    }

    /// The canonical bytes: the exact input of the signature.
    pub fn to_bytes(&self) -> Vec<u8> {
        // Serializing plain strings, numbers and validated newtypes into a
        // Vec cannot fail.
        let mut bytes =
            serde_json::to_vec_pretty(self).expect("a manifest always serializes to JSON");
        bytes.push(b'\n');
        bytes
    }

    fn check_files(&self) -> Result<(), ManifestError> {
        for pair in self.files.windows(2) {
            if pair[0].path >= pair[1].path {
                return Err(ManifestError::Unsorted(pair[1].path.to_string()));
            }
        }
        for file in &self.files {
            let path = file.path.as_str();
            if path == MANIFEST_PATH || path == SIGNATURE_PATH {
                return Err(ManifestError::ListsReserved(path.to_owned()));
            }
            if file.encrypted && !path.ends_with(ENCRYPTED_SUFFIX) {
                return Err(ManifestError::EncryptedWithoutSuffix(path.to_owned()));
            }
            if file.key_id.is_some() && !file.encrypted {
                return Err(ManifestError::KeyIdWithoutEncryption(path.to_owned()));
            }
        }
        Ok(())
    }

    pub fn format(&self) -> &str {
        &self.format
    }

    pub fn kind(&self) -> Kind {
        self.kind
    }

    pub fn name(&self) -> &PackageName {
        &self.name
    }

    pub fn version(&self) -> &Version {
        &self.version
    }

    pub fn created(&self) -> Created {
        self.created
    }

    pub fn signer(&self) -> &KeyId {
        &self.signer
    }

    /// Every member except `manifest.json` and `signature.sig`, sorted by path.
    pub fn files(&self) -> &[FileEntry] {
        &self.files
    }

    /// An agent's prompt mode: sealed when it holds `prompt.yaml.enc`.
    /// `None` for what is not an agent.
    pub fn prompt_mode(&self) -> Option<crate::grants::PromptMode> {
        use crate::grants::PromptMode;
        (self.kind == Kind::Agent).then(|| {
            if self.file(super::ENCRYPTED_PROMPT_PATH).is_some() {
                PromptMode::Sealed
            } else {
                PromptMode::Open
            }
        })
    }

    /// The id of the key that sealed the prompt, when its builder recorded
    /// it.
    pub fn prompt_key_id(&self) -> Option<&PromptKeyId> {
        self.file(super::ENCRYPTED_PROMPT_PATH)?.key_id.as_ref()
    }

    pub fn file(&self, path: &str) -> Option<&FileEntry> {
        self.files
            .binary_search_by(|f| f.path.as_str().cmp(path))
            .ok()
            .map(|i| &self.files[i])
    }
}

/// What the structural pre-scan found wrong; carried out of serde's error
/// type through a cell so each gets its own [`ManifestError`] variant.
#[derive(Debug)]
enum Violation {
    DuplicateKey(String),
    TooDeep,
}

/// Walks the document once, refusing duplicate keys in any object and
/// nesting deeper than [`MAX_MANIFEST_DEPTH`], before serde_json's typed
/// pass (which would keep the last of two duplicate keys in untyped places
/// and recurse up to 128 levels).
fn scan_structure(bytes: &[u8]) -> Result<(), ManifestError> {
    let violation = Cell::new(None);
    let mut de = serde_json::Deserializer::from_slice(bytes);
    let result = Scan {
        depth: 0,
        violation: &violation,
    }
    .deserialize(&mut de)
    .and_then(|()| de.end());
    match (violation.take(), result) {
        (Some(Violation::DuplicateKey(key)), _) => Err(ManifestError::DuplicateKey(key)),
        (Some(Violation::TooDeep), _) => Err(ManifestError::TooDeep),
        (None, Err(e)) => Err(ManifestError::Invalid(e.to_string())),
        (None, Ok(())) => Ok(()),
    }
}

#[derive(Clone, Copy)]
struct Scan<'a> {
    depth: usize,
    violation: &'a Cell<Option<Violation>>,
}

impl Scan<'_> {
    fn nested<E: de::Error>(self) -> Result<Self, E> {
        if self.depth >= MAX_MANIFEST_DEPTH {
            self.violation.set(Some(Violation::TooDeep));
            return Err(E::custom("nesting too deep"));
        }
        Ok(Self {
            depth: self.depth + 1,
            ..self
        })
    }
}

impl<'de> DeserializeSeed<'de> for Scan<'_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Scan<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_bool<E>(self, _: bool) -> Result<(), E> {
        Ok(())
    }
    fn visit_i64<E>(self, _: i64) -> Result<(), E> {
        Ok(())
    }
    fn visit_u64<E>(self, _: u64) -> Result<(), E> {
        Ok(())
    }
    fn visit_f64<E>(self, _: f64) -> Result<(), E> {
        Ok(())
    }
    fn visit_str<E>(self, _: &str) -> Result<(), E> {
        Ok(())
    }
    fn visit_unit<E>(self) -> Result<(), E> {
        Ok(())
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let inner = self.nested()?;
        while seq.next_element_seed(inner)?.is_some() {}
        Ok(())
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let inner = self.nested()?;
        let mut seen = HashSet::new();
        while let Some(key) = map.next_key::<String>()? {
            if !seen.insert(key.clone()) {
                self.violation.set(Some(Violation::DuplicateKey(key)));
                return Err(de::Error::custom("duplicate key"));
            }
            map.next_value_seed(inner)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Manifest {
        Manifest::new(
            Kind::Agent,
            PackageName::new("research-assistant").unwrap(),
            Version::parse("1.0.0").unwrap(),
            Created::parse("2025-01-29T10:30:00Z").unwrap(),
            KeyId::new("ab".repeat(32)).unwrap(),
            vec![
                FileEntry::of(MemberPath::new("prompt.yaml.enc").unwrap(), b"x", true),
                FileEntry::of(MemberPath::new("agent.yaml").unwrap(), b"name: x\n", false),
            ],
        )
        .unwrap()
    }

    #[test]
    fn serializes_canonically() {
        let bytes = sample().to_bytes();
        insta::assert_snapshot!(String::from_utf8(bytes.clone()).unwrap());
        assert_eq!(Manifest::parse(&bytes).unwrap(), sample());
    }

    fn with(text: &str) -> Result<Manifest, ManifestError> {
        Manifest::parse(text.as_bytes())
    }

    fn sample_json() -> String {
        String::from_utf8(sample().to_bytes()).unwrap()
    }

    #[test]
    fn duplicate_keys_are_refused() {
        let text = sample_json().replacen(
            "\"kind\": \"agent\",",
            "\"kind\": \"agent\",\n  \"kind\": \"tool\",",
            1,
        );
        assert_eq!(with(&text), Err(ManifestError::DuplicateKey("kind".into())));
        let text = sample_json().replacen("\"size\": 8,", "\"size\": 8, \"size\": 9,", 1);
        assert_eq!(with(&text), Err(ManifestError::DuplicateKey("size".into())));
    }

    #[test]
    fn deep_nesting_is_refused() {
        let deep = format!("{}{}", "[".repeat(9), "]".repeat(9));
        let text = sample_json().replacen("\"files\"", &format!("\"x\": {deep},\n  \"files\""), 1);
        assert_eq!(with(&text), Err(ManifestError::TooDeep));
        // Far past serde_json's own recursion limit: still our error.
        let deeper = format!("{}{}", "[".repeat(10_000), "]".repeat(10_000));
        assert_eq!(with(&deeper), Err(ManifestError::TooDeep));
    }

    #[test]
    fn unknown_format_and_fields_are_refused() {
        let text = sample_json().replace(FORMAT, "agentlang.container/2");
        assert_eq!(
            with(&text),
            Err(ManifestError::UnknownFormat("agentlang.container/2".into()))
        );
        let text = sample_json().replacen("\"files\"", "\"extra\": 1,\n  \"files\"", 1);
        assert!(matches!(with(&text), Err(ManifestError::Invalid(m)) if m.contains("extra")));
        let text = sample_json().replacen("\"size\": 8,", "\"size\": 8, \"mode\": 420,", 1);
        assert!(matches!(with(&text), Err(ManifestError::Invalid(m)) if m.contains("mode")));
        assert!(matches!(with("{}"), Err(ManifestError::Invalid(_))));
        assert!(matches!(
            with(&format!("{} x", sample_json())),
            Err(ManifestError::Invalid(_))
        ));
    }

    #[test]
    fn file_list_rules() {
        let swapped = {
            let m = sample();
            let mut files = m.files().to_vec();
            files.reverse();
            let mut value = serde_json::to_value(&m).unwrap();
            value["files"] = serde_json::to_value(files).unwrap();
            serde_json::to_string(&value).unwrap()
        };
        assert_eq!(
            with(&swapped),
            Err(ManifestError::Unsorted("agent.yaml".into()))
        );
        let reserved = sample_json().replace("agent.yaml", "manifest.json");
        assert_eq!(
            with(&reserved),
            Err(ManifestError::ListsReserved("manifest.json".into()))
        );
        let plain = sample_json().replace("prompt.yaml.enc", "prompt.yaml");
        assert_eq!(
            with(&plain),
            Err(ManifestError::EncryptedWithoutSuffix("prompt.yaml".into()))
        );
        let climbing = sample_json().replace("agent.yaml", "../agent.yaml");
        assert!(matches!(with(&climbing), Err(ManifestError::Invalid(_))));
    }

    #[test]
    fn created_is_canonical_utc() {
        assert_eq!(
            Created::from_unix_seconds(1_738_146_600)
                .unwrap()
                .to_string(),
            "2025-01-29T10:30:00Z"
        );
        for bad in [
            "2025-01-29T10:30:00+00:00",
            "2025-01-29T11:30:00+01:00",
            "2025-01-29T10:30:00.5Z",
            "2025-01-29t10:30:00z",
            "yesterday",
        ] {
            assert_eq!(
                Created::parse(bad),
                Err(ManifestError::BadCreated(bad.into())),
                "{bad}"
            );
        }
        let odd = OffsetDateTime::parse("2025-01-29T11:30:00.75+01:00", &Rfc3339).unwrap();
        assert_eq!(
            Created::from_datetime(odd).to_string(),
            "2025-01-29T10:30:00Z"
        );
    }
}
