//! Publishing: a spooled upload in, a committed version out, or the one
//! reason it was refused.
//!
//! Order matters. Everything that can refuse without writing runs first
//! (container structure and hashes, signer key, signature, the whole
//! package's validation, token, owner, name, version, dependencies, the
//! lock against the package and the registry); then the blob is written from
//! the spooled file; then every row is committed in one transaction. A crash
//! between the last two leaves an unreferenced blob, which the sweep removes.

use std::{
    io::{Read, Write},
    path::{Path, PathBuf},
    sync::Arc,
};

use bytes::{Buf, Bytes};

use agentlang_core::{
    Diagnostics, Kind, PackageName, Version,
    container::{self, Container, Limits, Manifest, ReadError},
    digest::Sha256Digest,
    lockcheck::{
        self, MemberHashes, PublishedTool, PublishedTools, RegistryFacts, YankPolicy, first_kind,
    },
    lockfile::Lockfile,
    package::{AgentPackage, Members, Package, validate_package},
    signing::{KeyId, PublicKey},
};
use semver::VersionReq;
use serde_json::Value;

use crate::{
    FieldError, Registry, ServiceError, keys,
    packages::{ContainerExtras, LogRef, Signer, VersionView},
    protocols::{check_agent_protocols, require_publishable},
    quality::{QualitySource, model_facts},
    rate_limits::{Bucket, ClientAddr},
    tlog,
    tokens::Authenticated,
};
use store::{
    keys::SigningKeyRecord,
    names::{NamePattern, Scope},
    packages::{DependencyEdge, NewVersion, PublishError},
    time::rfc3339,
};

pub use crate::uploads::{UploadEntry, UploadSlot, UploadSlots};

/// Where uploads are spooled, under the data folder.
pub const SPOOL_DIR: &str = "uploads";

/// Body bytes gathered before they are handed to the verifying thread:
/// actix delivers the body in small pieces, and a hand-over between threads
/// costs more than copying a few of them.
const BATCH_BYTES: usize = 128 * 1024;

/// Batches queued between the handler and the verifying thread: at most
/// 512 KiB per upload in flight.
const QUEUED_BATCHES: usize = 4;

/// The body bytes an upload may send before its manifest has checked out
/// and it holds a verification slot. Builders write `manifest.json` first
/// (it is at most 1 MiB); the verifying thread trails the body by at most
/// `(QUEUED_BATCHES + 1) * BATCH_BYTES`.
const BEFORE_MANIFEST_BYTES: u64 = 2 * 1024 * 1024;

/// How long ago an account must have published to count as established
/// (for the reserved upload slots).
const ESTABLISHED_AFTER_SECS: i64 = 24 * 60 * 60;

/// An upload in progress. The handler hands it the body chunk by chunk; a
/// blocking thread writes each chunk to a temporary file and reads it as a
/// container at the same time, so the bytes pass through memory once and
/// verification (hashes, structure, limits) ends when the body does. An
/// invalid container is refused as soon as its bytes show it. Dropping the
/// upload stops the thread and deletes the file (`abandon` waits for both).
/// Each upload in flight holds one blocking thread; the handler starts one
/// only for an authenticated, rate-limited publish.
#[derive(Debug)]
pub struct Upload {
    feed: Option<tokio::sync::mpsc::Sender<Bytes>>,
    batch: bytes::BytesMut,
    /// Taken when awaited.
    verifier: Option<tokio::task::JoinHandle<Verified>>,
    received: u64,
    limit: u64,
    check: Arc<ManifestCheck>,
}

/// What the verifying thread ends with.
type Verified = (
    Result<Container, ReadError<ServiceError>>,
    std::io::Result<tempfile::TempPath>,
);

/// What an upload is checked against: the caller's signing keys and the
/// token's package patterns, read before the body. The manifest is checked
/// the moment it has been read, before the members after it; the signature
/// is verified with the key read here. A revocation after this read is
/// caught by the publish's transaction, which reads the key again
/// (`Db::publish_versions`).
#[derive(Debug)]
pub struct ManifestCheck {
    /// Every key of the caller, revoked ones included.
    keys: Arc<Vec<SigningKeyRecord>>,
    /// Whether `keys` was kept from an earlier read: a key missing from it
    /// may have been registered since, so it is looked up again after the
    /// body instead of refused ([`keys::publishing_keys`]).
    kept: bool,
    account_id: i64,
    patterns: Option<Vec<NamePattern>>,
    /// Where the verification slot comes from once the manifest checks
    /// out, and whether the account may take a reserved one.
    slots: Arc<UploadSlots>,
    established: bool,
    slot: std::sync::Mutex<Option<UploadSlot>>,
}

impl ManifestCheck {
    pub async fn load(registry: &Registry, auth: &Authenticated) -> Result<Self, ServiceError> {
        let (keys, kept) = keys::publishing_keys(registry, auth.account_id, false).await?;
        let established = registry
            .db
            .published_before(auth.account_id, store::now() - ESTABLISHED_AFTER_SECS)
            .await?;
        Ok(Self {
            keys,
            kept,
            account_id: auth.account_id,
            patterns: auth.patterns.clone(),
            slots: Arc::clone(&registry.uploads),
            established,
            slot: std::sync::Mutex::default(),
        })
    }

    /// Whether the manifest checked out and the upload holds a slot.
    fn has_slot(&self) -> bool {
        self.slot
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .is_some()
    }

