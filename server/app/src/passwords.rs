//! Passwords as the registry accepts, hashes and checks them: argon2id
//! on threads of its own, one per core ([`PasswordWork`]), behind a queue
//! each client has only a small share of.

use std::fmt;

use argon2::{
    Algorithm as Argon2Algorithm, Argon2, Block, Params, PasswordHash, Version as Argon2Version,
    password_hash::{Output, ParamsString, SaltString},
};

use crate::ServiceError;

/// A password as accepted at registration: 8 to 1024 bytes. Its `Debug`
/// never shows it.
#[derive(Clone)]
pub struct Password(String);

pub const MIN_PASSWORD_LEN: usize = 8;
pub const MAX_PASSWORD_LEN: usize = 1024;

impl Password {
    pub fn parse(s: &str) -> Result<Self, String> {
        if s.len() < MIN_PASSWORD_LEN {
            return Err(format!("must be at least {MIN_PASSWORD_LEN} bytes"));
        }
        if s.len() > MAX_PASSWORD_LEN {
            return Err(format!("must be at most {MAX_PASSWORD_LEN} bytes"));
        }
        Ok(Self(s.to_owned()))
    }
}

impl Password {
    /// The password itself, for hashing.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Password {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Password(..)")
    }
}

/// Checks allowed to wait for a password thread, per thread: with one
/// argon2 run taking tens of milliseconds, a full queue drains well within
/// a request's deadline.
const WAITING_PER_THREAD: usize = 256;

/// Checks one client (address) may have waiting at once. The queue is
/// served in arrival order, so with this share a spray of wrong passwords
/// from many addresses puts at most this many checks of each ahead of an
/// innocent sign-in: it waits its turn instead of finding the queue full.
pub const WAITING_PER_CLIENT: usize = 2;

type Job = Box<dyn FnOnce() + Send>;

/// What the password threads take work from.
#[derive(Default)]
struct Queue {
    jobs: std::collections::VecDeque<(String, Job)>,
    /// Jobs waiting per client key; a key with none is removed.
    waiting: std::collections::HashMap<String, usize>,
    /// The registry is gone: threads finish what is queued and stop.
    closed: bool,
}

type Shared = std::sync::Arc<(std::sync::Mutex<Queue>, std::sync::Condvar)>;

fn lock(shared: &Shared) -> std::sync::MutexGuard<'_, Queue> {
    shared
        .0
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Threads of their own for argon2, one per core, fed through a queue
/// shared fairly between clients. Their own, not the shared blocking pool:
/// each argon2 run takes 19 MiB, and the allocator keeps that much per
/// thread that ever ran one, so runs spread over hundreds of pool threads
/// would hold hundreds of MiB.
///
/// Fairness: a queue open to everyone is filled by whoever sends most, so
/// each client (address) may have only [`WAITING_PER_CLIENT`] checks
/// waiting; past that its next one is answered 429 at once, while a
/// client with none waiting is queued behind at most that many of each
/// other client's. The whole queue is long ([`WAITING_PER_THREAD`] per
/// thread) because it is this share, not the length, that bounds what one
/// client holds; a check whose caller gave up (its deadline passed) is
/// dropped unrun when its turn comes.
pub struct PasswordWork {
    shared: Shared,
    threads: usize,
}

impl std::fmt::Debug for PasswordWork {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PasswordWork")
            .field("threads", &self.threads)
            .finish_non_exhaustive()
    }
}

impl PasswordWork {
    pub fn new(threads: usize) -> Self {
        let threads = threads.max(1);
        let shared: Shared = Shared::default();
        for i in 0..threads {
            let shared = Shared::clone(&shared);
            let spawned = std::thread::Builder::new()
                .name(format!("argon2-{i}"))
                .spawn(move || {
                    while let Some(job) = next_job(&shared) {
                        job();
                    }
                });
            if let Err(e) = spawned {
                tracing::error!(error = %e, "cannot start a password thread");
            }
        }
        Self { shared, threads }
    }

    /// One thread per core.
    pub fn per_core() -> Self {
        Self::new(std::thread::available_parallelism().map_or(1, std::num::NonZero::get))
    }

