//! The transparency log: what each change's entry says, the sequencer that
//! integrates entries into the Merkle tree and signs checkpoints, and what
//! `/log/...` serves (c2sp.org/tlog-tiles, tlog-checkpoint, signed-note,
//! tlog-cosignature).
//!
//! Entries are appended by the writes they record (`db::tlog::AppendLog`).
//! Each replica keeps the tree's stored hashes in memory, up to the
//! checkpoint it serves, and only ever moves to a checkpoint whose root it
//! recomputed from those hashes: a checkpoint that does not extend the one
//! before is refused, and so is one its own key did not sign.

mod log;
mod witness_config;
mod witnesses;

use agentlang_core::{
    Kind, PackageName, Version,
    signing::KeyId,
    tlog::{LogEntry, LogOp},
};
use store::{now, time::rfc3339};

pub use log::{CosignError, LogError, ServedCheckpoint, TransparencyLog};
pub use witness_config::WitnessConfig;

use crate::{Registry, ServiceError};

/// Where a change is in the transparency log (`GET /log/tile/entries/...`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct LogRef {
    /// The entry's index: the leaf's position in the Merkle tree.
    pub index: i64,
}

/// What each change's entry says. The time is now, RFC 3339 UTC.
fn entry(op: LogOp) -> LogEntry {
    LogEntry::new(op, rfc3339(now()))
}

fn package_entry(op: LogOp, kind: Kind, name: &PackageName) -> LogEntry {
    let mut e = entry(op);
    e.kind = Some(kind.as_str().to_owned());
    e.name = Some(name.as_str().to_owned());
    e
}

/// `publish`: the container's digest, signer and publisher.
pub fn publish_entry(
    kind: Kind,
    name: &PackageName,
    version: &Version,
    sha256: &str,
    signer: Option<&str>,
    account: &str,
) -> LogEntry {
    let mut e = package_entry(LogOp::Publish, kind, name);
    e.version = Some(version.to_string());
    e.sha256 = Some(sha256.to_owned());
    e.signer = signer.map(str::to_owned);
    e.account = Some(account.to_owned());
    e
}

/// `yank` (with its reason) or `unyank`, by `account`.
pub fn yank_entry(
    kind: Kind,
    name: &PackageName,
    version: &Version,
    yanked: bool,
    reason: Option<&str>,
    account: &str,
) -> LogEntry {
    let op = if yanked { LogOp::Yank } else { LogOp::Unyank };
    let mut e = package_entry(op, kind, name);
    e.version = Some(version.to_string());
    e.reason = reason.filter(|_| yanked).map(str::to_owned);
    e.account = Some(account.to_owned());
    e
}

/// `owner_add` / `owner_remove`: `account` is the owner concerned.
pub fn owner_entry(op: LogOp, kind: Kind, name: &PackageName, account: &str) -> LogEntry {
    let mut e = package_entry(op, kind, name);
    e.account = Some(account.to_owned());
    e
}

/// `key_add` / `key_revoke` of `account`'s key.
pub fn key_entry(op: LogOp, key: &KeyId, account: &str) -> LogEntry {
    let mut e = entry(op);
    e.signer = Some(key.as_str().to_owned());
    e.account = Some(account.to_owned());
    e
}

/// `grant_add` / `grant_revoke` of an agent's prompt key: `account` is the
/// owner who acted, `grant` the commitment to the grant (never the
/// grantee's name).
pub fn grant_entry(
    op: LogOp,
    name: &PackageName,
    account: &str,
    commitment: &agentlang_core::digest::Sha256Digest,
) -> LogEntry {
    let mut e = package_entry(op, Kind::Agent, name);
    e.account = Some(account.to_owned());
    e.grant = Some(commitment.to_hex());
    e
}

/// `status` of a package (`version` absent) or of one version, by
/// `account`: the new status, its reason and, for a deprecation, the
/// package to use instead.
pub fn status_entry(
    kind: Kind,
    name: &PackageName,
    version: Option<&Version>,
    status: &str,
    reason: Option<&str>,
    successor: Option<&str>,
    account: &str,
) -> LogEntry {
    let mut e = package_entry(LogOp::Status, kind, name);
    e.version = version.map(ToString::to_string);
    e.status = Some(status.to_owned());
    e.reason = reason.map(str::to_owned);
    e.successor = successor.map(str::to_owned);
    e.account = Some(account.to_owned());
    e
}

/// `advisory`: an OSV advisory published, changed or withdrawn by
/// `account`; `sha256` is the hex digest of the document as served.
pub fn advisory_entry(id: &str, modified: &str, sha256: &str, account: &str) -> LogEntry {
    let mut e = entry(LogOp::Advisory);
    e.advisory = Some(id.to_owned());
    e.modified = Some(modified.to_owned());
    e.sha256 = Some(sha256.to_owned());
    e.account = Some(account.to_owned());
    e
}