    /// The caller's unrevoked key `key_id` among `keys`.
    fn signing_key<'k>(
        keys: &'k [SigningKeyRecord],
        key_id: &str,
    ) -> Result<&'k SigningKeyRecord, ServiceError> {
        match keys.iter().find(|k| k.key_id.as_str() == key_id) {
            None => Err(ServiceError::UnknownKey(format!(
                "the container is signed by key {key_id}, which is not registered to your account"
            ))),
            Some(key) if key.revoked_at.is_some() => Err(ServiceError::KeyRevoked(format!(
                "the container is signed by key {key_id}, which has been revoked"
            ))),
            Some(key) => Ok(key),
        }
    }

    fn check(&self, manifest: &Manifest) -> Result<(), ServiceError> {
        match Self::signing_key(&self.keys, manifest.signer().as_str()) {
            // Looked up again after the body (`check_signer`).
            Err(ServiceError::UnknownKey(_)) if self.kept => {}
            checked => {
                checked?;
            }
        }
        let name = manifest.name();
        if let Some(patterns) = &self.patterns
            && !patterns.iter().any(|p| p.matches(name))
        {
            return Err(ServiceError::TokenNotForPackage(name.to_string()));
        }
        let slot = self.slots.claim(self.established)?;
        *self
            .slot
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(slot);
        Ok(())
    }
}

/// Removes what uploads cut off by a crash left in the spool folder. Runs at
/// start-up, before the server takes requests: the folder belongs to this
/// process alone (replicas each have their own data folder).
pub fn clean_spool(data_dir: &Path) -> std::io::Result<usize> {
    let dir = data_dir.join(SPOOL_DIR);
    let entries = match std::fs::read_dir(&dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(0),
        Err(e) => return Err(e),
    };
    let mut removed = 0;
    for entry in entries {
        let entry = entry?;
        if entry.file_type()?.is_file() {
            std::fs::remove_file(entry.path())?;
            removed += 1;
        }
    }
    Ok(removed)
}

/// A complete, verified upload on disk.
#[derive(Debug)]
pub struct SpooledUpload {
    path: tempfile::TempPath,
    pub sha256: Sha256Digest,
    pub size: u64,
}

impl SpooledUpload {
    pub fn path(&self) -> &Path {
        &self.path
    }
}

/// The body as a blocking reader, copying every chunk to the spool file
/// before handing it on. A failed write ends the stream and is kept, so it
/// is reported as the server's fault, not the container's.
struct SpoolingReader {
    chunks: tokio::sync::mpsc::Receiver<Bytes>,
    current: Bytes,
    file: std::fs::File,
    write_error: Option<std::io::Error>,
}

impl Read for SpoolingReader {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        while self.current.is_empty() {
            match self.chunks.blocking_recv() {
                Some(chunk) => {
                    if let Err(e) = self.file.write_all(&chunk) {
                        let message = e.to_string();
                        self.write_error = Some(e);
                        return Err(std::io::Error::other(message));
                    }
                    self.current = chunk;
                }
                None => return Ok(0),
            }
        }
        let n = buf.len().min(self.current.len());
        buf[..n].copy_from_slice(&self.current[..n]);
        self.current.advance(n);
        Ok(n)
    }
}

impl Upload {
    /// Starts the verifying thread with a new temporary file in
    /// `<data_dir>/uploads`; more than `limit` bytes are refused, and so is
    /// a manifest that fails `check`, as soon as it has been read.
    pub fn start(data_dir: &Path, limit: u64, check: Arc<ManifestCheck>) -> Self {
        let dir: PathBuf = data_dir.join(SPOOL_DIR);
        let (feed, chunks) = tokio::sync::mpsc::channel(QUEUED_BATCHES);
        let limits = Limits {
            max_compressed_bytes: limit,
            ..Limits::default()
        };
        let checked = Arc::clone(&check);
        let verifier = tokio::task::spawn_blocking(move || -> Verified {
            let spool = store::files::create_private_dir(&dir)
                .and_then(|()| tempfile::NamedTempFile::new_in(&dir));
            let (file, path) = match spool {
                Ok(spool) => spool.into_parts(),
                Err(e) => {
                    let refused = container::ContainerError::Io(e.to_string());
                    return (Err(ReadError::Container(refused)), Err(e));
                }
            };
            let mut reader = SpoolingReader {
                chunks,
                current: Bytes::new(),
                file,
                write_error: None,
            };
            let verified = container::read_checked(&mut reader, &limits, |m| checked.check(m));
            let spooled = match reader.write_error.take() {
                Some(e) => Err(e),
                None => reader.file.flush().map(|()| path),
            };
            (verified, spooled)
        });
        Self {
            feed: Some(feed),
            batch: bytes::BytesMut::new(),
            verifier: Some(verifier),
            received: 0,
            limit,
            check,
        }
    }

    /// Passes on one chunk of the body: 413 past the limit, or the
    /// container's refusal as soon as the verifier has one.
    pub async fn write(&mut self, chunk: Bytes) -> Result<(), ServiceError> {
        self.received += chunk.len() as u64;
        if self.received > self.limit {
            return Err(self.too_large());
        }
        if self.received > BEFORE_MANIFEST_BYTES && !self.check.has_slot() {
            // A refusal of the verifying thread explains itself better.
            self.feed = None;
            return Err(self.outcome().await.err().unwrap_or_else(|| {
                ServiceError::ContainerInvalid(format!(
                    "manifest.json did not arrive within the first {} MiB of the container; \
                     containers are built with it first",
                    BEFORE_MANIFEST_BYTES / (1024 * 1024)
                ))
            }));
        }
        if self.batch.is_empty() && chunk.len() >= BATCH_BYTES {
            return self.send(chunk).await;
        }
        self.batch.extend_from_slice(&chunk);
        if self.batch.len() >= BATCH_BYTES {
            let batch = self.batch.split().freeze();
            return self.send(batch).await;
        }
        Ok(())
    }

