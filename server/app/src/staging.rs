//! Staged releases (docs/staged-releases.md): a version uploaded and
//! verified exactly as a publish, stored apart from `versions` (so no read
//! path can list, search, resolve or serve it), visible and downloadable
//! by its package's owners, until an owner approves it (then it goes
//! through the publish's own insert path, checked again against the
//! registry as it is then) or rejects it. Staging, approval and rejection
//! are each a log entry.
//!
//! Who may see and decide a staged version: the owners of its package; of
//! a first version (no package yet), the account that staged it, which
//! holds the name while it is pending. A trusted-publishing token may
//! stage but never decide: approval is a person's act.

use std::io::Cursor;

use agentlang_core::{
    container::{self, Container, Limits},
    signing::PublicKey,
    tlog::{LogEntry, LogOp},
};
use serde::{Deserialize, Serialize};
use store::{
    names::Scope,
    packages::{NewVersion, PackageRecord, PublishError},
    staging::{self as stored, StagedRecord},
};

use crate::{
    Registry, ServiceError,
    packages::VersionView,
    publish::{Contents, check_contents, read_definition},
    tlog,
    tokens::Authenticated,
};

/// A rejection's reason, at most.
pub use crate::stage::StagedView;

pub const MAX_REASON_CHARS: usize = 500;

/// `GET /api/v1/staged`'s query.
#[derive(Debug, Clone, Default, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::IntoParams))]
#[serde(deny_unknown_fields)]
pub struct StagedQuery {
    /// `pending` (the default), `approved`, `rejected` or `all`.
    pub state: Option<String>,
    /// The `next` of the previous page.
    pub after: Option<String>,
    /// Rows per page: 1 to 100, 50 by default.
    pub limit: Option<i64>,
}

/// A page of staged versions, oldest first.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct StagedPage {
    pub staged: Vec<StagedView>,
    /// Send as `after` for the next page; absent on the last.
    pub next: Option<String>,
}

/// `POST /api/v1/staged/{id}/reject`'s body.
#[derive(Debug, Clone, Default, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct RejectBody {
    /// Why, for the log and the other owners (at most 500 characters).
    pub reason: Option<String>,
}

/// The staged version `id` if `auth`'s account may see it (else 404, so
/// its existence is not told), with its package when there is one.
async fn visible(
    registry: &Registry,
    auth: &Authenticated,
    id: &str,
) -> Result<(StagedRecord, Option<PackageRecord>), ServiceError> {
    let missing = || ServiceError::NotFound(format!("staged version {id}"));
    let record = registry.db.find_staged(id).await?.ok_or_else(missing)?;
    let package = registry.db.find_package(record.kind, &record.name).await?;
    let may_see = match &package {
        Some(package) => registry.db.is_owner(package.id, auth.account_id).await?,
        None => record.staged_by == auth.account_id,
    };
    if !may_see {
        return Err(missing());
    }
    Ok((record, package))
}

/// The staged versions of the caller's packages (and of names it staged a
/// first version of), pending by default.
pub async fn list(
    registry: &Registry,
    auth: &Authenticated,
    query: &StagedQuery,
) -> Result<StagedPage, ServiceError> {
    let state = match query.state.as_deref().unwrap_or(stored::PENDING) {
        "all" => None,
        s @ (stored::PENDING | stored::APPROVED | stored::REJECTED) => Some(s),
        other => {
            return Err(ServiceError::Malformed(format!(
                "state must be pending, approved, rejected or all, not {other:?}"
            )));
        }
    };
    let limit = query.limit.unwrap_or(50);
    if !(1..=stored::MAX_PAGE).contains(&limit) {
        return Err(ServiceError::Malformed(format!(
            "limit must be 1 to {}",
            stored::MAX_PAGE
        )));
    }
    let rows = registry
        .db
        .list_staged(auth.account_id, state, query.after.as_deref(), limit)
        .await?;
    let full = i64::try_from(rows.len()).unwrap_or(i64::MAX) == limit;
    let next = full.then(|| rows.last().map(|r| r.id.clone())).flatten();
    Ok(StagedPage {
        staged: rows.into_iter().map(StagedView::from).collect(),
        next,
    })
}

/// One staged version the caller may see.
pub async fn get(
    registry: &Registry,
    auth: &Authenticated,
    id: &str,
) -> Result<StagedView, ServiceError> {
    Ok(visible(registry, auth, id).await?.0.into())
}

