//! Every package's index entry kept stored as sent
//! (`store::index_documents`, migration 0050), so that the first read of
//! any package in a large catalog is one row instead of two statements, a
//! rendering and a SHA-256 ([`crate::packages::index_answer`]).
//!
//! The store deletes a package's document in the transaction of each change
//! it shows; this task renders it again. At start it renders every package
//! without a document, in id order, a batch at a time; then, each time the
//! generation moves, the packages the journal says changed (all of them
//! again when it says everything did). A rendering is stored only if its
//! package did not change after the generation it was read at, so a
//! rendering that lost that race is dropped and the change's own move
//! renders the package again. Each replica runs it; the store keeps the
//! first of equal renderings.

use std::{sync::Arc, time::Duration};

use agentlang_core::{Kind, PackageName};
use store::{changes::Change, index_documents::NewIndexDocument};

use crate::{ServiceError, cache::etag_of, packages, registry::Registry};

/// Packages rendered per stored batch: one write transaction each.
const BATCH: i64 = 256;

/// How often the generation is read for a move.
const POLL: Duration = Duration::from_secs(1);

/// After a failed pass or poll (the database unreachable, say): index
/// reads render what is missing meanwhile.
const RETRY: Duration = Duration::from_secs(30);

/// Until the task is stopped: the start-up pass, then one pass per move.
pub async fn keep_index_documents(registry: Arc<Registry>) {
    let mut seen = loop {
        match fill_undocumented(&registry).await {
            Ok(seen) => break seen,
            Err(e) => {
                tracing::warn!(error = %e, "cannot store index documents; retrying in 30 s");
                tokio::time::sleep(RETRY).await;
            }
        }
    };
    loop {
        tokio::time::sleep(POLL).await;
        match follow_changes(&registry, seen).await {
            Ok(now) => seen = now,
            // Retried from the same generation: nothing it names is lost.
            Err(e) => {
                tracing::warn!(error = %e, "cannot store changed index documents; retrying in 30 s");
                tokio::time::sleep(RETRY).await;
            }
        }
    }
}

/// Renders and stores every package without a document; returns the
/// generation read before the pass, which every document is at least as
/// new as (or whose change the next move renders).
async fn fill_undocumented(registry: &Registry) -> Result<i64, ServiceError> {
    let started = std::time::Instant::now();
    let before = registry.db.registry_generation().await?;
    let (mut after, mut rendered, mut stored) = (0, 0, 0);
    loop {
        let packages = registry.db.undocumented_packages(after, BATCH).await?;
        let Some(last) = packages.last() else { break };
        after = last.id;
        let generation = registry.db.registry_generation().await?;
        let names: Vec<(Kind, PackageName)> =
            packages.into_iter().map(|p| (p.kind, p.name)).collect();
        let documents = render(registry, &names).await?;
        rendered += documents.len();
        stored += registry
            .db
            .store_index_documents(generation, &documents)
            .await?;
    }
    // Logged each time: `deploy/bench/run.sh` waits for it.
    tracing::info!(
        rendered,
        stored,
        elapsed_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
        "stored the index entries of every package without one"
    );
    Ok(before)
}

/// Renders again the packages changed after `seen`; returns the generation
/// they were rendered at.
async fn follow_changes(registry: &Registry, seen: i64) -> Result<i64, ServiceError> {
    let now = registry.db.registry_generation().await?;
    if now <= seen {
        return Ok(seen);
    }
    let changes = registry.db.changes_between(seen, now).await?;
    if changes.contains(&Change::Everything) {
        return fill_undocumented(registry).await;
    }
    let names: Vec<(Kind, PackageName)> = changes
        .into_iter()
        .filter_map(|change| match change {
            Change::Package(kind, normalized) => {
                PackageName::new(normalized).ok().map(|name| (kind, name))
            }
            _ => None,
        })
        .collect();
    for chunk in names.chunks(usize::try_from(BATCH).unwrap_or(usize::MAX)) {
        let documents = render(registry, chunk).await?;
        registry.db.store_index_documents(now, &documents).await?;
    }
    Ok(now)
}

/// Each package's entry as [`packages::index_answer`] sends it, rendered
/// afresh (never from a cache). Left out: packages that are gone, and an
/// entry with a version the log has not recorded yet (the start-up
/// backfill sets `log_index` without a journal row).
async fn render(
    registry: &Registry,
    names: &[(Kind, PackageName)],
) -> Result<Vec<NewIndexDocument>, ServiceError> {
    let mut documents = Vec::with_capacity(names.len());
    for (kind, name) in names {
        let index = match packages::get_index(registry, *kind, name).await {
            Ok(index) => index,
            Err(ServiceError::NotFound(_)) => continue,
            Err(e) => return Err(e),
        };
        if index.versions.iter().any(|v| v.log_index.is_none()) {
            continue;
        }
        // The bytes `Rendered::json` would send, kept as text.
        let body = serde_json::to_string(&index).map_err(ServiceError::internal)?;
        documents.push(NewIndexDocument {
            kind: *kind,
            normalized_name: name.normalized(),
            etag: etag_of(body.as_bytes()),
            body,
        });
        // A batch is a few hundred renderings: let requests on this
        // runtime in between them.
        tokio::task::yield_now().await;
    }
    Ok(documents)
}