    async fn send(&mut self, batch: Bytes) -> Result<(), ServiceError> {
        let Some(feed) = &self.feed else {
            return Ok(());
        };
        if feed.send(batch).await.is_err() {
            // The verifier stopped before the body ended: it has refused it.
            self.feed = None;
            return Err(self.outcome().await.err().unwrap_or_else(|| {
                ServiceError::internal(anyhow::anyhow!("the container reader stopped early"))
            }));
        }
        Ok(())
    }

    pub fn too_large(&self) -> ServiceError {
        ServiceError::PayloadTooLarge {
            limit: usize::try_from(self.limit).unwrap_or(usize::MAX),
        }
    }

    async fn outcome(&mut self) -> Result<(Container, tempfile::TempPath), ServiceError> {
        let verifier = self
            .verifier
            .take()
            .ok_or_else(|| ServiceError::internal(anyhow::anyhow!("the upload already ended")))?;
        let (verified, spooled) = verifier.await.map_err(ServiceError::internal)?;
        let path = spooled.map_err(ServiceError::internal)?;
        let container = verified.map_err(|e| match e {
            ReadError::Container(e) => ServiceError::ContainerInvalid(e.to_string()),
            ReadError::Refused(refusal) => refusal,
        })?;
        Ok((container, path))
    }

    /// Gives the upload up: the verifying thread sees the body end, and its
    /// spool file is deleted before this returns.
    pub async fn abandon(mut self) {
        self.feed = None;
        if let Some(verifier) = self.verifier.take() {
            drop(verifier.await);
        }
    }

    /// Ends the body and waits for the verdict on it.
    pub async fn finish(mut self) -> Result<(SpooledUpload, Container), ServiceError> {
        if !self.batch.is_empty() {
            let batch = self.batch.split().freeze();
            self.send(batch).await?;
        }
        self.feed = None;
        let (container, path) = self.outcome().await?;
        let upload = SpooledUpload {
            path,
            sha256: container.sha256(),
            size: container.size(),
        };
        Ok((upload, container))
    }
}

/// A publish under way: the caller's upload entry, what the manifest will
/// be checked against (which takes a verification slot once it checks
/// out), and the upload the body is handed to ([`Upload::write`]) as it
/// arrives.
#[derive(Debug)]
pub struct Publishing {
    _entry: UploadEntry,
    check: Arc<ManifestCheck>,
    pub upload: Upload,
    /// The largest container accepted, in bytes.
    pub limit: u64,
    /// Staged releases: store the version staged (`?stage=true`).
    pub stage: bool,
    /// Provenance: the DSSE envelope sent with the container, at most
    /// `provenance::MAX_ENVELOPE_BYTES` (docs/provenance.md).
    pub provenance: Option<Vec<u8>>,
}

/// Everything a publish can refuse before its body: the token's `publish`
/// scope, the publish budgets of the account and of the client's address, an
/// upload entry (per process, account and address), and the caller's
/// signing keys, read once for the manifest check.
pub async fn begin_publish(
    registry: &Registry,
    auth: &Authenticated,
    client: &ClientAddr,
) -> Result<Publishing, ServiceError> {
    auth.require(Scope::Publish)?;
    registry
        .rate_limits
        .check(Bucket::Publish, &auth.budget_key())?;
    registry
        .rate_limits
        .check(Bucket::Publish, client.as_str())?;
    let entry = registry.uploads.enter(auth.account_id, client)?;
    let check = Arc::new(ManifestCheck::load(registry, auth).await?);
    let limit = registry.settings.max_upload_bytes as u64;
    Ok(Publishing {
        upload: Upload::start(&registry.settings.data_dir, limit, Arc::clone(&check)),
        _entry: entry,
        check,
        limit,
        stage: false,
        provenance: None,
    })
}

/// Ends the body, waits for the verdict on the container, and publishes it.
pub async fn complete_publish(
    registry: &Registry,
    auth: &Authenticated,
    publishing: Publishing,
) -> Result<PublishOutcome, ServiceError> {
    let Publishing {
        _entry,
        check,
        upload,
        stage,
        provenance,
        ..
    } = publishing;
    let (upload, container) = upload.finish().await?;
    let sent = Sent { stage, provenance };
    publish(registry, auth, &check, &upload, container, sent).await
}

/// How a publish ended.
#[derive(Debug)]
pub enum PublishOutcome {
    /// A new version (201).
    Created(Box<VersionView>),
    /// The same bytes were already published as this version: an
    /// idempotent retry (200).
    Unchanged(Box<VersionView>),
    /// Staged releases: stored staged, awaiting an owner's decision (202).
    Staged(Box<crate::stage::StagedView>),
}

