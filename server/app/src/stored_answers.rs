//! Every package's index entry and record kept stored as sent
//! (`store::stored_answers`, migrations 0050 and 0051), so that the first
//! read of any package in a large catalog is one row instead of several
//! statements, a rendering and a SHA-256 ([`packages::index_answer`],
//! [`packages::package_record`] read them).
//!
//! The store deletes a package's answers in the transaction of each change
//! they show; this task renders them again. At start it renders every
//! package without both answers, in id order, a batch at a time; then,
//! once a second, the records a download flush deleted
//! (`Registry::records_due`, at most 4,096 packages) and, when the
//! generation moved, the packages the journal says changed (all of them
//! again when it says everything did). A rendering is stored only if what
//! it shows did not change after it was read, so a rendering that lost
//! that race is dropped and the change's own move renders it again.
//! Each replica runs it; the store keeps the first of equal renderings.

use std::{sync::Arc, time::Duration};

use agentlang_core::{Kind, PackageName};
use serde::Serialize;
use store::{
    changes::Change,
    stored_answers::{Answer, NewStoredAnswer, PackageRef},
};

use crate::{ServiceError, cache::etag_of, packages, registry::Registry};

/// Packages rendered per stored batch: one write transaction each.
const BATCH: i64 = 256;
const BATCH_LEN: usize = BATCH as usize;

/// How often the generation is read for a move.
const POLL: Duration = Duration::from_secs(1);

/// After a failed pass or poll (the database unreachable, say): reads
/// render what is missing meanwhile.
const RETRY: Duration = Duration::from_secs(30);

/// Both answers: what a change of the package shows in.
const BOTH: &[Answer] = &[Answer::Index, Answer::Package];

/// Until the task is stopped: the start-up pass, then one pass per move.
pub async fn keep_stored_answers(registry: Arc<Registry>) {
    let mut seen = loop {
        match fill_unanswered(&registry).await {
            Ok(seen) => break seen,
            Err(e) => {
                tracing::warn!(error = %e, "cannot store answers; retrying in 30 s");
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
                tracing::warn!(error = %e, "cannot store changed answers; retrying in 30 s");
                tokio::time::sleep(RETRY).await;
            }
        }
    }
}

/// Renders and stores the answers of every package that lacks one;
/// returns the generation read before the pass, which every answer is at
/// least as new as (or whose change the next move renders).
async fn fill_unanswered(registry: &Registry) -> Result<i64, ServiceError> {
    let started = std::time::Instant::now();
    let before = registry.db.registry_generation().await?;
    let (mut after, mut rendered, mut stored) = (0, 0, 0);
    loop {
        let packages = registry.db.packages_without_answers(after, BATCH).await?;
        let Some(last) = packages.last() else { break };
        after = last.id;
        let (batch_rendered, batch_stored) =
            render_and_store(registry, &names_of(&packages), BOTH).await?;
        rendered += batch_rendered;
        stored += batch_stored;
    }
    // Logged each time: `deploy/bench/run.sh` waits for it.
    tracing::info!(
        rendered,
        stored,
        elapsed_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
        "stored the answers of every package without them"
    );
    Ok(before)
}

/// Renders again the packages changed after `seen`, and the records due
/// after a download flush; returns the generation they were rendered at.
async fn follow_changes(registry: &Registry, seen: i64) -> Result<i64, ServiceError> {
    store_records_due(registry).await?;
    let now = registry.db.registry_generation().await?;
    if now <= seen {
        return Ok(seen);
    }
    let changes = registry.db.changes_between(seen, now).await?;
    if changes.contains(&Change::Everything) {
        return fill_unanswered(registry).await;
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
    for chunk in names.chunks(BATCH_LEN) {
        render_and_store(registry, chunk, BOTH).await?;
    }
    Ok(now)
}

/// Renders and stores the records a download flush deleted; on a failure
/// they stay due.
async fn store_records_due(registry: &Registry) -> Result<(), ServiceError> {
    let due = std::mem::take(&mut *registry.records_due());
    let packages: Vec<PackageRef> = due.into_values().collect();
    for chunk in packages.chunks(BATCH_LEN) {
        if let Err(e) = render_and_store(registry, &names_of(chunk), &[Answer::Package]).await {
            registry.add_records_due(packages);
            return Err(e);
        }
    }
    Ok(())
}

fn names_of(packages: &[PackageRef]) -> Vec<(Kind, PackageName)> {
    packages.iter().map(|p| (p.kind, p.name.clone())).collect()
}

/// `answers` of the packages `names`, rendered after the generation is
/// read and stored in one transaction: (rendered, stored).
async fn render_and_store(
    registry: &Registry,
    names: &[(Kind, PackageName)],
    answers: &[Answer],
) -> Result<(usize, u64), ServiceError> {
    let generation = registry.db.registry_generation().await?;
    let rendered = render(registry, names, answers).await?;
    let stored = registry.db.store_answers(generation, &rendered).await?;
    Ok((rendered.len(), stored))
}

/// Each package's `answers` as the read paths send them, rendered afresh
/// (never from a cache). Left out: packages that are gone, and answers
/// with a version the log has not recorded yet (the start-up backfill
/// sets `log_index` without a journal row).
async fn render(
    registry: &Registry,
    names: &[(Kind, PackageName)],
    answers: &[Answer],
) -> Result<Vec<NewStoredAnswer>, ServiceError> {
    let mut rendered = Vec::with_capacity(names.len() * answers.len());
    for (kind, name) in names {
        for &answer in answers {
            let found = match answer {
                Answer::Index => packages::get_index(registry, *kind, name)
                    .await
                    .map(|index| {
                        let logged = index.versions.iter().all(|v| v.log_index.is_some());
                        logged.then_some((0, to_text(&index)))
                    }),
                Answer::Package => {
                    packages::get_package(registry, *kind, name)
                        .await
                        .map(|record| {
                            let logged = record.versions.iter().all(|v| v.log_index.is_some());
                            logged.then_some((record.downloads, to_text(&record)))
                        })
                }
            };
            let (downloads, body) = match found {
                Ok(Some((downloads, body))) => (downloads, body?),
                Ok(None) | Err(ServiceError::NotFound(_)) => continue,
                Err(e) => return Err(e),
            };
            rendered.push(NewStoredAnswer {
                kind: *kind,
                normalized_name: name.normalized(),
                answer,
                downloads,
                etag: etag_of(body.as_bytes()),
                body,
            });
            // A batch is a few hundred renderings: let requests on this
            // runtime in between them.
            tokio::task::yield_now().await;
        }
    }
    Ok(rendered)
}

/// The bytes `Rendered::json` would send, kept as text.
fn to_text(view: &impl Serialize) -> Result<String, ServiceError> {
    serde_json::to_string(view).map_err(ServiceError::internal)
}
