//! `.agent` and `.tool` containers: a deterministic gzip-compressed POSIX tar
//! holding `manifest.json`, `signature.sig` and the payload.
//!
//! - [`build`] turns a package directory ([`SourceTree`](crate::SourceTree))
//!   into container bytes: it encrypts `prompt.yaml` into `prompt.yaml.enc`
//!   (the only prompt file the specification names; a subagent's prompt lives
//!   inside its own yaml), lists every other member with its size and SHA-256
//!   in the manifest, signs the manifest's exact bytes and packs.
//! - [`read`] streams untrusted container bytes once, bounded by [`Limits`],
//!   never touching a disk: every member is hashed as it passes, only small
//!   metadata members are kept (see [`is_kept_member`]), and everything is
//!   compared with the manifest at the end.
//! - [`Container::verify_signature`] is a separate step, because the registry
//!   must first look the signer's key up by the manifest's key id.

mod build;
mod manifest;
mod pack;
mod read;

pub use build::{BuildInput, build};
pub use manifest::{
    Created, FORMAT, FileEntry, MANIFEST_PATH, MAX_MANIFEST_DEPTH, Manifest, ManifestError,
    SIGNATURE_PATH,
};
pub use read::{Container, ReadError, read, read_checked, unpack};

use std::collections::HashMap;

use serde::Deserialize;

use crate::{
    Kind, MemberPath, PackageName, Version,
    crypt::CryptError,
    signing::{KeyId, SigningError},
    tree::PathError,
    yaml::{YamlError, YamlLimits},
};

/// The plaintext prompt member that [`build`] encrypts.
pub const PROMPT_PATH: &str = "prompt.yaml";
/// Where the encrypted prompt goes.
pub const ENCRYPTED_PROMPT_PATH: &str = "prompt.yaml.enc";

/// Bounds on one container read. The defaults fit any real agent or tool
/// with a wide margin; the registry may lower them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Tar headers of any type, PAX headers included.
    pub max_entries: usize,
    /// Bytes of the compressed container.
    pub max_compressed_bytes: u64,
    /// Bytes of the tar stream inside the gzip.
    pub max_uncompressed_bytes: u64,
    /// Largest uncompressed/compressed ratio tolerated once
    /// `ratio_grace_bytes` have been decompressed.
    pub max_ratio: u64,
    /// Decompressed bytes before the ratio is checked: tiny inputs have
    /// meaningless ratios (a 1 KiB gzip header and buffer read-ahead).
    pub ratio_grace_bytes: u64,
    /// Largest member kept in memory (manifest, signature, yaml, SKILL.md,
    /// README.md); a larger one of those names is refused.
    pub max_kept_member_bytes: u64,
    /// Bytes of all kept members together: what one container may make its
    /// reader hold in memory, whatever the compressed and decompressed
    /// limits allow.
    pub max_kept_total_bytes: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_entries: 10_000,
            max_compressed_bytes: 64 * 1024 * 1024,
            max_uncompressed_bytes: 256 * 1024 * 1024,
            max_ratio: 100,
            ratio_grace_bytes: 1024 * 1024,
            max_kept_member_bytes: 1024 * 1024,
            max_kept_total_bytes: 8 * 1024 * 1024,
        }
    }
}

