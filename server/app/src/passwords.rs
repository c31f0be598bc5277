//! Passwords as the registry accepts, hashes and checks them: argon2id
//! on threads of its own, one per core ([`PasswordWork`]), behind a short
//! queue.

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

/// Checks allowed to wait for a password thread, per thread.
const WAITING_PER_THREAD: usize = 4;

type Job = Box<dyn FnOnce() + Send>;

/// Threads of their own for argon2, one per core, fed through a short
/// queue. Their own, not the shared blocking pool: each argon2 run takes
/// 19 MiB, and the allocator keeps that much per thread that ever ran one,
/// so runs spread over hundreds of pool threads would hold hundreds of
/// MiB. A full queue is answered at once (429) rather than piled up.
#[derive(Debug)]
pub struct PasswordWork {
    jobs: std::sync::mpsc::SyncSender<Job>,
    threads: usize,
}

impl PasswordWork {
    pub fn new(threads: usize) -> Self {
        let threads = threads.max(1);
        let (jobs, queue) = std::sync::mpsc::sync_channel::<Job>(threads * WAITING_PER_THREAD);
        let queue = std::sync::Arc::new(std::sync::Mutex::new(queue));
        for i in 0..threads {
            let queue = std::sync::Arc::clone(&queue);
            let spawned = std::thread::Builder::new()
                .name(format!("argon2-{i}"))
                .spawn(move || {
                    loop {
                        // The lock is held only to take a job, not to run it.
                        let job = queue
                            .lock()
                            .unwrap_or_else(std::sync::PoisonError::into_inner)
                            .recv();
                        match job {
                            Ok(job) => job(),
                            // The registry is gone.
                            Err(_) => return,
                        }
                    }
                });
            if let Err(e) = spawned {
                tracing::error!(error = %e, "cannot start a password thread");
            }
        }
        Self { jobs, threads }
    }

    /// One thread per core.
    pub fn per_core() -> Self {
        Self::new(std::thread::available_parallelism().map_or(1, std::num::NonZero::get))
    }

    /// Runs `work` on a password thread; 429 when the queue is full.
    pub(crate) async fn run<T: Send + 'static>(
        &self,
        work: impl FnOnce() -> T + Send + 'static,
    ) -> Result<T, ServiceError> {
        let (done, result) = tokio::sync::oneshot::channel();
        let job: Job = Box::new(move || {
            // A caller that gave up is not an error here.
            let _ = done.send(work());
        });
        match self.jobs.try_send(job) {
            Ok(()) => {}
            Err(std::sync::mpsc::TrySendError::Full(_)) => {
                // Every thread busy and the queue full: checks are at their
                // rate, whoever sends them.
                return Err(ServiceError::RateLimited {
                    retry_after_secs: 1,
                });
            }
            Err(std::sync::mpsc::TrySendError::Disconnected(_)) => {
                return Err(ServiceError::internal(anyhow::anyhow!(
                    "the password threads are gone ({} started)",
                    self.threads
                )));
            }
        }
        result
            .await
            .map_err(|_| ServiceError::internal(anyhow::anyhow!("a password check was dropped")))
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
/// workers (the password threads of `service::credentials`).
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
    async fn work_past_the_queue_is_refused_at_once() {
        use futures_util::FutureExt;
        let work = PasswordWork::new(1);
        let (started, running) = std::sync::mpsc::channel();
        let (release, hold) = std::sync::mpsc::channel::<()>();
        // The only thread takes a job that waits for the test...
        let first = work.run(move || {
            started.send(()).unwrap();
            hold.recv().is_ok()
        });
        let mut first = Box::pin(first);
        assert!((&mut first).now_or_never().is_none());
        running
            .recv_timeout(std::time::Duration::from_secs(10))
            .unwrap();
        // ...the queue takes WAITING_PER_THREAD more...
        let mut queued: Vec<_> = (0..WAITING_PER_THREAD)
            .map(|_| Box::pin(work.run(|| true)))
            .collect();
        for job in &mut queued {
            assert!(job.now_or_never().is_none(), "queued");
        }
        // ...and one more is refused at once, without waiting.
        let refused = work
            .run(|| true)
            .now_or_never()
            .expect("answered at once")
            .unwrap_err();
        assert!(
            matches!(refused, ServiceError::RateLimited { .. }),
            "{refused:?}"
        );
        release.send(()).unwrap();
        assert!(first.await.unwrap());
        // The queue drains (awaited, so the thread has taken every queued
        // job); the threads take work again.
        for job in queued {
            assert!(job.await.unwrap());
        }
        assert!(work.run(|| true).await.unwrap());
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
