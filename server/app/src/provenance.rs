//! Provenance (docs/provenance.md): a signed statement of where and how a
//! version was built, an in-toto Statement v1 in a DSSE envelope whose
//! subject is the container's SHA-256.
//!
//! A publish may carry one, signed by a registered, unrevoked key of the
//! publisher; a publish through trusted publishing without one gets one
//! made by the registry from the identity it checked, signed with the
//! registry's identity key. Either is stored with the version in the
//! publish's transaction and its SHA-256 is in the publish's log entry.

use std::sync::Arc;

use agentlang_core::{
    Kind, PackageName, Version,
    digest::Sha256Digest,
    provenance::{self, Summary, TrustedRun},
    signing::PublicKey,
};
use store::keys::SigningKeyRecord;
use store::packages::{NewProvenance, ProvenanceSource};

use crate::{ServiceError, oidc::TrustedIdentity, registry::Registry};

pub use provenance::MAX_ENVELOPE_BYTES;

/// Verifies a publisher's `envelope` for the container `sha256` against
/// their unrevoked keys, off the async workers (at most 4 signatures times
/// the account's keys, and a 64 KiB parse).
pub(crate) async fn verify_publisher(
    keys: Arc<Vec<SigningKeyRecord>>,
    envelope: Vec<u8>,
    sha256: Sha256Digest,
) -> Result<NewProvenance, ServiceError> {
    tokio::task::spawn_blocking(move || {
        let public: Vec<PublicKey> = keys
            .iter()
            .filter(|k| k.revoked_at.is_none())
            .filter_map(|k| PublicKey::from_spki_pem(&k.public_key_pem).ok())
            .collect();
        let verified = provenance::verify(&envelope, &public, &sha256)
            .map_err(|e| ServiceError::ProvenanceInvalid(e.to_string()))?;
        stored(envelope, &verified.statement, ProvenanceSource::Publisher)
    })
    .await
    .map_err(ServiceError::internal)?
}

/// The registry's own statement of a trusted-publishing run.
pub(crate) fn registry_made(
    registry: &Registry,
    identity: &TrustedIdentity,
    (kind, name, version): (Kind, &PackageName, &Version),
    sha256: &Sha256Digest,
) -> Result<NewProvenance, ServiceError> {
    let run = TrustedRun {
        issuer: &identity.issuer,
        repository: &identity.repository,
        workflow: &identity.workflow,
        git_ref: identity.git_ref.as_deref(),
        commit: identity.sha.as_deref(),
        run_id: identity.run_id.as_deref(),
        environment: identity.environment.as_deref(),
    };
    let statement = provenance::trusted_run_statement(
        &format!("{kind}/{name}@{version}"),
        sha256,
        &run,
        &registry.settings.public_url,
    );
    let envelope = provenance::seal(
        &statement,
        |m| registry.identity.sign_bytes(m),
        registry.identity.key_id().as_str(),
    );
    stored(envelope, &statement, ProvenanceSource::Registry)
}

fn stored(
    envelope: Vec<u8>,
    statement: &serde_json::Value,
    source: ProvenanceSource,
) -> Result<NewProvenance, ServiceError> {
    let sha256 = Sha256Digest::of(&envelope);
    let summary =
        serde_json::to_string(&provenance::summary(statement)).map_err(ServiceError::internal)?;
    // `verify` parsed it as JSON, so it is UTF-8.
    let envelope = String::from_utf8(envelope).map_err(ServiceError::internal)?;
    Ok(NewProvenance {
        envelope,
        sha256,
        summary,
        source,
    })
}

/// A staged version's envelope checked again at approval: signed by a key
/// of the stager still in force, or (for a trusted run) by the registry.
pub(crate) async fn recheck_staged(
    registry: &Registry,
    stager: i64,
    trusted: bool,
    envelope: String,
    sha256: Sha256Digest,
) -> Result<NewProvenance, ServiceError> {
    let (keys, _) = crate::keys::publishing_keys(registry, stager, true).await?;
    let own = trusted
        .then(|| PublicKey::from_raw(&registry.identity.raw_public_key()).ok())
        .flatten();
    tokio::task::spawn_blocking(move || {
        let mut public: Vec<PublicKey> = own.into_iter().collect();
        let registry_keys = public.len();
        public.extend(
            keys.iter()
                .filter(|k| k.revoked_at.is_none())
                .filter_map(|k| PublicKey::from_spki_pem(&k.public_key_pem).ok()),
        );
        let bytes = envelope.into_bytes();
        let verified = provenance::verify(&bytes, &public, &sha256)
            .map_err(|e| ServiceError::ProvenanceInvalid(e.to_string()))?;
        let source = if verified.key_index < registry_keys {
            ProvenanceSource::Registry
        } else {
            ProvenanceSource::Publisher
        };
        stored(bytes, &verified.statement, source)
    })
    .await
    .map_err(ServiceError::internal)?
}

/// The provenance a publish stores: the publisher's envelope verified, the
/// registry's for a trusted run without one, or none.
pub(crate) async fn for_publish(
    registry: &Registry,
    trusted: Option<&TrustedIdentity>,
    keys: Arc<Vec<SigningKeyRecord>>,
    envelope: Option<Vec<u8>>,
    (kind, name, version): (Kind, &PackageName, &Version),
    sha256: &Sha256Digest,
) -> Result<Option<NewProvenance>, ServiceError> {
    match (envelope, trusted) {
        (Some(envelope), _) => verify_publisher(keys, envelope, *sha256).await.map(Some),
        (None, Some(identity)) => {
            registry_made(registry, identity, (kind, name, version), sha256).map(Some)
        }
        (None, None) => Ok(None),
    }
}

/// A version's stored provenance.
#[derive(Debug, Clone)]
pub struct ProvenanceRecord {
    /// The DSSE envelope exactly as stored; its SHA-256 is in the log.
    pub envelope: String,
    pub summary: Summary,
    /// `publisher` or `registry`.
    pub source: String,
}

/// `GET /api/v1/{kind}/{name}/{version}/provenance`: 404 for a version
/// without one.
pub async fn get_provenance(
    registry: &Registry,
    kind: Kind,
    name: &PackageName,
    version: &Version,
) -> Result<ProvenanceRecord, ServiceError> {
    let package = crate::packages::find_package(registry, kind, name).await?;
    let record = crate::packages::find_version(registry, &package, version).await?;
    of_version(registry, record.id)
        .await?
        .ok_or_else(|| ServiceError::NotFound(format!("provenance of {kind} {name} {version}")))
}

/// The provenance of the version `version_id`, if it has one.
pub async fn of_version(
    registry: &Registry,
    version_id: i64,
) -> Result<Option<ProvenanceRecord>, ServiceError> {
    let Some(stored) = registry.db.version_provenance(version_id).await? else {
        return Ok(None);
    };
    Ok(Some(ProvenanceRecord {
        summary: serde_json::from_str(&stored.summary).map_err(ServiceError::internal)?,
        envelope: stored.envelope,
        source: stored.source,
    }))
}