/// Refuses a change whose entry is longer than an entry bundle can serve
/// (the store refuses to append one too, but a refusal here comes before
/// the change's other writes and says why).
pub fn check_servable(entry: &LogEntry) -> Result<(), ServiceError> {
    entry.to_bytes().map(drop).map_err(|e| {
        ServiceError::Validation(vec![crate::FieldError::new(
            "container",
            format!("its transparency-log entry would be too long: {e}"),
        )])
    })
}

/// Runs the sequencer until the task is dropped, and beside it asks the
/// witnesses with a URL to cosign each new checkpoint
/// (`witnesses::submit_forever`), never in a round's way.
pub async fn run_forever(log: &TransparencyLog, db: &store::Db) {
    tokio::join!(log.sequence_forever(db), witnesses::submit_forever(log, db));
}

// ------------------------------------------------------------ what is served

/// The checkpoint this replica serves, with every cosignature it holds:
/// unavailable while the stored log fails its audit, not found before the
/// first checkpoint.
pub fn checkpoint(registry: &Registry) -> Result<ServedCheckpoint, ServiceError> {
    if registry.tlog.broken().is_some() {
        return Err(ServiceError::Unavailable(
            "the transparency log is not served: its stored entries failed the audit".to_owned(),
        ));
    }
    registry
        .tlog
        .checkpoint()
        .ok_or_else(|| ServiceError::NotFound("a checkpoint".to_owned()))
}

/// The log's verifier key, `<name>+<id>+<base64>`.
pub fn verifier_key(registry: &Registry) -> String {
    registry.tlog.verifier_key()
}

/// A tile of the served tree (hashes, or an entry bundle); `None` when the
/// tree has no such tile.
pub async fn tile(
    registry: &Registry,
    tile: &agentlang_core::tlog::TileAddress,
) -> Result<Option<Vec<u8>>, ServiceError> {
    match tile.level {
        Some(level) => registry
            .tlog
            .hash_tile(&registry.db, level, tile.index, tile.width)
            .await
            .map_err(ServiceError::internal),
        None => registry
            .tlog
            .entry_bundle(&registry.db, tile.index, tile.width)
            .await
            .map_err(ServiceError::internal),
    }
}

/// A receipt for entry `index` (c2sp.org/tlog-proof@v1) at the served
/// checkpoint, with the cosignatures it carries: `extra` is the entry's
/// bytes, so a verifier recomputes the leaf hash and reads what the entry
/// records with the log's key alone. Not found past the served tree. An
/// entry too long for a bundle (a placeholder) gets no `extra`.
pub async fn proof(registry: &Registry, index: u64) -> Result<Vec<u8>, ServiceError> {
    let served = checkpoint(registry)?;
    let not_found = || ServiceError::NotFound(format!("log entry {index}"));
    if index >= served.size {
        return Err(not_found());
    }
    let at = i64::try_from(index).map_err(|_| not_found())?;
    let rows = registry
        .db
        .log_entries(at, at + 1)
        .await
        .map_err(ServiceError::internal)?;
    let (_, entry) = rows.into_iter().next().ok_or_else(not_found)?;
    let proof = registry
        .tlog
        .inclusion_proof(&registry.db, served.size, index)
        .await
        .map_err(ServiceError::internal)?;
    let receipt = agentlang_core::tlog::TlogProof {
        extra: (entry.len() <= agentlang_core::tlog::MAX_ENTRY_LEN).then_some(entry),
        index,
        proof,
        checkpoint: served.note.to_vec(),
    };
    Ok(receipt.to_text())
}

/// A witness's cosignatures of the served checkpoint, kept and served with
/// it from now on; how many were taken.
pub async fn cosign(registry: &Registry, note: &[u8]) -> Result<usize, ServiceError> {
    registry
        .tlog
        .add_cosignatures(&registry.db, note)
        .await
        .map_err(|e| match e {
            CosignError::Invalid(m) => ServiceError::CosignatureInvalid(m),
            CosignError::UnknownWitness => ServiceError::UnknownWitness(e.to_string()),
            CosignError::Stale => ServiceError::Conflict(e.to_string()),
            CosignError::Log(e) => ServiceError::internal(e),
        })
}

/// A window of the log for people: the served checkpoint, the log's
/// names, and up to `count` entries around `at` (the newest without it),
/// newest first.
#[derive(Debug, Clone)]
pub struct LogWindow {
    pub origin: String,
    pub verifier_key: String,
    pub checkpoint: Option<ServedCheckpoint>,
    /// The witnesses whose cosignatures the checkpoint carries.
    pub cosigners: Vec<String>,
    /// Entries in the served tree.
    pub size: u64,
    pub entries: Vec<(u64, serde_json::Value)>,
}

/// The catalog's `/log` page's read model.
pub async fn window(
    registry: &Registry,
    at: Option<u64>,
    count: u64,
) -> Result<LogWindow, ServiceError> {
    let log = &registry.tlog;
    let (entries, size) = log
        .window(&registry.db, at, count)
        .await
        .map_err(ServiceError::internal)?;
    Ok(LogWindow {
        origin: log.origin().to_owned(),
        verifier_key: log.verifier_key(),
        checkpoint: log.checkpoint(),
        cosigners: log.cosigners(),
        size,
        entries,
    })
}
