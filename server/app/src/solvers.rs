//! The threads first-time resolutions run on.
//!
//! A solve is CPU work of about a millisecond: it runs off the async
//! workers, a few at a time per core, in arrival order. Each client (an
//! address) has a share of the threads, a quarter of them: its solves
//! past that wait for its own to finish before they join the queue, so a
//! client sending hard instances holds a quarter of the pool at most, and
//! the work bound in `core::resolve` ends each of them early. A thread that
//! finishes a solve takes the next queued one itself. Through a semaphore
//! and tokio's blocking pool, a finished solve's turn went first to a
//! waiting request's (busy) worker, which then woke a blocking thread;
//! under a steady load of first-time resolves the cores idled several
//! times as much that way as here (`deploy/bench/RESULTS.md`, Decisions).

use std::{
    collections::HashMap,
    panic::AssertUnwindSafe,
    sync::{
        Arc, Mutex, Once, PoisonError,
        atomic::{AtomicBool, AtomicUsize, Ordering},
    },
    time::Duration,
};

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

type Job = Box<dyn FnOnce() + Send>;

/// How long an idle stand-in waits for a job before it looks whether the
/// thread it stands in for is back.
const STAND_IN_IDLE: Duration = Duration::from_millis(100);

/// Solver threads fed from one queue in arrival order. The threads start
/// on first use and end once the pool is dropped and the queue is empty.
#[derive(Debug)]
pub struct SolverPool {
    queue: flume::Sender<Job>,
    jobs: flume::Receiver<Job>,
    size: usize,
    started: Once,
    /// Threads taking jobs now, stand-ins included.
    threads: Arc<AtomicUsize>,
    /// Each client's share: solves it may have queued or running.
    shares: Arc<Mutex<HashMap<String, Arc<Semaphore>>>>,
    share: usize,
}

/// A client's turn, held by its job until the job ends; the client's
/// entry goes when nobody holds or awaits one.
struct Turn {
    permit: Option<OwnedSemaphorePermit>,
    client: String,
    shares: Arc<Mutex<HashMap<String, Arc<Semaphore>>>>,
}