/// The signer must be a registered key of the caller, not revoked, and the
/// signature must verify over the exact manifest bytes.
async fn check_signer(
    registry: &Registry,
    check: &ManifestCheck,
    container: &Container,
) -> Result<KeyId, ServiceError> {
    let key_id = container.manifest().signer().as_str();
    let read;
    let key = match ManifestCheck::signing_key(&check.keys, key_id) {
        Err(ServiceError::UnknownKey(_)) if check.kept => {
            read = keys::publishing_keys(registry, check.account_id, true)
                .await?
                .0;
            ManifestCheck::signing_key(&read, key_id)?
        }
        checked => checked?,
    };
    let public = PublicKey::from_spki_pem(&key.public_key_pem).map_err(ServiceError::internal)?;
    container
        .verify_signature(&public)
        .map_err(|e| ServiceError::SignatureInvalid(e.to_string()))?;
    Ok(container.manifest().signer().clone())
}

/// Every problem of the package, each with its file and path, as
/// `agentlang validate` lists them: the ones `Diagnostics` kept, then its
/// "and N more problems" line.
fn validation_errors(diags: &Diagnostics) -> ServiceError {
    let errors = diags
        .iter()
        .map(|d| {
            FieldError::in_file(d.file.as_deref().unwrap_or(""), &d.path, d.message.clone())
                .breaking(d.rule)
        })
        .chain(diags.more().map(|more| FieldError::new("", more)))
        .collect();
    match diags.iter().filter_map(|d| d.rule).min() {
        Some(rule) => ServiceError::RuleBroken(rule, errors),
        None => ServiceError::Validation(errors),
    }
}

/// What publish stores about the package's definition file.
pub(crate) struct Definition {
    pub(crate) package: Package,
    pub(crate) spec: Value,
    pub(crate) description: String,
    pub(crate) keywords: Vec<String>,
    pub(crate) dependencies: Vec<DependencyEdge>,
    /// Tools named as dependencies, which must exist (tools only: an
    /// agent's tools are checked through its lock).
    required_tools: Vec<PackageName>,
}

/// Validates the whole package from the container's members with the
/// function `agentlang validate` and `agentlang build` use, on a blocking
/// thread (JSON Schema compilation and YAML parsing are CPU work). The
/// container comes back with the verdict.
pub(crate) async fn read_definition(
    container: Container,
) -> Result<(Container, Definition), ServiceError> {
    let (container, validated) = tokio::task::spawn_blocking(move || {
        let kind = container.manifest().kind();
        let validated = validate_package(kind, &Members::from_container(&container));
        (container, validated)
    })
    .await
    .map_err(ServiceError::internal)?;
    let package = validated.map_err(|d| validation_errors(&d))?;
    let definition = match &package {
        Package::Agent(pkg) => {
            let spec = &pkg.agent;
            // The whole package's needs: subagents' tools are the agent's too;
            // an interface is an edge to the provider its lock records.
            let requirements = match &pkg.lock {
                Some(lock) => {
                    agentlang_core::interfaces::requirements_through(lock, &pkg.tool_requirements())
                }
                None => pkg.tool_requirements(),
            };
            let dependencies = requirements
                .into_iter()
                .map(|(name, requirement)| DependencyEdge {
                    kind: Kind::Tool,
                    name,
                    requirement: requirement.unwrap_or(VersionReq::STAR),
                })
                .collect();
            // Titles and categories are searched with the name and
            // description; the keywords column carries them.
            let keywords = [&spec.title, &spec.category, &spec.developer]
                .into_iter()
                .flatten()
                .cloned()
                .collect();
            Definition {
                description: spec.description.clone().unwrap_or_default(),
                spec: serde_json::to_value(spec).map_err(ServiceError::internal)?,
                keywords,
                dependencies,
                required_tools: Vec::new(),
                package: package.clone(),
            }
        }
        Package::Skill(skill) => {
            let doc = &skill.skill;
            // `skill` finds every skill in search; the license is a word
            // users search for too.
            let keywords = std::iter::once("skill".to_owned())
                .chain(doc.license.clone())
                .collect();
            Definition {
                description: doc.description.clone(),
                spec: serde_json::to_value(doc).map_err(ServiceError::internal)?,
                keywords,
                dependencies: Vec::new(),
                required_tools: Vec::new(),
                package: package.clone(),
            }
        }
        Package::Protocol(protocol) => {
            let spec = &protocol.protocol;
            let keywords = vec![
                "protocol".to_owned(),
                spec.schema.transport.to_string(),
                spec.schema.message_format.to_string(),
            ];
            Definition {
                description: spec.description.clone(),
                spec: serde_json::to_value(spec).map_err(ServiceError::internal)?,
                keywords,
                dependencies: Vec::new(),
                required_tools: Vec::new(),
                package: package.clone(),
            }
        }
        Package::Tool(tool) => {
            let spec = &tool.tool;
            let deps = spec.dependency_requirements();
            Definition {
                description: spec.description().to_owned(),
                spec: serde_json::to_value(spec).map_err(ServiceError::internal)?,
                keywords: Vec::new(),
                required_tools: deps.keys().cloned().collect(),
                dependencies: deps
                    .into_iter()
                    .map(|(name, requirement)| DependencyEdge {
                        kind: Kind::Tool,
                        name,
                        requirement,
                    })
                    .collect(),
                package: package.clone(),
            }
        }
    };
    Ok((container, definition))
}

