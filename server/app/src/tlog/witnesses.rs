//! Standard witnessing (c2sp.org/tlog-witness): after every new checkpoint
//! the registry sends each configured witness `POST <prefix>/add-checkpoint`
//! with the size that witness last cosigned and a consistency proof from
//! there, and keeps the `cosignature/v1` lines it answers, checked against
//! that witness's key, to serve with the checkpoint.
//!
//! Each witness has its own loop, one request in flight, bounded in time
//! and in the bytes read back; failures back off exponentially (capped).
//! Nothing here is on a publish's path: a write appends its entry and the
//! sequencer signs; witnesses catch up after.

use std::time::Duration;

use agentlang_core::tlog::{self, WitnessKey};
use store::Db;

use super::log::{ServedCheckpoint, TransparencyLog};

/// One request's whole time, connection included.
const TIMEOUT: Duration = Duration::from_secs(10);
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// Most bytes read from a witness's answer: a few signature lines (an
/// ML-DSA-44 line is ~3.3 KiB).
const MAX_ANSWER: usize = 16 * 1024;
/// How often a witness's loop looks for a new checkpoint.
const POLL: Duration = Duration::from_secs(1);
/// The first and the longest wait after a failure.
const BACKOFF_START: Duration = Duration::from_secs(1);
const BACKOFF_MAX: Duration = Duration::from_secs(300);
/// 409s answered in a row for one checkpoint before backing off: one is
/// expected (a witness that knows another size), more means the witness
/// and this replica disagree.
const MAX_CONFLICTS: u32 = 2;

/// What a witness answered.
enum Answer {
    /// 200: its signature lines.
    Cosigned(Vec<u8>),
    /// 409 `text/x.tlog.size`: the size it last cosigned.
    Conflict(u64),
}

/// One witness's loop state.
struct Submitter<'a> {
    log: &'a TransparencyLog,
    db: &'a Db,
    http: &'a reqwest::Client,
    key: WitnessKey,
    endpoint: url::Url,
    /// The size the witness last cosigned, as far as we know.
    known: Option<u64>,
    /// The checkpoint size whose cosignature we hold.
    done: u64,
    backoff: Duration,
}

/// Runs a loop per witness with a URL until the task is dropped.
pub async fn submit_forever(log: &TransparencyLog, db: &Db) {
    let targets: Vec<_> = log
        .witness_configs()
        .iter()
        .filter_map(|w| Some((w.key.clone(), w.url.clone()?)))
        .collect();
    if targets.is_empty() {
        return std::future::pending().await;
    }
    let http = match reqwest::Client::builder()
        .timeout(TIMEOUT)
        .connect_timeout(CONNECT_TIMEOUT)
        .redirect(reqwest::redirect::Policy::none())
        .user_agent(concat!("agentlang-registry/", env!("CARGO_PKG_VERSION")))
        .build()
    {
        Ok(http) => http,
        Err(e) => {
            tracing::error!(error = %e, "cannot build the witnesses' HTTP client; no witness is asked");
            return std::future::pending().await;
        }
    };
    let loops = targets.into_iter().map(|(key, url)| {
        let endpoint = url::Url::parse(&format!(
            "{}/add-checkpoint",
            url.as_str().trim_end_matches('/')
        ))
        .unwrap_or(url);
        Submitter {
            log,
            db,
            http: &http,
            key,
            endpoint,
            known: None,
            done: 0,
            backoff: Duration::ZERO,
        }
        .run()
    });
    futures_util::future::join_all(loops).await;
}

