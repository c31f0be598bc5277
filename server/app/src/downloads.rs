//! Downloads: where each version's container is (kept at a generation),
//! and the counts of downloads, kept in memory between flushes.

use std::{collections::HashMap, sync::Mutex};

use agentlang_core::{Kind, Version, digest::Sha256Digest};
use store::{Db, stored_answers::PackageRef};

use crate::cache::{GenerationCache, Weight};

/// What a download serves: where the blob is and what to call it.
#[derive(Debug, Clone)]
pub struct Download {
    pub version_id: i64,
    pub digest: Sha256Digest,
    /// Bytes of the container, as recorded at publish.
    pub size: u64,
    /// `attachment; filename="name@version.agent"` (or `.tool`).
    pub disposition: String,
    /// `"<sha256 hex>"`, the `ETag` of every answer: written once.
    pub etag: String,
}

impl Weight for Download {
    fn weight(&self) -> u64 {
        (self.disposition.len() + self.etag.len() + 128) as u64
    }
}

/// Where versions' containers are: (kind, normalized name, version) to its
/// [`Download`], at a registry generation.
pub type DownloadTargets = GenerationCache<(Kind, String, Version), Download>;

pub fn download_targets() -> DownloadTargets {
    // About 100,000 versions' worth.
    GenerationCache::new(100_000, 16 * 1024 * 1024, None)
}

/// Downloads counted in memory and written in one transaction every few
/// seconds, so a download is a map increment, not a write: under a flood
/// of downloads the database sees one small transaction per interval. Each
/// replica counts its own; the totals add up in the database. Counts not
/// yet flushed are lost if the process is killed (at most one interval's).
#[derive(Debug, Default)]
pub struct DownloadCounter {
    pending: Mutex<HashMap<i64, i64>>,
}

/// Distinct versions counted before a flush is due anyway: bounds the map.
const MAX_PENDING_VERSIONS: usize = 100_000;

impl DownloadCounter {
    fn pending(&self) -> std::sync::MutexGuard<'_, HashMap<i64, i64>> {
        self.pending
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Counts one download of a version. Past the map's bound the count is
    /// dropped (and logged): a count is not worth unbounded memory.
    pub fn record(&self, version_id: i64) {
        let mut pending = self.pending();
        if pending.len() >= MAX_PENDING_VERSIONS && !pending.contains_key(&version_id) {
            tracing::warn!(
                version_id,
                "download not counted: too many versions pending"
            );
            return;
        }
        *pending.entry(version_id).or_default() += 1;
    }

    /// Writes every pending count; returns the packages it counted
    /// downloads of (their stored records are gone, to be rendered
    /// again). On failure the counts are kept for the next flush.
    pub async fn flush(&self, db: &Db) -> Result<Vec<PackageRef>, store::Error> {
        let counts: Vec<(i64, i64)> = self.pending().drain().collect();
        if counts.is_empty() {
            return Ok(Vec::new());
        }
        let day = time::OffsetDateTime::now_utc().date().to_string();
        match db.record_downloads(&counts, &day).await {
            Ok(packages) => Ok(packages),
            Err(e) => {
                let mut pending = self.pending();
                for (version_id, count) in counts {
                    *pending.entry(version_id).or_default() += count;
                }
                Err(e)
            }
        }
    }
}
