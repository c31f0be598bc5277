//! Publishing: a spooled upload in, a committed version out, or the one
//! reason it was refused.
//!
//! Order matters. Everything that can refuse without writing runs first
//! (container structure and hashes, signer key, signature, token, owner,
//! name, version, lock pins, dependencies); then the blob is written from
//! the spooled file; then every row is committed in one transaction. A crash
//! between the last two leaves an unreferenced blob, which the sweep removes.

use std::{
    io::{Read, Write},
    path::{Path, PathBuf},
};

use bytes::{Buf, Bytes};

use agentlang_core::{
    Diagnostics, Kind, PackageName,
    agent::parse_agent,
    container::{self, Container, Limits, definition_file},
    lockfile::{LOCKFILE_NAME, Lockfile},
    signing::PublicKey,
    tool::parse_tool,
};
use semver::VersionReq;
use serde_json::Value;

use crate::{
    auth::{Authenticated, Scope},
    blobs::Sha256Digest,
    db::packages::{DependencyEdge, NewVersion, PublishError},
    error::{ApiError, FieldError},
    service::packages::{VersionView, version_view},
    state::AppState,
};

/// Where uploads are spooled, under the data folder.
pub const SPOOL_DIR: &str = "uploads";

/// Body bytes gathered before they are handed to the verifying thread:
/// actix delivers the body in small pieces, and a hand-over between threads
/// costs more than copying a few of them.
const BATCH_BYTES: usize = 128 * 1024;

/// Batches queued between the handler and the verifying thread: at most
/// 512 KiB per upload in flight.
const QUEUED_BATCHES: usize = 4;

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
}