    /// Runs `work` on a password thread for `client` (the key of its
    /// share); 429 at once when the client has its share waiting or the
    /// queue is full.
    pub(crate) async fn run<T: Send + 'static>(
        &self,
        client: &str,
        work: impl FnOnce() -> T + Send + 'static,
    ) -> Result<T, ServiceError> {
        let (done, result) = tokio::sync::oneshot::channel();
        let job: Job = Box::new(move || {
            // Nobody waits for it any more (the request's deadline passed):
            // its argon2 run would be wasted on the queue's time.
            if !done.is_closed() {
                let _ = done.send(work());
            }
        });
        {
            let mut queue = lock(&self.shared);
            let mine = queue.waiting.get(client).copied().unwrap_or(0);
            if mine >= WAITING_PER_CLIENT || queue.jobs.len() >= self.threads * WAITING_PER_THREAD {
                return Err(ServiceError::RateLimited {
                    retry_after_secs: 1,
                });
            }
            *queue.waiting.entry(client.to_owned()).or_default() += 1;
            queue.jobs.push_back((client.to_owned(), job));
        }
        self.shared.1.notify_one();
        result
            .await
            .map_err(|_| ServiceError::internal(anyhow::anyhow!("a password check was dropped")))
    }
}

/// The next job for a password thread, waiting for one; `None` once the
/// registry is gone and the queue is empty.
fn next_job(shared: &Shared) -> Option<Job> {
    let mut queue = lock(shared);
    loop {
        if let Some((client, job)) = queue.jobs.pop_front() {
            if let Some(n) = queue.waiting.get_mut(&client) {
                *n -= 1;
                if *n == 0 {
                    queue.waiting.remove(&client);
                }
            }
            return Some(job);
        }
        if queue.closed {
            return None;
        }
        queue = shared
            .1
            .wait(queue)
            .unwrap_or_else(std::sync::PoisonError::into_inner);
    }
}

impl Drop for PasswordWork {
    /// The threads stop once the queue is empty (a registry in a test
    /// process is opened and dropped many times).
    fn drop(&mut self) {
        lock(&self.shared).closed = true;
        self.shared.1.notify_all();
    }
}

#[derive(Debug, thiserror::Error)]
pub enum PasswordError {
    #[error("password hashing failed: {0}")]
    Hash(String),
    #[error("no randomness for a salt: {0}")]
    Random(String),
}

/// Hashes with argon2id and a fresh salt. CPU-heavy: call it off the async
/// workers (the password threads of `crate::credentials`).
pub fn hash_password(password: &Password) -> Result<String, PasswordError> {
    let hash_err = |e: &dyn std::fmt::Display| PasswordError::Hash(e.to_string());
    let mut salt = [0u8; 16];
    getrandom::fill(&mut salt).map_err(|e| PasswordError::Random(e.to_string()))?;
    let params = Params::default();
    let mut out = [0u8; Params::DEFAULT_OUTPUT_LEN];
    let argon2 = Argon2::new(
        Argon2Algorithm::Argon2id,
        Argon2Version::V0x13,
        params.clone(),
    );
    argon2_with_kept_memory(&argon2, password.expose().as_bytes(), &salt, &mut out)
        .map_err(|e| hash_err(&e))?;
    let salt = SaltString::encode_b64(&salt).map_err(|e| hash_err(&e))?;
    let hash = PasswordHash {
        algorithm: Argon2Algorithm::Argon2id.ident(),
        version: Some(Argon2Version::V0x13.into()),
        params: ParamsString::try_from(&params).map_err(|e| hash_err(&e))?,
        salt: Some(salt.as_salt()),
        hash: Some(Output::new(&out).map_err(|e| hash_err(&e))?),
    };
    Ok(hash.to_string())
}

/// Checks a password against a stored hash (any argon2 PHC string).
/// CPU-heavy, like hashing.
pub fn verify_password(password: &str, stored_hash: &str) -> bool {
    let Ok(hash) = PasswordHash::new(stored_hash) else {
        return false;
    };
    let (Ok(algorithm), Ok(params), Some(salt), Some(expected)) = (
        Argon2Algorithm::try_from(hash.algorithm),
        Params::try_from(&hash),
        hash.salt,
        hash.hash,
    ) else {
        return false;
    };
    let Ok(version) = hash
        .version
        .map_or(Ok(Argon2Version::default()), Argon2Version::try_from)
    else {
        return false;
    };
    let mut salt_bytes = [0u8; 64];
    let Ok(salt) = salt.decode_b64(&mut salt_bytes) else {
        return false;
    };
    let mut out = vec![0u8; expected.len()];
    let argon2 = Argon2::new(algorithm, version, params);
    argon2_with_kept_memory(&argon2, password.as_bytes(), salt, &mut out).is_ok()
        // `Output` compares in constant time.
        && Output::new(&out).is_ok_and(|computed| computed == expected)
}

thread_local! {
    /// The memory of the last argon2 run on this thread, reused by the next.
    /// A fresh 19 MiB per run is what glibc's allocator then keeps (its
    /// mmap threshold rises to the size of the first block freed): a login
    /// spray grew the registry by many such blocks (`deploy/bench/RESULTS.md`,
    /// Decisions). Reused, it is 19 MiB per password thread, once.
    static ARGON2_MEMORY: std::cell::RefCell<Vec<Block>> = const { std::cell::RefCell::new(Vec::new()) };
}