/// A staged container as downloaded by its owners: its digest, size and
/// file name.
#[derive(Debug)]
pub struct StagedDownload {
    pub digest: agentlang_core::digest::Sha256Digest,
    pub size: u64,
    pub disposition: String,
}

/// What the download of a staged version's container serves (pending or
/// approved: a rejected one's container may be gone).
pub async fn download(
    registry: &Registry,
    auth: &Authenticated,
    id: &str,
) -> Result<(StagedDownload, store::blobs::BlobBody), ServiceError> {
    let (record, _) = visible(registry, auth, id).await?;
    if record.state == stored::REJECTED {
        return Err(ServiceError::NotFound(format!(
            "the container of the rejected staged version {id}"
        )));
    }
    let size = u64::try_from(record.size).unwrap_or_default();
    let (_, body) = registry
        .blobs
        .download(&record.sha256, size, None)
        .await?
        .ok_or_else(|| ServiceError::NotFound(format!("the container of staged version {id}")))?;
    Ok((
        StagedDownload {
            digest: record.sha256,
            size,
            disposition: format!(
                "attachment; filename=\"{}@{}.{}\"",
                record.name,
                record.version,
                record.kind.extension()
            ),
        },
        body,
    ))
}

/// Who may decide: a person (never a trusted-publishing token) with the
/// `publish` scope for the name, owning the package (or, for a first
/// version, the account that staged it); only while pending.
async fn decidable(
    registry: &Registry,
    auth: &Authenticated,
    id: &str,
    otp: Option<&str>,
) -> Result<(StagedRecord, Option<PackageRecord>), ServiceError> {
    auth.require(Scope::Publish)?;
    let (record, package) = visible(registry, auth, id).await?;
    auth.require_package(&record.name)?;
    if auth.trusted.is_some() {
        return Err(ServiceError::NotOwner(
            "a trusted-publishing token may stage but not decide: an owner approves or rejects"
                .to_owned(),
        ));
    }
    if record.state != stored::PENDING {
        return Err(ServiceError::StagedDecided(format!(
            "staged version {id} was {} already",
            record.state
        )));
    }
    // The decision is what a stolen token must not make alone: the second
    // factor, when enrolled or when the package's policy requires one.
    match &package {
        Some(package) => crate::owners::step_up_for(registry, auth.actor(), package, otp).await?,
        None => crate::two_factor::step_up(registry, auth.account_id, None, otp).await?,
    }
    Ok((record, package))
}

/// Reads a staged container back from blob storage.
async fn read_staged(
    registry: &Registry,
    record: &StagedRecord,
) -> Result<Container, ServiceError> {
    let bytes = registry.blobs.get(&record.sha256).await?.ok_or_else(|| {
        ServiceError::internal(anyhow::anyhow!(
            "the blob of staged version {} is missing",
            record.id
        ))
    })?;
    let limits = Limits {
        max_compressed_bytes: u64::try_from(bytes.len()).unwrap_or(u64::MAX),
        ..Limits::default()
    };
    tokio::task::spawn_blocking(move || container::read(Cursor::new(bytes), &limits))
        .await
        .map_err(ServiceError::internal)?
        .map_err(|e| ServiceError::ContainerInvalid(e.to_string()))
}

