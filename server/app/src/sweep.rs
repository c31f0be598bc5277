//! The periodic blob sweep: every replica runs it on its own timer. A sweep
//! deletes only blobs that no version refers to and that are older than the
//! grace period, and deleting a blob twice is harmless, so overlapping
//! sweeps of several replicas are safe.

use std::{collections::HashSet, time::Duration};

use agentlang_core::digest::Sha256Digest;
use store::{Blobs, Db};

use crate::Registry;
pub use store::blobs::SweepReport;

/// Deletes the blobs no live version refers to that are older than
/// `grace`. The referenced set is read after listing would begin, so a
/// version committed before the sweep started is always protected.
pub async fn sweep_unreferenced(
    db: &Db,
    blobs: &Blobs,
    grace: Duration,
) -> anyhow::Result<SweepReport> {
    let referenced: HashSet<Sha256Digest> =
        db.referenced_blob_digests().await?.into_iter().collect();
    Ok(blobs.sweep(&referenced, grace).await?)
}

/// One sweep with the configured grace period.
pub async fn sweep_once(registry: &Registry) -> anyhow::Result<SweepReport> {
    let report =
        sweep_unreferenced(&registry.db, &registry.blobs, registry.settings.sweep_grace).await?;
    if !report.deleted.is_empty() {
        tracing::info!(
            deleted = report.deleted.len(),
            referenced = report.referenced,
            young = report.young,
            "swept unreferenced blobs"
        );
    }
    Ok(report)
}

/// Sweeps every `interval` until the task is dropped; failures are logged
/// and retried at the next tick.
pub async fn sweep_periodically(registry: std::sync::Arc<Registry>, interval: Duration) {
    let mut ticks = tokio::time::interval(interval);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    // The first tick is immediate; a starting replica need not sweep at once.
    ticks.tick().await;
    loop {
        ticks.tick().await;
        if let Err(e) = sweep_once(&registry).await {
            tracing::warn!(error = format!("{e:#}"), "blob sweep failed");
        }
    }
}

/// Removes the blob a failed publish wrote, unless a version refers to it.
/// Best effort: the sweep removes whatever this misses.
pub(crate) async fn discard_blob(registry: &Registry, sha256: &Sha256Digest) {
    match registry.db.blob_is_referenced(sha256).await {
        Ok(false) => {
            if let Err(e) = registry.blobs.delete(sha256).await {
                tracing::warn!(error = %e, blob = %sha256.hex(), "cannot discard an unpublished blob");
            }
        }
        Ok(true) => {}
        Err(e) => {
            tracing::warn!(error = %e, blob = %sha256.hex(), "cannot check a blob's references")
        }
    }
}