fn argon2_with_kept_memory(
    argon2: &Argon2<'_>,
    password: &[u8],
    salt: &[u8],
    out: &mut [u8],
) -> argon2::Result<()> {
    let blocks = argon2.params().block_count();
    ARGON2_MEMORY.with_borrow_mut(|memory| {
        if memory.len() < blocks {
            memory.resize(blocks, Block::default());
        }
        argon2.hash_password_into_with_memory(password, salt, out, &mut memory[..blocks])
    })
}

/// A valid argon2id hash of a password nobody knows: verifying against it
/// when the username does not exist keeps the response time the same, so
/// timing does not reveal which usernames exist.
pub fn decoy_hash() -> &'static str {
    static DECOY: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    DECOY.get_or_init(|| {
        let password =
            Password::parse(&uuid::Uuid::new_v4().to_string()).expect("a uuid is long enough");
        hash_password(&password).unwrap_or_default()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn each_client_has_a_share_of_the_queue_and_abandoned_work_is_skipped() {
        use futures_util::FutureExt;
        use std::sync::{
            Arc,
            atomic::{AtomicBool, Ordering},
        };
        let work = PasswordWork::new(1);
        let (started, running) = std::sync::mpsc::channel();
        let (release, hold) = std::sync::mpsc::channel::<()>();
        // The only thread takes a job that waits for the test...
        let mut first = Box::pin(work.run("a", move || {
            started.send(()).unwrap();
            hold.recv().is_ok()
        }));
        assert!((&mut first).now_or_never().is_none());
        running
            .recv_timeout(std::time::Duration::from_secs(10))
            .unwrap();
        // ...a sprayer queues its share...
        let mut sprayed: Vec<_> = (0..WAITING_PER_CLIENT)
            .map(|_| Box::pin(work.run("sprayer", || true)))
            .collect();
        for job in &mut sprayed {
            assert!(job.now_or_never().is_none(), "queued");
        }
        // ...and one more of its checks is refused at once, without waiting...
        let refused = work
            .run("sprayer", || true)
            .now_or_never()
            .expect("answered at once")
            .unwrap_err();
        assert!(
            matches!(refused, ServiceError::RateLimited { .. }),
            "{refused:?}"
        );
        // ...while another client still gets in line, behind the share.
        let mut innocent = Box::pin(work.run("innocent", || true));
        assert!((&mut innocent).now_or_never().is_none(), "queued");
        // A check whose caller gave up is never run.
        let ran = Arc::new(AtomicBool::new(false));
        let mut abandoned = {
            let ran = Arc::clone(&ran);
            Box::pin(work.run("leaver", move || ran.store(true, Ordering::SeqCst)))
        };
        assert!((&mut abandoned).now_or_never().is_none(), "queued");
        drop(abandoned);
        release.send(()).unwrap();
        assert!(first.await.unwrap());
        for job in sprayed {
            assert!(job.await.unwrap());
        }
        assert!(innocent.await.unwrap());
        // The queue is drained in order: the abandoned job's turn has come
        // (the next job runs after it) and it did not run.
        assert!(work.run("sprayer", || true).await.unwrap());
        assert!(!ran.load(Ordering::SeqCst));
    }

    #[test]
    fn passwords_hash_and_verify() {
        let hash = hash_password(&Password::parse("correct horse").unwrap()).unwrap();
        assert!(hash.starts_with("$argon2id$"));
        assert!(verify_password("correct horse", &hash));
        assert!(!verify_password("wrong horse", &hash));
        assert!(!verify_password("correct horse", "not a hash"));
    }

    #[test]
    fn password_hashes_agree_with_the_argon2_crates_own() {
        use argon2::{PasswordHasher, PasswordVerifier};
        // Ours verifies with the crate's verifier...
        let ours = hash_password(&Password::parse("correct horse").unwrap()).unwrap();
        let parsed = PasswordHash::new(&ours).unwrap();
        assert!(
            Argon2::default()
                .verify_password(b"correct horse", &parsed)
                .is_ok()
        );
        // ...and a hash the crate made (other parameters included) verifies
        // with ours, on the same thread whose memory was sized for ours.
        let salt = SaltString::encode_b64(&[9u8; 16]).unwrap();
        let small = Argon2::new(
            Argon2Algorithm::Argon2id,
            Argon2Version::V0x13,
            Params::new(1024, 1, 1, None).unwrap(),
        );
        for argon2 in [Argon2::default(), small] {
            let theirs = argon2
                .hash_password(b"battery staple", &salt)
                .unwrap()
                .to_string();
            assert!(verify_password("battery staple", &theirs), "{theirs}");
            assert!(!verify_password("battery stapler", &theirs), "{theirs}");
        }
    }
}