/// Approves a pending staged version: it is checked again as a publish
/// would be now (the signer's key still the stager's and unrevoked, the
/// whole package, its lock and dependencies against the registry as it
/// is), then published through the publish's insert path: one
/// transaction writes the version, its `publish` entry (naming the stage
/// entry, by the approver) and marks the row approved.
pub async fn approve(
    registry: &Registry,
    auth: &Authenticated,
    id: &str,
    otp: Option<&str>,
) -> Result<VersionView, ServiceError> {
    let (record, package) = decidable(registry, auth, id, otp).await?;
    if let Some(package) = &package {
        crate::statuses::refuse_publish(registry, package).await?;
    }
    let container = read_staged(registry, &record).await?;
    let signer = container.manifest().signer().clone();
    let key = registry
        .db
        .find_signing_key_with_owner(&signer)
        .await?
        .filter(|k| k.owner.as_str() == record.staged_by_name)
        .ok_or_else(|| {
            ServiceError::UnknownKey(format!(
                "key {signer} is no longer registered to {}, who staged this version",
                record.staged_by_name
            ))
        })?;
    if key.revoked_at.is_some() {
        return Err(ServiceError::KeyRevoked(format!(
            "the container is signed by key {signer}, which has been revoked since it was staged"
        )));
    }
    let public = PublicKey::from_spki_pem(&key.public_key_pem).map_err(ServiceError::internal)?;
    container
        .verify_signature(&public)
        .map_err(|e| ServiceError::SignatureInvalid(e.to_string()))?;
    let (container, definition) = read_definition(container).await?;
    let Contents {
        definition,
        lockfile,
        quality_report,
        extras,
        max_risk,
        ..
    } = check_contents(registry, &container, definition, &signer).await?;
    let manifest = container.manifest();
    let (kind, name, version) = (manifest.kind(), manifest.name(), manifest.version());
    let mut log_entry: LogEntry = tlog::publish_entry(
        kind,
        name,
        version,
        &record.sha256.to_hex(),
        Some(signer.as_str()),
        auth.username.as_str(),
    );
    log_entry.staged = u64::try_from(record.stage_log_index).ok();
    let provenance = match record.provenance.clone() {
        Some(envelope) => Some(
            crate::provenance::recheck_staged(
                registry,
                record.staged_by,
                record.publisher_identity.is_some(),
                envelope,
                record.sha256,
            )
            .await?,
        ),
        None => None,
    };
    log_entry.provenance = provenance.as_ref().map(|p| p.sha256.to_hex());
    tlog::check_servable(&log_entry)?;
    let new = NewVersion {
        kind,
        name: name.clone(),
        version: version.clone(),
        sha256: record.sha256,
        size: u64::try_from(record.size).unwrap_or_default(),
        signer_key_id: Some(signer.clone()),
        manifest: serde_json::to_value(manifest).map_err(ServiceError::internal)?,
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
        // The stager published it (their key signed it); the approver is
        // named by the log entry.
        publisher: record.staged_by,
        log_entry,
        publisher_identity: record.publisher_identity.clone(),
        provenance,
    };
    let (_, committed) = registry.publish_queue.commit(new).await?;
    if let Err(err) = committed {
        return Err(match err {
            PublishError::NameTaken { .. } | PublishError::SpelledDifferently { .. } => {
                ServiceError::NameTaken(err.to_string())
            }
            PublishError::NotOwner { .. } => ServiceError::NotOwner(format!(
                "{} staged this version and is no longer an owner of {kind} {name}: reject it",
                record.staged_by_name
            )),
            PublishError::KeyRevoked { .. } => ServiceError::KeyRevoked(err.to_string()),
            PublishError::VersionExists { .. } => ServiceError::VersionExists(err.to_string()),
            PublishError::StagedDecided => {
                ServiceError::StagedDecided(format!("staged version {id} was decided meanwhile"))
            }
            PublishError::Db(e) => ServiceError::internal(e),
        });
    }
    registry.tlog.appended();
    registry.metrics.publishes.inc();
    tracing::info!(%kind, %name, %version, %id, by = %auth.username, "staged version approved");
    crate::packages::get_version(registry, kind, name, version).await
}

/// Rejects a pending staged version: a `reject` entry naming its stage
/// entry; its container is deleted (unless a version holds the same
/// bytes); its number stays taken.
pub async fn reject(
    registry: &Registry,
    auth: &Authenticated,
    id: &str,
    reason: Option<&str>,
    otp: Option<&str>,
) -> Result<StagedView, ServiceError> {
    let reason = reason.map(str::trim).filter(|r| !r.is_empty());
    if reason.is_some_and(|r| r.chars().count() > MAX_REASON_CHARS) {
        return Err(ServiceError::Validation(vec![crate::FieldError::new(
            "reason",
            format!("at most {MAX_REASON_CHARS} characters"),
        )]));
    }
    let (record, _) = decidable(registry, auth, id, otp).await?;
    let mut entry = tlog::publish_entry(
        record.kind,
        &record.name,
        &record.version,
        &record.sha256.to_hex(),
        record.signer_key_id.as_deref(),
        auth.username.as_str(),
    );
    entry.op = LogOp::Reject;
    entry.staged = u64::try_from(record.stage_log_index).ok();
    entry.reason = reason.map(str::to_owned);
    tlog::check_servable(&entry)?;
    if registry
        .db
        .reject_staged(id, auth.account_id, reason, &entry)
        .await?
        .is_none()
    {
        return Err(ServiceError::StagedDecided(format!(
            "staged version {id} was decided meanwhile"
        )));
    }
    registry.tlog.appended();
    crate::sweep::discard_blob(registry, &record.sha256).await;
    tracing::info!(kind = %record.kind, name = %record.name, version = %record.version, %id, by = %auth.username, "staged version rejected");
    let (record, _) = visible(registry, auth, id).await?;
    Ok(record.into())
}