/// What the verifying thread ends with.
type Verified = (
    Result<Container, container::ContainerError>,
    std::io::Result<tempfile::TempPath>,
);

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
    /// `<data_dir>/uploads`; more than `limit` bytes are refused.
    pub fn start(data_dir: &Path, limit: u64) -> Self {
        let dir: PathBuf = data_dir.join(SPOOL_DIR);
        let (feed, chunks) = tokio::sync::mpsc::channel(QUEUED_BATCHES);
        let limits = Limits {
            max_compressed_bytes: limit,
            ..Limits::default()
        };
        let verifier = tokio::task::spawn_blocking(move || -> Verified {
            let spool =
                std::fs::create_dir_all(&dir).and_then(|()| tempfile::NamedTempFile::new_in(&dir));
            let (file, path) = match spool {
                Ok(spool) => spool.into_parts(),
                Err(e) => {
                    let refused = container::ContainerError::Io(e.to_string());
                    return (Err(refused), Err(e));
                }
            };
            let mut reader = SpoolingReader {
                chunks,
                current: Bytes::new(),
                file,
                write_error: None,
            };
            let verified = container::read(&mut reader, &limits);
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
        }
    }

    /// Passes on one chunk of the body: 413 past the limit, or the
    /// container's refusal as soon as the verifier has one.
    pub async fn write(&mut self, chunk: Bytes) -> Result<(), ApiError> {
        self.received += chunk.len() as u64;
        if self.received > self.limit {
            return Err(self.too_large());
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

    async fn send(&mut self, batch: Bytes) -> Result<(), ApiError> {
        let Some(feed) = &self.feed else {
            return Ok(());
        };
        if feed.send(batch).await.is_err() {
            // The verifier stopped before the body ended: it has refused it.
            self.feed = None;
            return Err(self.outcome().await.err().unwrap_or_else(|| {
                ApiError::internal(anyhow::anyhow!("the container reader stopped early"))
            }));
        }
        Ok(())
    }

    pub fn too_large(&self) -> ApiError {
        ApiError::PayloadTooLarge {
            limit: usize::try_from(self.limit).unwrap_or(usize::MAX),
        }
    }

    async fn outcome(&mut self) -> Result<(Container, tempfile::TempPath), ApiError> {
        let verifier = self
            .verifier
            .take()
            .ok_or_else(|| ApiError::internal(anyhow::anyhow!("the upload already ended")))?;
        let (verified, spooled) = verifier.await.map_err(ApiError::internal)?;
        let path = spooled.map_err(ApiError::internal)?;
        let container = verified.map_err(|e| ApiError::ContainerInvalid(e.to_string()))?;
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
    pub async fn finish(mut self) -> Result<(SpooledUpload, Container), ApiError> {
        if !self.batch.is_empty() {
            let batch = self.batch.split().freeze();
            self.send(batch).await?;
        }
        self.feed = None;
        let (container, path) = self.outcome().await?;
        let upload = SpooledUpload {
            path,
            sha256: Sha256Digest::from_bytes(*container.sha256().as_bytes()),
            size: container.size(),
        };
        Ok((upload, container))
    }
}

/// How a publish ended.
#[derive(Debug)]
pub enum PublishOutcome {
    /// A new version (201).
    Created(Box<VersionView>),
    /// The same bytes were already published as this version: an
    /// idempotent retry (200).
    Unchanged(Box<VersionView>),
}

/// The signer must be a registered key of the caller, not revoked, and the
/// signature must verify over the exact manifest bytes.
async fn check_signer(
    state: &AppState,
    auth: &Authenticated,
    container: &Container,
) -> Result<String, ApiError> {
    let key_id = container.manifest().signer().as_str().to_owned();
    let key = state.db.find_signing_key(&key_id).await?.ok_or_else(|| {
        ApiError::UnknownKey(format!(
            "the container is signed by key {key_id}, which is not registered"
        ))
    })?;
    if key.account_id != auth.account_id {
        return Err(ApiError::UnknownKey(format!(
            "the container is signed by key {key_id}, which is not registered to your account"
        )));
    }
    if key.revoked_at.is_some() {
        return Err(ApiError::KeyRevoked(format!(
            "the container is signed by key {key_id}, which has been revoked"
        )));
    }
    let public = PublicKey::from_spki_pem(&key.public_key_pem).map_err(ApiError::internal)?;
    container
        .verify_signature(&public)
        .map_err(|e| ApiError::SignatureInvalid(e.to_string()))?;
    Ok(key_id)
}

fn definition_errors(file: &str, diags: &Diagnostics) -> ApiError {
    ApiError::Validation(
        diags
            .iter()
            .map(|d| {
                let field = if d.path.is_empty() {
                    file.to_owned()
                } else {
                    format!("{file}:{}", d.path)
                };
                FieldError::new(field, d.message.clone())
            })
            .collect(),
    )
}

/// What publish stores about the package's definition file.
struct Definition {
    spec: Value,
    description: String,
    keywords: Vec<String>,
    dependencies: Vec<DependencyEdge>,
    /// Tools named as dependencies, which must exist (tools only: an
    /// agent's tools are checked through its lock).
    required_tools: Vec<PackageName>,
}

fn read_definition(container: &Container) -> Result<Definition, ApiError> {
    let kind = container.manifest().kind();
    let file = definition_file(kind);
    let bytes = container.member(file).ok_or_else(|| {
        // container::read already requires it; a defensive, precise answer.
        ApiError::ContainerInvalid(format!("a {kind} container needs {file}"))
    })?;
    match kind {
        Kind::Agent => {
            let spec = parse_agent(bytes).map_err(|d| definition_errors(file, &d))?;
            let dependencies = spec
                .tool_requirements()
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
            Ok(Definition {
                description: spec.description.clone().unwrap_or_default(),
                spec: serde_json::to_value(&spec).map_err(ApiError::internal)?,
                keywords,
                dependencies,
                required_tools: Vec::new(),
            })
        }
        Kind::Tool => {
            let spec = parse_tool(bytes).map_err(|d| definition_errors(file, &d))?;
            let deps = spec.dependency_requirements();
            Ok(Definition {
                description: spec.description().to_owned(),
                spec: serde_json::to_value(&spec).map_err(ApiError::internal)?,
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
            })
        }
    }
}

/// A tool's dependencies must name tools that exist: the resolver treats an
/// unknown name as fatal, so such a version could never be resolved.
async fn check_dependencies_exist(
    state: &AppState,
    name: &PackageName,
    required: &[PackageName],
) -> Result<(), ApiError> {
    let mut errors = Vec::new();
    for dep in required {
        if dep.normalized() == name.normalized() {
            errors.push(FieldError::new(
                format!("dependencies.{dep}"),
                "a tool cannot depend on itself",
            ));
        } else if state.db.find_package(Kind::Tool, dep).await?.is_none() {
            errors.push(FieldError::new(
                format!("dependencies.{dep}"),
                format!("no tool named {dep} is published on this registry"),
            ));
        }
    }
    if errors.is_empty() {
        Ok(())
    } else {
        Err(ApiError::Validation(errors))
    }
}

/// An agent's agent.lock may pin only tool versions this registry holds,
/// with matching hashes. Returns the lock as JSON for storage.
async fn check_lock(state: &AppState, container: &Container) -> Result<Option<Value>, ApiError> {
    let Some(bytes) = container.member(LOCKFILE_NAME) else {
        return Ok(None);
    };
    let lock = Lockfile::from_slice(bytes)
        .map_err(|e| ApiError::Validation(vec![FieldError::new(LOCKFILE_NAME, e.to_string())]))?;
    let mut errors = Vec::new();
    for (name, pin) in &lock.tools {
        let field = format!("tools.{name}");
        let Some(package) = state.db.find_package(Kind::Tool, name).await? else {
            errors.push(FieldError::new(
                field,
                format!("no tool named {name} is published on this registry"),
            ));
            continue;
        };
        let Some(version) = state
            .db
            .find_version(package.id, &pin.version)
            .await?
            .filter(|v| v.deleted_at.is_none())
        else {
            errors.push(FieldError::new(
                field,
                format!("{name} {} is not published on this registry", pin.version),
            ));
            continue;
        };
        if version.sha256 != pin.hash.to_hex() {
            errors.push(FieldError::new(
                field,
                format!(
                    "{name} {} is pinned at {}, but this registry holds sha256:{}",
                    pin.version, pin.hash, version.sha256
                ),
            ));
        }
    }
    if !errors.is_empty() {
        return Err(ApiError::LockMismatch(errors));
    }
    serde_json::to_value(&lock)
        .map(Some)
        .map_err(ApiError::internal)
}

/// Refusals that need no write: ownership, spelling, an existing version.
/// `Ok(Some(view))` is an idempotent retry of identical bytes.
async fn check_package(
    state: &AppState,
    auth: &Authenticated,
    container: &Container,
    sha256: &Sha256Digest,
) -> Result<Option<VersionView>, ApiError> {
    let manifest = container.manifest();
    let (kind, name) = (manifest.kind(), manifest.name());
    let Some(package) = state.db.find_package(kind, name).await? else {
        return Ok(None);
    };
    if package.name != name.as_str() {
        return Err(ApiError::NameTaken(format!(
            "the {kind} {} exists; {name} is the same name spelled differently",
            package.name
        )));
    }
    if !state.db.is_owner(package.id, auth.account_id).await? {
        return Err(ApiError::NotOwner(format!(
            "you are not an owner of the {kind} {}",
            package.name
        )));
    }
    existing_version(state, &package, container, sha256).await
}

/// `Ok(Some)` when this exact version was published with these bytes,
/// `Err(VersionExists)` when with other bytes, `Ok(None)` when never.
async fn existing_version(
    state: &AppState,
    package: &crate::db::packages::PackageRecord,
    container: &Container,
    sha256: &Sha256Digest,
) -> Result<Option<VersionView>, ApiError> {
    let version = container.manifest().version();
    match state.db.find_version(package.id, version).await? {
        None => Ok(None),
        Some(record) if record.sha256 == sha256.to_string() && record.deleted_at.is_none() => {
            Ok(Some(version_view(state, package, record).await?))
        }
        Some(_) => Err(ApiError::VersionExists(format!(
            "{} {} {version} already exists (or existed): versions are never reused",
            package.kind, package.name
        ))),
    }
}

/// Removes the blob a failed publish wrote, unless a version refers to it.
/// Best effort: the sweep removes whatever this misses.
async fn discard_blob(state: &AppState, sha256: &Sha256Digest) {
    match state.db.blob_is_referenced(sha256).await {
        Ok(false) => {
            if let Err(e) = state.blobs.delete(sha256).await {
                tracing::warn!(error = %e, blob = %sha256, "cannot discard an unpublished blob");
            }
        }
        Ok(true) => {}
        Err(e) => tracing::warn!(error = %e, blob = %sha256, "cannot check a blob's references"),
    }
}

/// Verifies and publishes a spooled container for `auth`. The upload limit
/// bounds the compressed container.
pub async fn publish(
    state: &AppState,
    auth: &Authenticated,
    upload: &SpooledUpload,
    container: Container,
) -> Result<PublishOutcome, ApiError> {
    auth.require(Scope::Publish)?;
    let manifest = container.manifest();
    let (kind, name, version) = (manifest.kind(), manifest.name(), manifest.version());
    auth.require_package(name)?;
    let signer = check_signer(state, auth, &container).await?;
    let definition = read_definition(&container)?;
    if let Some(view) = check_package(state, auth, &container, &upload.sha256).await? {
        return Ok(PublishOutcome::Unchanged(Box::new(view)));
    }
    check_dependencies_exist(state, name, &definition.required_tools).await?;
    let lockfile = match kind {
        Kind::Agent => check_lock(state, &container).await?,
        Kind::Tool => None,
    };
    let manifest_json: Value = serde_json::to_value(manifest).map_err(ApiError::internal)?;

    state
        .blobs
        .put_file(upload.path(), &upload.sha256)
        .await
        .map_err(ApiError::internal)?;
    let new = NewVersion {
        kind,
        name,
        version,
        sha256: &upload.sha256,
        size: upload.size,
        signer_key_id: Some(&signer),
        manifest: &manifest_json,
        spec: &definition.spec,
        lockfile: lockfile.as_ref(),
        dependencies: &definition.dependencies,
        description: &definition.description,
        keywords: &definition.keywords,
        publisher: auth.account_id,
    };
    let published = match state.db.publish_version(&new).await {
        Ok(published) => published,
        Err(err) => {
            let answer = match err {
                PublishError::NameTaken { .. } | PublishError::SpelledDifferently { .. } => {
                    ApiError::NameTaken(err.to_string())
                }
                PublishError::NotOwner { .. } => ApiError::NotOwner(err.to_string()),
                PublishError::VersionExists { .. } => {
                    // Lost a race: identical bytes are still a retry.
                    let package = state.db.find_package(kind, name).await?;
                    match package {
                        Some(package) => {
                            match existing_version(state, &package, &container, &upload.sha256)
                                .await
                            {
                                Ok(Some(view)) => {
                                    return Ok(PublishOutcome::Unchanged(Box::new(view)));
                                }
                                Ok(None) => ApiError::VersionExists(err.to_string()),
                                Err(e) => e,
                            }
                        }
                        None => ApiError::VersionExists(err.to_string()),
                    }
                }
                PublishError::Db(e) => ApiError::internal(e),
            };
            discard_blob(state, &upload.sha256).await;
            return Err(answer);
        }
    };
    state.metrics.publishes.inc();
    tracing::info!(%kind, %name, %version, sha256 = %upload.sha256, by = %auth.username, new_package = published.new_package, "published");
    let package = state
        .db
        .find_package(kind, name)
        .await?
        .ok_or_else(|| ApiError::internal(anyhow::anyhow!("the published package vanished")))?;
    let record = state
        .db
        .find_version(package.id, version)
        .await?
        .ok_or_else(|| ApiError::internal(anyhow::anyhow!("the published version vanished")))?;
    Ok(PublishOutcome::Created(Box::new(
        version_view(state, &package, record).await?,
    )))
}
