//! What a publish does under staging (docs/staged-releases.md): the
//! refusals staging adds to every publish (a package requiring staging, a
//! number a staged version holds, a name a pending first version holds)
//! and the write of a verified upload as a staged version. The owners'
//! decisions on it are [`crate::staging`]'s, which builds on the publish;
//! this module is what the publish builds on.

use std::path::Path;

use agentlang_core::{
    Kind, PackageName, Version, container::Container, digest::Sha256Digest, signing::KeyId,
    tlog::LogOp,
};
use serde::Serialize;
use store::{
    staging::{self as stored, NewStaged, StageError, StagedRecord},
    time::rfc3339,
};

use crate::{Registry, ServiceError, packages::VersionView, tlog, tokens::Authenticated};

/// A staged version as its owners see it.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct StagedView {
    /// The staged version's id (a UUIDv7).
    pub id: String,
    #[cfg_attr(feature = "openapi", schema(value_type = String, example = "tool"))]
    pub kind: Kind,
    #[cfg_attr(feature = "openapi", schema(value_type = String))]
    pub name: PackageName,
    #[cfg_attr(feature = "openapi", schema(value_type = String, example = "1.2.0"))]
    pub version: Version,
    /// `sha256:<hex>` of the container.
    pub hash: String,
    pub size: i64,
    /// The signing key's id.
    pub signer: Option<String>,
    pub staged_by: String,
    /// RFC 3339.
    pub staged_at: String,
    /// `pending`, `approved` or `rejected`.
    pub state: String,
    pub decided_by: Option<String>,
    pub decided_at: Option<String>,
    /// A rejection's reason.
    pub reason: Option<String>,
    /// The index of the `stage` log entry.
    pub stage_log_index: i64,
    /// Staged by a trusted-publishing run (its identity is carried to the
    /// version at approval).
    pub trusted: bool,
    /// Where an approved version is published.
    pub location: String,
}

impl From<StagedRecord> for StagedView {
    fn from(r: StagedRecord) -> Self {
        Self {
            location: format!("/api/v1/staged/{}", r.id),
            id: r.id,
            kind: r.kind,
            name: r.name,
            version: r.version,
            hash: r.sha256.to_prefixed(),
            size: r.size,
            signer: r.signer_key_id,
            staged_by: r.staged_by_name,
            staged_at: rfc3339(r.staged_at),
            state: r.state,
            decided_by: r.decided_by_name,
            decided_at: r.decided_at.map(rfc3339),
            reason: r.reason,
            stage_log_index: r.stage_log_index,
            trusted: r.publisher_identity.is_some(),
        }
    }
}

/// A stage of identical bytes already published is refused: the version
/// exists, there is nothing to stage.
pub fn published_already(view: &VersionView) -> ServiceError {
    ServiceError::VersionExists(format!(
        "{} {} {} is published already: versions are never reused",
        view.kind, view.name, view.version
    ))
}

/// What publish and stage refuse because of staging, before their
/// contents are checked: a publish of a package requiring staging; a
/// number a staged version holds; a name without a package whose first
/// version another account staged.
pub async fn check_publish(
    registry: &Registry,
    auth: &Authenticated,
    kind: Kind,
    name: &PackageName,
    version: &Version,
    stage: bool,
) -> Result<(), ServiceError> {
    let package = registry.db.find_package(kind, name).await?;
    if let Some(package) = &package
        && !stage
        && crate::publishing_policy::policy_of_package(registry, package.id)
            .await?
            .staging_required
    {
        return Err(ServiceError::StagingRequired(format!(
            "{kind} {} takes new versions only staged: publish with `agentlang publish --stage` \
             (`?stage=true`) and have an owner approve it",
            package.name
        )));
    }
    if let Some(staged) = registry.db.staged_number(kind, name, version).await? {
        return Err(if staged.state == stored::APPROVED {
            ServiceError::VersionExists(format!(
                "{kind} {} {version} already exists: versions are never reused",
                staged.name
            ))
        } else {
            ServiceError::VersionStaged(format!(
                "{kind} {} {version} is staged ({}): a staged number is taken",
                staged.name, staged.state
            ))
        });
    }
    if package.is_none()
        && registry
            .db
            .pending_stagers(kind, name)
            .await?
            .iter()
            .any(|&stager| stager != auth.account_id)
    {
        return Err(ServiceError::NameTaken(format!(
            "another account staged a first version of the {kind} {name}: the name is held \
             while it is pending"
        )));
    }
    Ok(())
}

/// Stores a verified, checked upload as a staged version: the blob, then
/// the row and its `stage` entry in one transaction.
pub async fn stage(
    registry: &Registry,
    auth: &Authenticated,
    upload: (&Path, &Sha256Digest, u64),
    container: &Container,
    signer: &KeyId,
    provenance: Option<&store::packages::NewProvenance>,
) -> Result<StagedView, ServiceError> {
    let (path, sha256, size) = upload;
    let manifest = container.manifest();
    let (kind, name, version) = (manifest.kind(), manifest.name(), manifest.version());
    let mut entry = tlog::publish_entry(
        kind,
        name,
        version,
        &sha256.to_hex(),
        Some(signer.as_str()),
        auth.username.as_str(),
    );
    entry.op = LogOp::Stage;
    entry.provenance = provenance.map(|p| p.sha256.to_hex());
    tlog::check_servable(&entry)?;
    let package_id = registry.db.find_package(kind, name).await?.map(|p| p.id);
    registry.blobs.put_file(path, sha256).await?;
    let staged = registry
        .db
        .stage_version(&NewStaged {
            id: &uuid::Uuid::now_v7().to_string(),
            kind,
            name,
            version,
            package_id,
            sha256: *sha256,
            size,
            signer_key_id: Some(signer.as_str()),
            staged_by: auth.account_id,
            publisher_identity: crate::trusted_publishing::publisher_identity(auth),
            provenance: provenance.map(|p| p.envelope.clone()),
            log_entry: &entry,
        })
        .await;
    let staged = match staged {
        Ok(staged) => staged,
        Err(e) => {
            crate::sweep::discard_blob(registry, sha256).await;
            return Err(match e {
                StageError::VersionExists(m) => ServiceError::VersionExists(m),
                StageError::VersionStaged(m) => ServiceError::VersionStaged(m),
                StageError::Db(e) => ServiceError::internal(e),
            });
        }
    };
    registry.tlog.appended();
    tracing::info!(%kind, %name, %version, id = %staged.id, by = %auth.username, "staged");
    Ok(staged.into())
}