impl Drop for Turn {
    fn drop(&mut self) {
        let mut shares = self.shares.lock().unwrap_or_else(PoisonError::into_inner);
        drop(self.permit.take());
        // The map's own reference is the last one: nobody waits.
        if shares
            .get(&self.client)
            .is_some_and(|s| Arc::strong_count(s) == 1)
        {
            shares.remove(&self.client);
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum SolveFailed {
    #[error("no solver thread could be started")]
    NoThreads,
    /// The solve panicked (its thread carries on with the next one).
    #[error("the solve ended without an answer")]
    NoAnswer,
}

impl SolverPool {
    /// A pool of `size` threads (at least one).
    pub fn new(size: usize) -> Self {
        let (queue, jobs) = flume::unbounded();
        let size = size.max(1);
        Self {
            queue,
            jobs,
            size,
            started: Once::new(),
            threads: Arc::new(AtomicUsize::new(0)),
            shares: Arc::default(),
            share: (size / 4).max(1),
        }
    }

    /// `client`'s turn: at once while it has fewer than its share of solves
    /// queued or running, else when one of them ends; `None` past
    /// `deadline`.
    async fn turn(&self, client: &str, deadline: tokio::time::Instant) -> Option<Turn> {
        let share = {
            let mut shares = self.shares.lock().unwrap_or_else(PoisonError::into_inner);
            Arc::clone(
                shares
                    .entry(client.to_owned())
                    .or_insert_with(|| Arc::new(Semaphore::new(self.share))),
            )
        };
        let mut turn = Turn {
            permit: None,
            client: client.to_owned(),
            shares: Arc::clone(&self.shares),
        };
        let acquired = tokio::time::timeout_at(deadline, Arc::clone(&share).acquire_owned()).await;
        // Released before the turn can drop, so the entry can go.
        drop(share);
        turn.permit = Some(acquired.ok()?.ok()?);
        Some(turn)
    }

    /// Runs `solve` for `client` on a solver thread once it is the
    /// client's turn and the solves queued before it have started; `None`
    /// when `deadline` passes first (the solve is then skipped, or, if it
    /// started, left to its own cancellation).
    pub async fn run<T: Send + 'static>(
        &self,
        client: &str,
        deadline: tokio::time::Instant,
        solve: impl FnOnce() -> T + Send + 'static,
    ) -> Result<Option<T>, SolveFailed> {
        self.started.call_once(|| {
            for _ in 0..self.size {
                if let Err(e) = self.spawn(None) {
                    tracing::error!(error = %e, "cannot start a solver thread");
                }
            }
        });
        if self.threads.load(Ordering::Relaxed) == 0 {
            return Err(SolveFailed::NoThreads);
        }
        let Some(turn) = self.turn(client, deadline).await else {
            return Ok(None);
        };
        let (answer, answered) = tokio::sync::oneshot::channel();
        let job: Job = Box::new(move || {
            // Not solved when the request has gone (timed out, or its
            // client left). The turn goes back before the answer does, so
            // whoever reads the answer finds the client's share free.
            let solved = (!answer.is_closed()).then(solve);
            drop(turn);
            if let Some(solved) = solved {
                let _ = answer.send(solved);
            }
        });
        // Unbounded, and never closed while `self` lives: what is queued is
        // bounded by the requests in flight, each holding one job at most.
        self.queue.send(job).map_err(|_| SolveFailed::NoThreads)?;
        match tokio::time::timeout_at(deadline, answered).await {
            Ok(Ok(solved)) => Ok(Some(solved)),
            Ok(Err(_)) => Err(SolveFailed::NoAnswer),
            Err(_) => Ok(None),
        }
    }

    /// Runs `wait`, which blocks the calling solver thread on something
    /// other than the CPU (an index read), while a stand-in thread takes
    /// its place at the queue: solves queued behind never wait on another's
    /// database read. The stand-in finishes any solve it took, then ends.
    /// Stand-ins are bounded: at most one per pool thread at a time.
    pub fn while_blocked<T>(&self, wait: impl FnOnce() -> T) -> T {
        let back = Arc::new(AtomicBool::new(false));
        if self.threads.load(Ordering::Relaxed) < 2 * self.size
            && let Err(e) = self.spawn(Some(Arc::clone(&back)))
        {
            tracing::warn!(error = %e, "cannot start a stand-in solver thread");
        }
        let waited = wait();
        back.store(true, Ordering::Release);
        waited
    }

    /// Starts a thread taking jobs until the queue closes or, for a
    /// stand-in, until `until` is set.
    fn spawn(&self, until: Option<Arc<AtomicBool>>) -> std::io::Result<()> {
        let jobs = self.jobs.clone();
        let threads = Arc::clone(&self.threads);
        threads.fetch_add(1, Ordering::Relaxed);
        let spawned = std::thread::Builder::new()
            .name("solver".to_owned())
            .spawn(move || {
                serve(&jobs, until.as_deref());
                threads.fetch_sub(1, Ordering::Relaxed);
            });
        if spawned.is_err() {
            self.threads.fetch_sub(1, Ordering::Relaxed);
        }
        spawned.map(drop)
    }
}

fn serve(jobs: &flume::Receiver<Job>, until: Option<&AtomicBool>) {
    loop {
        let job = match until {
            None => match jobs.recv() {
                Ok(job) => job,
                Err(flume::RecvError::Disconnected) => return,
            },
            Some(back) => {
                if back.load(Ordering::Acquire) {
                    return;
                }
                match jobs.recv_timeout(STAND_IN_IDLE) {
                    Ok(job) => job,
                    Err(flume::RecvTimeoutError::Timeout) => continue,
                    Err(flume::RecvTimeoutError::Disconnected) => return,
                }
            }
        };
        // A panicking solve fails its own request (its answer is dropped
        // unsent), not the thread.
        let _ = std::panic::catch_unwind(AssertUnwindSafe(job));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn later(ms: u64) -> tokio::time::Instant {
        tokio::time::Instant::now() + Duration::from_millis(ms)
    }

    #[tokio::test]
    async fn solves_run_in_arrival_order_on_the_pool_threads() {
        let pool = SolverPool::new(1);
        let order = Arc::new(std::sync::Mutex::new(Vec::new()));
        let runs = (0..8).map(|i| {
            let order = Arc::clone(&order);
            pool.run("client", later(5_000), move || {
                order.lock().unwrap().push(i);
                std::thread::current().name().map(str::to_owned)
            })
        });
        let names = futures_util::future::join_all(runs).await;
        assert!(
            names
                .into_iter()
                .all(|n| n.unwrap().unwrap().as_deref() == Some("solver"))
        );
        assert_eq!(*order.lock().unwrap(), (0..8).collect::<Vec<_>>());
    }

    #[tokio::test]
    async fn a_panicking_solve_fails_alone() {
        let pool = SolverPool::new(1);
        let failed = pool.run("client", later(5_000), || panic!("a bug")).await;
        assert!(matches!(failed, Err(SolveFailed::NoAnswer)));
        assert_eq!(
            pool.run("client", later(5_000), || 7).await.unwrap(),
            Some(7)
        );
    }

    #[tokio::test]
    async fn a_blocked_solve_lets_the_next_one_run() {
        let pool = Arc::new(SolverPool::new(1));
        let (release, released) = std::sync::mpsc::channel::<()>();
        let blocked = {
            let inner = Arc::clone(&pool);
            tokio::spawn(async move {
                let pool = Arc::clone(&inner);
                pool.run("client", later(5_000), move || {
                    inner.while_blocked(|| released.recv().unwrap());
                    "blocked"
                })
                .await
            })
        };
        // With one thread, this runs only on the stand-in.
        assert_eq!(
            pool.run("another", later(5_000), || "next").await.unwrap(),
            Some("next")
        );
        release.send(()).unwrap();
        assert_eq!(blocked.await.unwrap().unwrap(), Some("blocked"));
    }

    #[tokio::test]
    async fn a_solve_queued_past_its_deadline_is_skipped() {
        let pool = SolverPool::new(1);
        let (release, released) = std::sync::mpsc::channel::<()>();
        let busy = pool.run("client", later(5_000), move || released.recv().unwrap());
        let ran = Arc::new(AtomicBool::new(false));
        let late = {
            let ran = Arc::clone(&ran);
            pool.run("another", later(20), move || {
                ran.store(true, Ordering::SeqCst)
            })
        };
        let (busy, late) = tokio::join!(busy, async {
            let late = late.await;
            release.send(()).unwrap();
            late
        });
        assert_eq!(late.unwrap(), None);
        busy.unwrap().unwrap();
        // The skipped job was dequeued after the busy one; one more solve
        // behind it shows the queue moved past it without running it.
        assert_eq!(
            pool.run("client", later(5_000), || ()).await.unwrap(),
            Some(())
        );
        assert!(!ran.load(Ordering::SeqCst));
    }

    #[tokio::test]
    async fn a_client_past_its_share_waits_and_others_go_first() {
        // Four threads: a client's share is one.
        let pool = Arc::new(SolverPool::new(4));
        let (release, released) = std::sync::mpsc::channel::<()>();
        let hard = {
            let pool = Arc::clone(&pool);
            tokio::spawn(async move {
                pool.run("greedy", later(5_000), move || released.recv().unwrap())
                    .await
            })
        };
        tokio::time::sleep(Duration::from_millis(50)).await;
        // Its second solve waits for its first, though threads are idle...
        let second = pool.run("greedy", later(100), || "second");
        // ...while another client's runs at once.
        let other = pool.run("innocent", later(5_000), || "innocent");
        let (second, other) = tokio::join!(second, other);
        assert_eq!(other.unwrap(), Some("innocent"));
        assert_eq!(second.unwrap(), None);
        release.send(()).unwrap();
        hard.await.unwrap().unwrap();
        // Its turn is back once its solve ended, and the entry is gone.
        assert_eq!(
            pool.run("greedy", later(5_000), || 1).await.unwrap(),
            Some(1)
        );
        assert!(pool.shares.lock().unwrap().is_empty());
    }
}