/// Every way a container can be refused, each with its own variant so the
/// registry can answer precisely and tests can tell them apart.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ContainerError {
    #[error("reading the container failed: {0}")]
    Io(String),
    #[error("not a gzip file")]
    NotGzip,
    #[error("gzip stream is truncated")]
    TruncatedGzip,
    #[error("gzip stream is corrupt: {0}")]
    Gzip(String),
    #[error("bytes follow the end of the gzip stream")]
    TrailingGarbage,
    #[error("tar archive is truncated")]
    TruncatedTar,
    #[error("non-zero bytes follow the end of the tar archive")]
    DataAfterTarEnd,
    #[error("tar archive is malformed: {0}")]
    Tar(String),
    #[error("more than {limit} tar entries")]
    TooManyEntries { limit: usize },
    #[error("container is larger than {limit} bytes")]
    CompressedTooLarge { limit: u64 },
    #[error("container unpacks to more than {limit} bytes")]
    UncompressedTooLarge { limit: u64 },
    #[error("container compresses better than {limit}:1, refused as a possible gzip bomb")]
    RatioTooHigh { limit: u64 },
    #[error("member path {0:?} is not UTF-8")]
    NonUtf8Path(String),
    #[error("member path {0:?} is absolute")]
    AbsolutePath(String),
    #[error("member path {0:?} climbs out with '..'")]
    ParentDirPath(String),
    #[error("member path {path:?} is not allowed: {source}")]
    InvalidPath { path: String, source: PathError },
    #[error("member {0:?} is a symbolic link; containers hold regular files only")]
    Symlink(String),
    #[error("member {0:?} is a hard link; containers hold regular files only")]
    Hardlink(String),
    #[error("member {path:?} is a {entry_type}; containers hold regular files only")]
    NotRegularFile { path: String, entry_type: String },
    #[error("PAX header refused: {0}")]
    PaxHeader(String),
    #[error("member {path:?}: PAX size {pax} disagrees with header size {header}")]
    PaxSizeMismatch { path: String, header: u64, pax: u64 },
    #[error("member {0:?} appears twice")]
    DuplicateMember(String),
    #[error("members {path:?} and {other:?} differ only in case")]
    CaseCollision { path: String, other: String },
    #[error("member {path:?} is {size} bytes; at most {limit} are allowed for it")]
    KeptMemberTooLarge { path: String, size: u64, limit: u64 },
    #[error(
        "the metadata members (YAML files, SKILL.md, README.md, agent.lock, manifest) exceed {limit} bytes in all"
    )]
    KeptMembersTooLarge { limit: u64 },
    #[error("manifest.json is missing")]
    MissingManifest,
    #[error(transparent)]
    Manifest(#[from] ManifestError),
    #[error("signature.sig is missing")]
    MissingSignature,
    #[error("signature.sig is {0} bytes; it must hold exactly 64")]
    SignatureLength(u64),
    #[error("member {0:?} is not listed in manifest.json")]
    UnlistedMember(String),
    #[error("manifest.json lists {0:?}, which the container does not hold")]
    MissingMember(String),
    #[error("member {path:?} is {actual} bytes; manifest.json says {listed}")]
    SizeMismatch {
        path: String,
        listed: u64,
        actual: u64,
    },
    #[error("member {0:?} does not match its SHA-256 in manifest.json")]
    HashMismatch(String),
    #[error("encrypted member {path:?}: {source}")]
    BadEnvelope { path: String, source: CryptError },
    #[error("a {kind} container needs {file}, and it is missing")]
    MissingDefinition { kind: Kind, file: &'static str },
    #[error("manifest.json says kind {manifest}, but the container holds {found} instead")]
    KindMismatch { manifest: Kind, found: &'static str },
    #[error("{file} cannot be read for its name and version: {message}")]
    Definition { file: &'static str, message: String },
    #[error("manifest.json names {manifest:?}, but {file} names {definition:?}")]
    NameMismatch {
        file: &'static str,
        manifest: String,
        definition: String,
    },
    #[error("manifest.json has version {manifest}, but {file} has {definition:?}")]
    VersionMismatch {
        file: &'static str,
        manifest: String,
        definition: String,
    },
    #[error("{0:?} is a reserved member name; the builder writes it")]
    ReservedPath(String),
    #[error("manifest.json was signed by key {manifest}, not by the given key {key}")]
    SignerMismatch { manifest: KeyId, key: KeyId },
    #[error("signature does not verify: {0}")]
    Signature(SigningError),
    #[error("{0:?} is not an encrypted member kept in memory")]
    NotEncrypted(String),
    #[error("{path:?}: {source}")]
    Decrypt { path: String, source: CryptError },
    #[error("encrypting {path:?} failed: {source}")]
    Encrypt { path: String, source: CryptError },
}

/// Members [`read`] keeps in memory (up to [`Limits::max_kept_member_bytes`]):
/// the metadata the registry indexes and shows, and every file package
/// validation reads (`package::validate_package`): every `*.yaml` / `*.yml`
/// wherever it is (subagents may live in folders, and a static crew may name
/// any path), the lock and the skills. Top-level `*.yaml.enc` is kept too, so
/// a client holding the prompt key can decrypt without reading the container
/// twice.
pub fn is_kept_member(path: &MemberPath) -> bool {
    let p = path.as_str();
    matches!(
        p,
        MANIFEST_PATH | SIGNATURE_PATH | "agent.lock" | "README.md" | "SKILL.md"
    ) || p.ends_with(".yaml")
        || p.ends_with(".yml")
        || (path.is_top_level() && p.ends_with(".yaml.enc"))
        || (p.starts_with("skills/") && path.file_name() == "SKILL.md")
}

/// The definition file a kind of package must hold.
pub fn definition_file(kind: Kind) -> &'static str {
    match kind {
        Kind::Agent => "agent.yaml",
        Kind::Tool => "tool.yaml",
        Kind::Protocol => "protocol.yaml",
        Kind::Skill => crate::skill::SKILL_FILE,
    }
}

/// Just the identity fields of agent.yaml / tool.yaml; everything else is
/// the format models' business (and ignored here).
#[derive(Deserialize)]
struct Identity {
    name: String,
    version: String,
}

/// A skill's identity: the frontmatter's `name` and `metadata.version`
/// (the specification leaves no other place for a version). Only these two
/// are read here; the rest of SKILL.md is [`crate::agentskills`]'s.
fn skill_identity(bytes: &[u8]) -> Result<Identity, String> {
    #[derive(Deserialize)]
    struct Front {
        name: String,
        metadata: Meta,
    }
    #[derive(Deserialize)]
    struct Meta {
        version: String,
    }
    let text = std::str::from_utf8(bytes).map_err(|e| e.to_string())?;
    let (front, _) = crate::skill::split_frontmatter(text).map_err(|e| e.to_string())?;
    let front: Front = crate::yaml::from_slice(front.as_bytes(), &YamlLimits::default())
        .map_err(|e: YamlError| format!("frontmatter: {e}"))?;
    Ok(Identity {
        name: front.name,
        version: front.metadata.version,
    })
}

/// Checks that the package's definition file exists and names the same
/// package and version as the manifest (or the build's arguments).
fn check_definition<'a>(
    kind: Kind,
    name: &PackageName,
    version: &Version,
    get: impl Fn(&str) -> Option<&'a [u8]>,
) -> Result<(), ContainerError> {
    let file = definition_file(kind);
    let Some(bytes) = get(file) else {
        let other = Kind::ALL
            .into_iter()
            .map(definition_file)
            .find(|f| *f != file && get(f).is_some());
        return Err(match other {
            Some(found) => ContainerError::KindMismatch {
                manifest: kind,
                found,
            },
            None => ContainerError::MissingDefinition { kind, file },
        });
    };
    let identity = if kind == Kind::Skill {
        skill_identity(bytes).map_err(|message| ContainerError::Definition { file, message })?
    } else {
        crate::yaml::from_slice(bytes, &YamlLimits::default()).map_err(|e: YamlError| {
            ContainerError::Definition {
                file,
                message: e.to_string(),
            }
        })?
    };
    if identity.name != name.as_str() {
        return Err(ContainerError::NameMismatch {
            file,
            manifest: name.to_string(),
            definition: identity.name,
        });
    }
    if Version::parse(&identity.version).ok().as_ref() != Some(version) {
        return Err(ContainerError::VersionMismatch {
            file,
            manifest: version.to_string(),
            definition: identity.version,
        });
    }
    Ok(())
}

/// Tracks members by lowercase path, so `README.md` and `readme.md` cannot
/// both land in one container (they would collide on case-insensitive file
/// systems when a client unpacks).
#[derive(Default)]
struct CaseIndex(HashMap<String, String>);

impl CaseIndex {
    fn insert(&mut self, path: &str) -> Result<(), ContainerError> {
        match self.0.insert(path.to_lowercase(), path.to_owned()) {
            None => Ok(()),
            Some(other) if other == path => Err(ContainerError::DuplicateMember(other)),
            Some(other) => Err(ContainerError::CaseCollision {
                path: path.to_owned(),
                other,
            }),
        }
    }
}
