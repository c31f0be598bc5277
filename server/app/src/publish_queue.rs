//! Publishes commit through one queue, in batches, on a thread of their own.
//!
//! A publish's transaction is the one part of it that cannot run in
//! parallel: SQLite has one writer, and on PostgreSQL the log's append lock
//! is held until the commit's WAL flush. Run from the request handlers,
//! each statement of that section also waited its turn behind whatever else
//! the handler's worker was running, while every other publish waited for
//! the lock. Here the section runs on a thread that does nothing else, and
//! the publishes that queued while one batch committed go together in the
//! next ([`Db::publish_versions`]): one transaction, one flush, one hold of
//! the lock.

use tokio::sync::{mpsc, oneshot};

use crate::ServiceError;
use store::{
    Db,
    packages::{NewVersion, PublishError, PublishedVersion},
};

/// Publishes in one transaction at most: bounds how long one batch holds
/// the write lock, and what one failed batch sends back to be retried one
/// by one.
const MAX_BATCH: usize = 64;

/// Publishes waiting for their turn; the upload slots bound them anyway.
const QUEUE: usize = 1024;

type Outcome = (NewVersion, Result<PublishedVersion, PublishError>);

struct Job {
    version: NewVersion,
    reply: oneshot::Sender<Outcome>,
}

/// The handle publishes commit through. The thread ends when the last
/// handle is dropped.
#[derive(Debug, Clone)]
pub struct PublishQueue {
    jobs: mpsc::Sender<Job>,
}

impl PublishQueue {
    /// Starts the committing thread, with its own single-threaded runtime.
    pub fn start(db: Db) -> std::io::Result<Self> {
        let (jobs, mut queued) = mpsc::channel::<Job>(QUEUE);
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        std::thread::Builder::new()
            .name("publish-commits".to_owned())
            .spawn(move || {
                runtime.block_on(async move {
                    let mut batch = Vec::with_capacity(MAX_BATCH);
                    while queued.recv_many(&mut batch, MAX_BATCH).await > 0 {
                        let versions: Vec<&NewVersion> = batch.iter().map(|j| &j.version).collect();
                        let results = db.publish_versions(&versions).await;
                        drop(versions);
                        for (job, result) in batch.drain(..).zip(results) {
                            // A publish whose request is gone still committed.
                            let _ = job.reply.send((job.version, result));
                        }
                    }
                });
            })?;
        Ok(Self { jobs })
    }

    /// Commits `version` in the next batch; it comes back with the outcome.
    pub async fn commit(&self, version: NewVersion) -> Result<Outcome, ServiceError> {
        let (reply, outcome) = oneshot::channel();
        let stopped = || ServiceError::internal(anyhow::anyhow!("the publish queue has stopped"));
        self.jobs
            .send(Job { version, reply })
            .await
            .map_err(|_| stopped())?;
        outcome.await.map_err(|_| stopped())
    }
}