/// A tool's dependencies must name tools that exist: the resolver treats an
/// unknown name as fatal, so such a version could never be resolved.
async fn check_dependencies_exist(
    registry: &Registry,
    name: &PackageName,
    required: &[PackageName],
) -> Result<(), ServiceError> {
    let mut errors = Vec::new();
    for dep in required {
        if dep.normalized() == name.normalized() {
            errors.push(FieldError::new(
                format!("dependencies.{dep}"),
                "a tool cannot depend on itself",
            ));
        } else if registry.db.find_package(Kind::Tool, dep).await?.is_none() {
            errors.push(FieldError::new(
                format!("dependencies.{dep}"),
                format!("no tool named {dep} is published on this registry"),
            ));
        }
    }
    if errors.is_empty() {
        Ok(())
    } else {
        Err(ServiceError::Validation(errors))
    }
}

/// Every live version of each tool the lock pins, as the lock checks need
/// them, in one read per 500 tools (the lock pins at most
/// `lockfile::MAX_LOCKED_TOOLS`: validation refuses more); and the row ids
/// of the pinned versions, whose stored tool.yaml the schema checks read.
async fn published_tools(
    registry: &Registry,
    lock: &Lockfile,
) -> Result<(PublishedTools, Vec<i64>), ServiceError> {
    let mut published = PublishedTools::new();
    let mut pinned_ids = Vec::new();
    let names: Vec<PackageName> = lock.tools.keys().cloned().collect();
    let pins: std::collections::BTreeMap<String, (&PackageName, &Version)> = lock
        .tools
        .iter()
        .map(|(name, tool)| (name.normalized(), (name, &tool.version)))
        .collect();
    for index in registry.db.package_indexes(Kind::Tool, &names).await? {
        let Some(&(name, pinned)) = pins.get(&index.package.normalized_name) else {
            continue;
        };
        let mut versions = Vec::with_capacity(index.versions.len());
        for v in index.versions {
            let bad = |what: &str, e: &dyn std::fmt::Display| {
                ServiceError::internal(anyhow::anyhow!("stored {what} of tool {name}: {e}"))
            };
            // Build metadata aside, as the lock check finds a pin.
            if v.version.semver().cmp_precedence(pinned.semver()).is_eq() {
                pinned_ids.push(v.version_id);
            }
            let mut dependencies = std::collections::BTreeMap::new();
            for (dep, req) in &v.dependencies {
                dependencies.insert(
                    PackageName::new(dep.as_str()).map_err(|e| bad("dependency", &e))?,
                    VersionReq::parse(req).map_err(|e| bad("requirement", &e))?,
                );
            }
            versions.push(PublishedTool {
                version: v.version,
                hash: v.sha256,
                yanked: v.yanked,
                dependencies,
            });
        }
        published.insert(name, versions);
    }
    Ok((published, pinned_ids))
}

/// Every live version of each skill the lock pins (at most
/// `lockfile::MAX_LOCKED_SKILLS`: validation refuses more), in one read.
async fn published_skills(
    registry: &Registry,
    lock: &Lockfile,
) -> Result<PublishedTools, ServiceError> {
    let mut published = PublishedTools::new();
    if lock.skills.is_empty() {
        return Ok(published);
    }
    let names: Vec<PackageName> = lock.skills.keys().cloned().collect();
    for index in registry.db.package_indexes(Kind::Skill, &names).await? {
        let Some(name) = names
            .iter()
            .find(|n| n.normalized() == index.package.normalized_name)
        else {
            continue;
        };
        let versions = index
            .versions
            .into_iter()
            .map(|v| PublishedTool {
                version: v.version,
                hash: v.sha256,
                yanked: v.yanked,
                dependencies: std::collections::BTreeMap::new(),
            })
            .collect();
        published.insert(name, versions);
    }
    Ok(published)
}

/// The lock of the agent's previous version: the newest live version below
/// the one being published.
async fn previous_lock(
    registry: &Registry,
    name: &PackageName,
    version: &Version,
) -> Result<Option<Lockfile>, ServiceError> {
    let Some(package) = registry.db.find_package(Kind::Agent, name).await? else {
        return Ok(None);
    };
    let versions = registry.db.list_versions(package.id).await?;
    let previous = versions.into_iter().find(|v| v.version < *version);
    Ok(previous
        .and_then(|v| v.lockfile)
        .and_then(|json| serde_json::from_value::<Lockfile>(json.0).ok()))
}

/// An agent's agent.lock must tell the truth about the package (every
/// agent carries one; files, subagents, models) and the registry (every
/// requirement pinned and satisfied, transitively; pins published with
/// their hashes; nothing unrelated; no newly pinned yanked version; the
/// same of its skills), judged by `core::lockcheck::check`, the function
/// the CLI's validate, build, install and verify call. The first kind of
/// failure found is the answer, with one field error per tool, skill or
/// file. Returns the lock as JSON for storage, and the row ids of the tool
/// versions it pins.
async fn check_lock(
    registry: &Registry,
    container: &Container,
    pkg: &AgentPackage,
) -> Result<(Option<Value>, Vec<i64>), ServiceError> {
    let manifest = container.manifest();
    let hashes = MemberHashes::from_manifest(manifest);
    let mut pinned_ids = Vec::new();
    let problems = match &pkg.lock {
        Some(lock) => {
            let (mut tools, ids) = published_tools(registry, lock).await?;
            pinned_ids = ids;
            super::interfaces::add_provided(registry, lock, &mut tools).await?;
            let skills = published_skills(registry, lock).await?;
            let previous = previous_lock(registry, manifest.name(), manifest.version()).await?;
            let facts = RegistryFacts {
                tools: &tools,
                skills: &skills,
                yanks: YankPolicy::RefuseUnlessPinnedBy(previous.as_ref()),
            };
            lockcheck::check(pkg, &hashes, Some(&facts))
        }
        // Nothing to read from the registry: the answer is `lock-missing`.
        None => lockcheck::check(pkg, &hashes, None),
    };
    if let Some((kind, of_kind)) = first_kind(&problems) {
        return Err(ServiceError::Lock(
            kind,
            of_kind
                .into_iter()
                .map(|p| FieldError::new(p.field.clone(), p.message.clone()))
                .collect(),
        ));
    }
    let json = pkg
        .lock
        .as_ref()
        .map(serde_json::to_value)
        .transpose()
        .map_err(ServiceError::internal)?;
    Ok((json, pinned_ids))
}