impl Submitter<'_> {
    async fn run(mut self) {
        let name = self.key.name().to_owned();
        match self.db.witness_cosigned_size(&name).await {
            Ok(size) => {
                self.known = size.and_then(|s| u64::try_from(s).ok());
                self.done = self.known.unwrap_or(0);
            }
            Err(e) => {
                tracing::warn!(witness = %name, error = %e, "cannot read what the witness cosigned; starting from 0")
            }
        }
        let mut conflicts = 0;
        loop {
            tokio::time::sleep(self.backoff.max(POLL)).await;
            // A log that failed its audit is not served, so not witnessed.
            let Some(checkpoint) = self
                .log
                .checkpoint()
                .filter(|_| self.log.broken().is_none())
            else {
                continue;
            };
            if checkpoint.size == self.done && self.known == Some(checkpoint.size) {
                continue;
            }
            let old = self.known.unwrap_or(0);
            if old > checkpoint.size {
                // Another replica may serve a newer checkpoint than this
                // one yet; this one catches up within seconds.
                self.fail(&format!(
                    "the witness cosigned {old} entries, more than the {} this replica serves",
                    checkpoint.size
                ));
                continue;
            }
            match self.submit(old, &checkpoint).await {
                Ok(Answer::Cosigned(lines)) => {
                    conflicts = 0;
                    self.known = Some(checkpoint.size);
                    match self.take(&checkpoint, &lines).await {
                        Ok(()) => {
                            self.done = checkpoint.size;
                            self.backoff = Duration::ZERO;
                        }
                        Err(e) => self.fail(&e),
                    }
                }
                Ok(Answer::Conflict(size)) if size > checkpoint.size => {
                    // Possibly a replica ahead of this one; else a witness
                    // claiming a tree this log never had.
                    tracing::warn!(witness = %name, witness_size = size, size = checkpoint.size,
                        "misbehaving witness? it claims to have cosigned a larger tree than served");
                    self.known = Some(size);
                    self.fail("the witness's size is larger than the served tree");
                }
                Ok(Answer::Conflict(size)) => {
                    conflicts += 1;
                    self.known = Some(size);
                    if conflicts >= MAX_CONFLICTS {
                        conflicts = 0;
                        self.fail(&format!("the witness answered 409 ({size}) again"));
                    } else {
                        // Retry at once, with a proof from its size.
                        self.backoff = Duration::ZERO;
                    }
                }
                Err(e) => self.fail(&e),
            }
        }
    }

    fn fail(&mut self, why: &str) {
        self.backoff = (self.backoff * 2).clamp(BACKOFF_START, BACKOFF_MAX);
        tracing::warn!(witness = %self.key.name(), error = %why,
            retry_secs = self.backoff.as_secs(), "witness submission failed");
    }

    /// One `add-checkpoint`.
    async fn submit(&self, old: u64, checkpoint: &ServedCheckpoint) -> Result<Answer, String> {
        let proof = self
            .log
            .consistency_proof(self.db, checkpoint.size, old)
            .await
            .map_err(|e| format!("no consistency proof from {old}: {e}"))?;
        if proof.len() > tlog::MAX_PROOF_LINES {
            return Err(format!("a proof of {} lines is too long", proof.len()));
        }
        let body = tlog::add_checkpoint_body(old, &proof, checkpoint.signed());
        let mut response = self
            .http
            .post(self.endpoint.clone())
            .header(reqwest::header::CONTENT_TYPE, "text/plain; charset=utf-8")
            .body(body)
            .send()
            .await
            .map_err(|e| format!("POST {}: {e}", self.endpoint))?;
        let status = response.status();
        let is_size = response
            .headers()
            .get(reqwest::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.split(';').next().map(str::trim) == Some("text/x.tlog.size"));
        let mut answer = Vec::new();
        while let Some(chunk) = response
            .chunk()
            .await
            .map_err(|e| format!("reading the answer: {e}"))?
        {
            if answer.len() + chunk.len() > MAX_ANSWER {
                return Err(format!("the answer is over {MAX_ANSWER} bytes"));
            }
            answer.extend_from_slice(&chunk);
        }
        match status.as_u16() {
            200 => Ok(Answer::Cosigned(answer)),
            409 if is_size => tlog::parse_tlog_size(&answer).map(Answer::Conflict).ok_or_else(|| {
                tracing::warn!(witness = %self.key.name(), "misbehaving witness: its 409 does not carry a size");
                "409 without a size".to_owned()
            }),
            code => Err(format!(
                "{code}: {}",
                String::from_utf8_lossy(&answer[..answer.len().min(200)]).trim()
            )),
        }
    }

    /// Checks a 200 answer's lines against the witness's key and keeps
    /// the cosignature; a bad one is dropped (and said).
    async fn take(&self, checkpoint: &ServedCheckpoint, lines: &[u8]) -> Result<(), String> {
        let cosignatures = tlog::witness_cosignatures(
            checkpoint.signed(),
            &self.log.verifier_key(),
            &self.key,
            lines,
        )
        .map_err(|e| {
            tracing::warn!(witness = %self.key.name(), error = %e, "dropped a witness's cosignature that does not verify");
            format!("a bad cosignature: {e}")
        })?;
        self.log
            .keep_cosignatures(self.db, checkpoint, &cosignatures)
            .await
            .map_err(|e| format!("cannot keep the cosignature: {e}"))?;
        tracing::debug!(witness = %self.key.name(), size = checkpoint.size, "a witness cosigned the checkpoint");
        Ok(())
    }
}