/// The agent's inline tool schemas against the locked versions' published
/// ones, and every route through a locked tool's schemas, judged by
/// `core::schema_compat::check_package` (what `agentlang lock` runs), on a
/// blocking thread. `pinned` are the locked tool versions' row ids (at most
/// `lockfile::MAX_LOCKED_TOOLS`), whose stored tool.yaml is read in one
/// query per 500.
async fn check_schemas(
    registry: &Registry,
    pkg: &AgentPackage,
    pinned: &[i64],
) -> Result<(), ServiceError> {
    if pinned.is_empty() {
        return Ok(());
    }
    let mut published = agentlang_core::schema_compat::Published::new();
    for v in registry.db.version_specs(pinned).await? {
        published.insert_spec(v.name.as_str(), &v.version.to_string(), &v.spec.0);
    }
    if published.is_empty() {
        return Ok(());
    }
    let (agent, subagents) = (pkg.agent.clone(), pkg.subagents.clone());
    let diags = tokio::task::spawn_blocking(move || {
        agentlang_core::schema_compat::check_package(&agent, &subagents, &published)
    })
    .await
    .map_err(ServiceError::internal)?;
    if diags.is_empty() {
        Ok(())
    } else {
        Err(validation_errors(&diags))
    }
}

/// An agent's protocols against the catalog and its lock (errors refuse
/// the version), then its deterministic quality report, computed on a
/// blocking thread, to be stored with the version.
async fn check_agent_protocols_and_quality(
    registry: &Registry,
    container: &Container,
    pkg: &AgentPackage,
) -> Result<Option<Value>, ServiceError> {
    let lock = pkg.lock.as_ref();
    let report = check_agent_protocols(&registry.db, &pkg.agent, lock).await?;
    require_publishable(&report, lock)?;
    let models = model_facts(&registry.db).await?;
    let source = QualitySource::of(container, pkg);
    let report = tokio::task::spawn_blocking(move || source.report(&models))
        .await
        .map_err(ServiceError::internal)?;
    serde_json::to_value(&report)
        .map(Some)
        .map_err(ServiceError::internal)
}

/// A protocol package may not take a name the protocol catalog holds:
/// `custom/<name>` and the catalog's `<name>` must not be confused.
async fn check_protocol_name(registry: &Registry, name: &PackageName) -> Result<(), ServiceError> {
    let clash = registry.db.find_protocol(name.as_str()).await?.is_some()
        || registry
            .db
            .list_protocols()
            .await?
            .iter()
            .any(|p| agentlang_core::names::normalize(&p.name) == name.normalized());
    if clash {
        return Err(ServiceError::NameTaken(format!(
            "{name} is a protocol of this registry's catalog; publish custom protocols under another name"
        )));
    }
    Ok(())
}

/// Refusals that need no write: ownership, spelling, an existing version.
/// `Ok(Some(view))` is an idempotent retry of identical bytes.
async fn check_package(
    registry: &Registry,
    auth: &Authenticated,
    container: &Container,
    sha256: &Sha256Digest,
) -> Result<Option<VersionView>, ServiceError> {
    let manifest = container.manifest();
    let (kind, name, version) = (manifest.kind(), manifest.name(), manifest.version());
    let Some(found) = registry
        .db
        .publish_precheck(kind, name, auth.account_id, version)
        .await?
    else {
        // A trusted-publishing token never creates a package.
        crate::trusted_publishing::check_trusted_package(registry, auth, kind, name, None).await?;
        return Ok(None);
    };
    let package = found.package;
    if package.name != *name {
        return Err(ServiceError::NameTaken(format!(
            "the {kind} {} exists; {name} is the same name spelled differently",
            package.name
        )));
    }
    crate::trusted_publishing::check_trusted_only(
        auth,
        Some(&crate::publishing_policy::policy_of_package(registry, package.id).await?),
        kind,
        &package.name,
    )?;
    // A trusted-publishing token needs no owner: this package's trust
    // configuration must authorize it (its patterns are names, not kinds).
    crate::trusted_publishing::check_trusted_package(
        registry,
        auth,
        kind,
        &package.name,
        Some(package.id),
    )
    .await?;
    if !found.is_owner && auth.trusted.is_none() {
        return Err(ServiceError::NotOwner(format!(
            "you are not an owner of the {kind} {}",
            package.name
        )));
    }
    check_two_factor_token(
        auth,
        &crate::publishing_policy::policy_of_package(registry, package.id).await?,
        &package,
    )?;
    match found.existing_sha256 {
        None => crate::statuses::refuse_publish(registry, &package)
            .await
            .map(|()| None),
        // An identical retry: answered with the record as stored.
        Some(existing) if existing == *sha256 && found.existing_deleted_at.is_none() => {
            existing_version(registry, &package, container, sha256).await
        }
        Some(_) => Err(ServiceError::VersionExists(format!(
            "{} {} {version} already exists (or existed): versions are never reused",
            package.kind, package.name
        ))),
    }
}

/// Second factor: a package whose policy requires two-factor takes
/// publishes only from a token minted with a code, or a trusted-publishing
/// token (a CI run has no person to give a code; its trust configuration
/// was set up by an owner who did).
fn check_two_factor_token(
    auth: &Authenticated,
    policy: &crate::publishing_policy::PublishingPolicy,
    package: &store::packages::PackageRecord,
) -> Result<(), ServiceError> {
    if policy.two_factor_required && !auth.second_factor && auth.trusted.is_none() {
        return Err(ServiceError::TwoFactorRequired(format!(
            "{} {} requires a second factor: publish with a token minted with a TOTP code \
             (`agentlang login --otp CODE`) or through trusted publishing",
            package.kind, package.name
        )));
    }
    Ok(())
}

/// A document just checked, as the record will send it.
fn raw_json(value: &Value) -> Result<Box<serde_json::value::RawValue>, ServiceError> {
    serde_json::value::to_raw_value(value).map_err(ServiceError::internal)
}

/// `Ok(Some)` when this exact version was published with these bytes,
/// `Err(VersionExists)` when with other bytes, `Ok(None)` when never.
async fn existing_version(
    registry: &Registry,
    package: &store::packages::PackageRecord,
    container: &Container,
    sha256: &Sha256Digest,
) -> Result<Option<VersionView>, ServiceError> {
    let version = container.manifest().version();
    match registry.db.find_version(package.id, version).await? {
        None => Ok(None),
        Some(record) if record.sha256 == *sha256 && record.deleted_at.is_none() => Ok(Some(
            crate::packages::get_version(registry, package.kind, &package.name, version).await?,
        )),
        Some(_) => Err(ServiceError::VersionExists(format!(
            "{} {} {version} already exists (or existed): versions are never reused",
            package.kind, package.name
        ))),
    }
}

/// What a version stores beyond its manifest, once its contents passed
/// every check against the registry: its dependencies, an agent's lock,
/// schemas, protocols and quality, a tool's names. Shared by a publish and
/// the approval of a staged version (`staging::approve`), which checks
/// again against the registry as it is then.
pub(crate) struct Contents {
    pub(crate) definition: Definition,
    pub(crate) lockfile: Option<Value>,
    pub(crate) quality_report: Option<Value>,
    pub(crate) extras: Value,
    pub(crate) max_risk: Option<&'static str>,
    pub(crate) trust: Option<agentlang_core::trust::AgentTrust>,
}

pub(crate) async fn check_contents(
    registry: &Registry,
    container: &Container,
    definition: Definition,
    signer: &KeyId,
) -> Result<Contents, ServiceError> {
    let manifest = container.manifest();
    let (kind, name) = (manifest.kind(), manifest.name());
    check_dependencies_exist(registry, name, &definition.required_tools).await?;
    if let Package::Tool(tool) = &definition.package {
        super::interfaces::check_tool_names(registry, name, tool.tool.provides()).await?;
    }
    let lockfile = match &definition.package {
        Package::Agent(pkg) => {
            let (lockfile, pinned) = check_lock(registry, container, pkg).await?;
            check_schemas(registry, pkg, &pinned).await?;
            lockfile
        }
        Package::Tool(_) | Package::Protocol(_) | Package::Skill(_) => None,
    };
    let quality_report = match &definition.package {
        Package::Agent(pkg) => check_agent_protocols_and_quality(registry, container, pkg).await?,
        Package::Protocol(_) => {
            check_protocol_name(registry, name).await?;
            None
        }
        Package::Tool(_) | Package::Skill(_) => None,
    };
    let extras = match &definition.package {
        Package::Agent(pkg) => ContainerExtras::of(kind, container)
            .with_trust(super::trust::agent_trust(&registry.db, pkg, signer.as_str()).await?),
        Package::Tool(_) | Package::Protocol(_) | Package::Skill(_) => {
            ContainerExtras::of(kind, container)
        }
    };
    let max_risk = extras.max_risk();
    let trust = extras.trust.clone();
    let extras = extras.to_stored();
    Ok(Contents {
        definition,
        lockfile,
        quality_report,
        extras,
        max_risk,
        trust,
    })
}

/// What a publish request asked beyond its container.
#[derive(Debug, Default)]
pub struct Sent {
    /// Store the version staged.
    pub stage: bool,
    /// The provenance envelope sent with it.
    pub provenance: Option<Vec<u8>>,
}

/// Verifies and publishes a spooled container for `auth`. The upload limit
/// bounds the compressed container.
pub async fn publish(
    registry: &Registry,
    auth: &Authenticated,
    check: &ManifestCheck,
    upload: &SpooledUpload,
    container: Container,
    sent: Sent,
) -> Result<PublishOutcome, ServiceError> {
    let stage = sent.stage;
    auth.require(Scope::Publish)?;
    auth.require_package(container.manifest().name())?;
    let signer = check_signer(registry, check, &container).await?;
    let (container, definition) = read_definition(container).await?;
    let manifest = container.manifest();
    let (kind, name, version) = (manifest.kind(), manifest.name(), manifest.version());
    if let Some(view) = check_package(registry, auth, &container, &upload.sha256).await? {
        // Staged releases: identical bytes already published are not a
        // stage's retry.
        if stage {
            return Err(crate::stage::published_already(&view));
        }
        return Ok(PublishOutcome::Unchanged(Box::new(view)));
    }
    // Staged releases: the package's policy, a staged number, a name a
    // pending first version holds.
    crate::stage::check_publish(registry, auth, kind, name, version, stage).await?;
    let Contents {
        definition,
        lockfile,
        quality_report,
        extras,
        max_risk,
        trust,
    } = check_contents(registry, &container, definition, &signer).await?;
    let manifest_json: Value = serde_json::to_value(manifest).map_err(ServiceError::internal)?;
    let provenance = crate::provenance::for_publish(
        registry,
        auth.trusted.as_deref(),
        Arc::clone(&check.keys),
        sent.provenance,
        (kind, name, version),
        &upload.sha256,
    )
    .await?;
    if stage {
        let staged = crate::stage::stage(
            registry,
            auth,
            (upload.path(), &upload.sha256, upload.size),
            &container,
            &signer,
            provenance.as_ref(),
        )
        .await?;
        return Ok(PublishOutcome::Staged(Box::new(staged)));
    }

    let mut log_entry = tlog::publish_entry(
        kind,
        name,
        version,
        &upload.sha256.to_hex(),
        Some(signer.as_str()),
        auth.username.as_str(),
    );
    log_entry.provenance = provenance.as_ref().map(|p| p.sha256.to_hex());
    // Refused before anything is written: an entry the log's bundles
    // could not serve would break them for good. The parsed fields' own
    // bounds keep every entry far below this.
    tlog::check_servable(&log_entry)?;
    registry
        .blobs
        .put_file(upload.path(), &upload.sha256)
        .await?;
    let new = NewVersion {
        kind,
        name: name.clone(),
        version: version.clone(),
        sha256: upload.sha256,
        size: upload.size,
        signer_key_id: Some(signer.clone()),
        manifest: manifest_json,
        spec: definition.spec,
        lockfile,
        quality_report,
        extras: Some(extras),
        max_risk,
        prompt_mode: manifest.prompt_mode(),
        prompt_key_id: manifest.prompt_key_id().cloned(),
        dependencies: definition.dependencies,
        description: definition.description,
        keywords: definition.keywords,
        publisher: auth.account_id,
        log_entry,
        publisher_identity: crate::trusted_publishing::publisher_identity(auth),
        provenance,
    };
    let (new, committed) = registry.publish_queue.commit(new).await?;
    let published = match committed {
        Ok(published) => published,
        Err(err) => {
            let answer = match err {
                PublishError::NameTaken { .. } | PublishError::SpelledDifferently { .. } => {
                    ServiceError::NameTaken(err.to_string())
                }
                PublishError::NotOwner { .. } => ServiceError::NotOwner(err.to_string()),
                PublishError::KeyRevoked { .. } => ServiceError::KeyRevoked(err.to_string()),
                PublishError::VersionExists { .. } => {
                    // Lost a race: identical bytes are still a retry.
                    let package = registry.db.find_package(kind, name).await?;
                    match package {
                        Some(package) => {
                            match existing_version(registry, &package, &container, &upload.sha256)
                                .await
                            {
                                Ok(Some(view)) => {
                                    return Ok(PublishOutcome::Unchanged(Box::new(view)));
                                }
                                Ok(None) => ServiceError::VersionExists(err.to_string()),
                                Err(e) => e,
                            }
                        }
                        None => ServiceError::VersionExists(err.to_string()),
                    }
                }
                PublishError::Db(e) => ServiceError::internal(e),
                // Only an approval marks a staged row (`staging::approve`).
                PublishError::StagedDecided => ServiceError::StagedDecided(err.to_string()),
            };
            crate::sweep::discard_blob(registry, &upload.sha256).await;
            return Err(answer);
        }
    };
    registry.tlog.appended();
    registry.metrics.publishes.inc();
    tracing::info!(%kind, %name, %version, sha256 = %upload.sha256.hex(), by = %auth.username, new_package = published.new_package, "published");
    // The record as `GET` will show it, from what was just written (the
    // transaction checked that the package's name is spelled this way).
    Ok(PublishOutcome::Created(Box::new(VersionView {
        kind,
        name: name.clone(),
        version: version.clone(),
        sha256: upload.sha256,
        hash: upload.sha256.to_prefixed(),
        size: i64::try_from(upload.size).unwrap_or(i64::MAX),
        manifest: raw_json(&new.manifest)?,
        spec: raw_json(&new.spec)?,
        lockfile: new.lockfile.as_ref().map(raw_json).transpose()?,
        dependencies: new
            .dependencies
            .iter()
            .filter(|d| d.kind == Kind::Tool)
            .map(|d| (d.name.to_string(), d.requirement.to_string()))
            .collect(),
        signer: Some(Signer {
            key_id: signer,
            revoked_at: None,
        }),
        yanked: false,
        yank_reason: None,
        status: None,
        publisher: Some(auth.username.clone()),
        published_at: rfc3339(published.published_at),
        downloads: 0,
        trust,
        prompt: new.prompt_mode,
        prompt_key_id: new.prompt_key_id,
        log: Some(LogRef {
            index: published.log_index,
        }),
        log_index: Some(published.log_index),
        evidence: agentlang_core::provenance::Evidence::of(
            auth.trusted.is_some(),
            new.provenance.is_some(),
        ),
    })))
}
