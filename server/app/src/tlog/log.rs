//! The log as this replica keeps it: the key, the right edge of the tree
//! it serves (log2 n hashes: the rest stay in `log_hashes` and are read per
//! tile or proof), the sequencer that integrates entries and signs
//! checkpoints, tiles, cosignatures.

use std::{
    sync::{Arc, RwLock},
    time::Duration,
};

use agentlang_core::{
    signing::SecretKey,
    tlog::{
        self, Frontier, LogEntry, LogKey, LogOp, StoredHashes, TILE_WIDTH, TreeError, WitnessKey,
    },
};
use anyhow::Context;
use tokio::sync::{Mutex, Notify};

use super::witness_config::WitnessConfig;
use crate::settings::LogSettings;
use store::{Db, now, time::rfc3339, tlog::CheckpointRow};

/// Entries integrated per sequencer transaction: bounds its time and
/// memory; a backlog takes several rounds.
const BATCH: i64 = 20_000;
/// Entries or hashes read per query while verifying at start-up.
const VERIFY_BATCH: u64 = 2_000;
/// The audit after start-up rests this many times as long as each batch
/// took: it then uses at most a quarter of one core. It reads and hashes
/// the whole log while the registry serves, and the first requests after a
/// restart, which fill the caches, are the costliest; unpaced, the audit
/// took a core from them (`deploy/bench/RESULTS.md`, Decisions).
const AUDIT_REST_FACTOR: u32 = 3;
/// How long the audit waits to start again after the database could not
/// be read.
const AUDIT_RETRY: Duration = Duration::from_secs(60);
/// Versions logged per backfill transaction.
const BACKFILL_BATCH: i64 = 500;
/// How often a replica looks for entries or checkpoints others wrote.
const POLL: Duration = Duration::from_secs(1);
/// The least time between two rounds of the sequencer: appends arriving
/// meanwhile are integrated together, so a burst of publishes costs one
/// checkpoint (a write transaction and a signature) per round instead of
/// one each. A new entry is still in a checkpoint within this.
const MIN_ROUND_INTERVAL: Duration = Duration::from_millis(200);
/// Where a generated log key is kept (`server_secrets`).
const KEY_SECRET: &str = "tlog-key";

#[derive(Debug, thiserror::Error)]
pub enum LogError {
    #[error(transparent)]
    Db(#[from] store::Error),
    #[error(transparent)]
    Tree(#[from] TreeError),
    /// The stored log does not extend what this replica served, or its
    /// hashes do not give the signed root: never served.
    #[error("the transparency log is inconsistent: {0}")]
    Inconsistent(String),
}

/// The checkpoint a replica serves: the signed note with witnesses'
/// cosignatures after the log's own.
#[derive(Debug, Clone)]
pub struct ServedCheckpoint {
    pub size: u64,
    pub root: [u8; 32],
    /// The note as the sequencer signed it (the log's signature only).
    signed: Arc<Vec<u8>>,
    /// The note with every cosignature: what `/log/checkpoint` serves.
    pub note: Arc<Vec<u8>>,
}

impl ServedCheckpoint {
    /// The note with the log's signature only: what witnesses are sent.
    pub fn signed(&self) -> &[u8] {
        &self.signed
    }
}

#[derive(Debug, Default)]
struct Served {
    /// The served tree's right edge: what appends and the root need.
    tree: Frontier,
    checkpoint: Option<ServedCheckpoint>,
}

pub struct TransparencyLog {
    key: LogKey,
    origin: String,
    witnesses: Vec<WitnessKey>,
    /// The same witnesses with the URLs of those the registry asks.
    witness_configs: Vec<WitnessConfig>,
    served: RwLock<Served>,
    /// One sequencer round at a time in this process (the database lock
    /// orders replicas).
    round: Mutex<()>,
    wake: Notify,
    /// Why the stored log failed its audit, once it has: from then on this
    /// replica serves no checkpoint and sequences nothing.
    broken: std::sync::OnceLock<String>,
}

impl std::fmt::Debug for TransparencyLog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TransparencyLog")
            .field("origin", &self.origin)
            .field("key", &self.key.verifier_key())
            .finish_non_exhaustive()
    }
}

/// `host[:port]/log` of a public URL: the default origin.
fn default_origin(public_url: &str) -> String {
    let host = public_url
        .split_once("://")
        .map_or(public_url, |(_, rest)| rest)
        .split('/')
        .next()
        .unwrap_or_default();
    format!("{host}/log")
}

impl TransparencyLog {
    /// Loads the key (configured, or generated once and kept in the
    /// database), then the log up to its latest checkpoint, verified: the
    /// root recomputed from the stored hashes and the note's signature.
    pub async fn open(db: &Db, settings: &LogSettings, public_url: &str) -> anyhow::Result<Self> {
        let pem = match (&settings.key_pem, &settings.key_file) {
            (Some(pem), _) => pem.clone(),
            (None, Some(path)) => std::fs::read_to_string(path)
                .with_context(|| format!("cannot read the log key {}", path.display()))?,
            (None, None) => {
                let fresh = SecretKey::generate()
                    .map_err(|e| anyhow::anyhow!("cannot generate the log key: {e}"))?
                    .to_pkcs8_pem()
                    .to_string();
                db.server_secret(KEY_SECRET, &fresh)
                    .await
                    .context("cannot read or store the log key")?
            }
        };
        let secret = SecretKey::from_pkcs8_pem(pem.trim())
            .map_err(|e| anyhow::anyhow!("the log key is not a PKCS#8 PEM Ed25519 key: {e}"))?;
        let origin = settings
            .origin
            .clone()
            .unwrap_or_else(|| default_origin(public_url));
        let key = LogKey::new(origin.clone(), secret)
            .with_context(|| format!("the log origin {origin:?}"))?;
        let witness_configs = settings
            .witnesses
            .iter()
            .map(|w| WitnessConfig::parse(w))
            .collect::<Result<Vec<_>, _>>()
            .context("AGENTLANG_REGISTRY_TLOG_WITNESSES")?;
        let witnesses = witness_configs.iter().map(|w| w.key.clone()).collect();
        let log = Self {
            key,
            origin,
            witnesses,
            witness_configs,
            served: RwLock::default(),
            round: Mutex::new(()),
            wake: Notify::new(),
            broken: std::sync::OnceLock::new(),
        };
        // The stored hashes up to the latest checkpoint, whose root and
        // signature must hold before anything is served; `audit` then
        // checks them against the entries, in the background.
        log.catch_up(db)
            .await
            .context("the stored transparency log does not verify")?;
        Ok(log)
    }

    /// The audit of the stored log up to the checkpoint served when it
    /// starts: every stored hash recomputed from the entries (so a
    /// rewritten entry or hash is caught, not only a wrong root) and the
    /// root against the checkpoint's. Start-up already checked the root
    /// from the stored hashes and the signature; this reads every entry
    /// (52 MiB for 200,000), so it runs after the registry is up. A failure
    /// takes the log down on this replica: no checkpoint or tile is served
    /// and nothing is sequenced until an operator looks. Returns the size
    /// audited.
    pub async fn audit(&self, db: &Db) -> Result<u64, LogError> {
        let result = self.audit_entries(db).await;
        // Only what the stored log says takes it down; a database that
        // could not be read (a pool timeout under load) says nothing of it.
        if let Err(e @ (LogError::Inconsistent(_) | LogError::Tree(_))) = &result {
            self.refuse(e.to_string());
        }
        result
    }

    async fn audit_entries(&self, db: &Db) -> Result<u64, LogError> {
        let Some(checkpoint) = self.checkpoint() else {
            return Ok(0);
        };
        let size = checkpoint.size;
        // Streamed: each batch of entries is hashed onto the right edge and
        // the hashes it adds compared with those stored, so the audit holds
        // one batch, whatever the log's size.
        let mut tree = Frontier::default();
        while tree.size() < size {
            let batch = std::time::Instant::now();
            let from = tree.size();
            let to = (from + VERIFY_BATCH).min(size);
            let entries = db.log_entries(to_i64(from), to_i64(to)).await?;
            if entries.len() as u64 != to - from {
                return Err(LogError::Inconsistent(format!(
                    "entries {from}..{to} are not all stored"
                )));
            }
            let first = tree.stored_len();
            // Hashing is CPU work: off the async workers.
            let (grown, recomputed) = tokio::task::spawn_blocking(move || {
                let mut added = Vec::with_capacity(entries.len() * 2);
                for (_, entry) in &entries {
                    added.extend(tree.append(entry)?);
                }
                Ok::<_, TreeError>((tree, added))
            })
            .await
            .map_err(|e| LogError::Inconsistent(format!("the audit stopped: {e}")))??;
            tree = grown;
            let stored = db
                .log_hashes(to_i64(first), to_i64(tree.stored_len()))
                .await?;
            if stored.len() != recomputed.len() {
                return Err(LogError::Inconsistent(format!(
                    "stored hashes {first}..{} are missing",
                    tree.stored_len()
                )));
            }
            if let Some(i) = stored
                .iter()
                .zip(&recomputed)
                .position(|(s, r)| s.as_slice() != r.as_slice())
            {
                return Err(LogError::Inconsistent(format!(
                    "stored hash {} is not the one the entries give",
                    first + i as u64
                )));
            }
            tokio::time::sleep(batch.elapsed() * AUDIT_REST_FACTOR).await;
        }
        if tree.root() != checkpoint.root {
            return Err(LogError::Inconsistent(format!(
                "the entries do not give the root checkpoint {size} signed"
            )));
        }
        Ok(size)
    }

    /// Stops serving the log: nothing of a log that failed a check is shown
    /// as if it held.
    fn refuse(&self, why: String) {
        tracing::error!(reason = %why, "the transparency log is not served");
        let _ = self.broken.set(why);
        self.write().checkpoint = None;
    }

    /// Why the log is not served, when a check failed.
    pub fn broken(&self) -> Option<&str> {
        self.broken.get().map(String::as_str)
    }

    fn check_not_broken(&self) -> Result<(), LogError> {
        match self.broken() {
            Some(why) => Err(LogError::Inconsistent(why.to_owned())),
            None => Ok(()),
        }
    }

    /// The log's name: every checkpoint's first line.
    pub fn origin(&self) -> &str {
        &self.origin
    }

    /// The verifier key, `<name>+<id>+<base64>`.
    pub fn verifier_key(&self) -> String {
        self.key.verifier_key()
    }

    /// The witnesses whose cosignatures are accepted.
    pub fn witnesses(&self) -> &[WitnessKey] {
        &self.witnesses
    }

    /// The checkpoint served now.
    pub fn checkpoint(&self) -> Option<ServedCheckpoint> {
        self.read().checkpoint.clone()
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, Served> {
        self.served.read().unwrap_or_else(|e| e.into_inner())
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, Served> {
        self.served.write().unwrap_or_else(|e| e.into_inner())
    }

    /// Wakes the sequencer: this replica just appended an entry.
    pub fn appended(&self) {
        self.wake.notify_one();
    }

    /// Moves to the database's latest checkpoint when it is ahead: reads the
    /// stored hashes of its right edge (log2 n of them, whatever the log's
    /// size), recomputes the root from them, checks the note's signature.
    /// Never moves backwards.
    async fn catch_up(&self, db: &Db) -> Result<(), LogError> {
        self.check_not_broken()?;
        let Some(row) = db.latest_checkpoint().await? else {
            return Ok(());
        };
        let size = u64::try_from(row.size).unwrap_or_default();
        let have_size = self.read().tree.size();
        if size < have_size {
            return Err(LogError::Inconsistent(format!(
                "the latest stored checkpoint has {size} entries, fewer than the {have_size} served"
            )));
        }
        if size == have_size {
            return Ok(());
        }
        let edge = tlog::frontier_indexes(size)
            .into_iter()
            .map(to_i64)
            .collect::<Vec<_>>();
        let hashes = db
            .log_hashes_at(&edge)
            .await?
            .into_iter()
            .map(|(i, h)| {
                let hash = <[u8; 32]>::try_from(h.as_slice())
                    .map_err(|_| LogError::Inconsistent("a stored hash is not 32 bytes".into()))?;
                Ok((u64::try_from(i).unwrap_or_default(), hash))
            })
            .collect::<Result<Vec<_>, LogError>>()?;
        let tree = Frontier::from_stored(size, hashes)?;
        let cosignatures = db.log_cosignatures(row.size).await?;
        let checkpoint = self.verify_row(&row, &cosignatures)?;
        if tree.root() != checkpoint.root {
            return Err(LogError::Inconsistent(format!(
                "the stored hashes of {size} entries do not give the checkpoint's root"
            )));
        }
        let mut served = self.write();
        if served.tree.size() != have_size || self.broken.get().is_some() {
            // Another round moved on meanwhile (it verified its own), or
            // the audit took the log down.
            return Ok(());
        }
        served.tree = tree;
        served.checkpoint = Some(checkpoint);
        Ok(())
    }

    /// Checks a stored checkpoint's note: this log's origin, signed by this
    /// log's key, with the facts the row says.
    fn verify_row(
        &self,
        row: &CheckpointRow,
        cosignatures: &[String],
    ) -> Result<ServedCheckpoint, LogError> {
        let opened = tlog::open_checkpoint(row.note.as_bytes(), &self.key.verifier_key())
            .map_err(|e| {
                // The key's name is the origin, which by default follows
                // the public URL: a changed URL fails here like another key.
                LogError::Inconsistent(format!(
                    "checkpoint {}: {e} (does every replica have the same AGENTLANG_REGISTRY_TLOG_KEY, \
                     and the same origin {:?}? It follows AGENTLANG_REGISTRY_PUBLIC_URL unless \
                     AGENTLANG_REGISTRY_TLOG_ORIGIN sets it)",
                    row.size, self.origin
                ))
            })?;
        if opened.origin != self.origin
            || i64::try_from(opened.size).ok() != Some(row.size)
            || opened.root.as_slice() != row.root.as_slice()
        {
            return Err(LogError::Inconsistent(format!(
                "checkpoint {} is not of origin {:?} or does not say what its row says",
                row.size, self.origin
            )));
        }
        Ok(served_checkpoint(
            opened.size,
            opened.root,
            row.note.as_bytes().to_vec(),
            cosignatures,
        ))
    }

    /// One sequencer round: under the database's sequencer lock, integrates
    /// the entries appended since the latest checkpoint (up to [`BATCH`])
    /// into stored hashes and signs a checkpoint, in one transaction.
    /// Returns the new checkpoint's size, if it signed one.
    pub async fn sequence(&self, db: &Db) -> Result<Option<u64>, LogError> {
        let _round = self.round.lock().await;
        self.catch_up(db).await?;
        let served_size = self.read().tree.size();
        if db.log_entry_count().await? <= to_i64(served_size) {
            return Ok(None);
        }
        let mut tx = db.begin_sequencing().await?;
        // Another replica may have sequenced while we waited for the lock.
        let latest = tx.latest_checkpoint().await?.map_or(0, |row| row.size);
        if latest != to_i64(served_size) {
            drop(tx);
            self.catch_up(db).await?;
            return Ok(None);
        }
        let entries = tx.entries_from(latest, BATCH).await?;
        if entries.is_empty() {
            return Ok(None);
        }
        let before = self.read().tree.clone();
        let (from, hashes, size, root) = {
            let mut served = self.write();
            let from = served.tree.stored_len();
            let mut hashes = Vec::with_capacity(entries.len() * 2);
            for entry in &entries {
                match served.tree.append(entry) {
                    Ok(added) => hashes.extend(added),
                    Err(e) => {
                        served.tree = before;
                        return Err(e.into());
                    }
                }
            }
            (from, hashes, served.tree.size(), served.tree.root())
        };
        let undo = || self.write().tree = before.clone();
        let note = match self.key.sign_checkpoint(&self.origin, size, root) {
            Ok(note) => note,
            Err(e) => {
                undo();
                return Err(e.into());
            }
        };
        let row = CheckpointRow {
            size: to_i64(size),
            root: root.to_vec(),
            note: String::from_utf8(note.clone()).expect("a note is UTF-8"),
        };
        if let Err(e) = tx.store_and_commit(from, &hashes, &row).await {
            undo();
            return Err(e.into());
        }
        {
            let mut served = self.write();
            if self.broken.get().is_none() {
                served.checkpoint = Some(served_checkpoint(size, root, note, &[]));
            }
        }
        tracing::debug!(size, entries = entries.len(), "signed a log checkpoint");
        Ok(Some(size))
    }

    /// Writes the genesis entry into an empty log and logs versions
    /// published before the log, then sequences one round, so the
    /// registry starts with a checkpoint.
    pub async fn prepare(&self, db: &Db) -> anyhow::Result<()> {
        let mut genesis = LogEntry::new(LogOp::Genesis, rfc3339(now()));
        genesis.origin = Some(self.origin.clone());
        db.append_genesis(&genesis)
            .await
            .context("cannot write the log's genesis entry")?;
        loop {
            let versions = db
                .unlogged_versions(BACKFILL_BATCH)
                .await
                .context("cannot list versions to log")?;
            if versions.is_empty() {
                break;
            }
            let entries: Vec<_> = versions
                .iter()
                .map(|v| {
                    let mut publish = LogEntry::new(LogOp::Publish, rfc3339(v.published_at));
                    publish.kind = Some(v.kind.to_string());
                    publish.name = Some(v.name.to_string());
                    publish.version = Some(v.version.to_string());
                    publish.sha256 = Some(v.sha256.to_hex());
                    publish.signer = v.signer_key_id.as_ref().map(ToString::to_string);
                    publish.account.clone_from(&v.publisher);
                    let yank = v.yanked.then(|| {
                        let mut yank = LogEntry::new(LogOp::Yank, rfc3339(v.published_at));
                        yank.kind = Some(v.kind.to_string());
                        yank.name = Some(v.name.to_string());
                        yank.version = Some(v.version.to_string());
                        yank.reason.clone_from(&v.yank_reason);
                        yank
                    });
                    (v.id, publish, yank)
                })
                .collect();
            db.log_versions(&entries)
                .await
                .context("cannot log versions published before the log")?;
            tracing::info!(
                versions = entries.len(),
                "logged versions published before the log"
            );
        }
        // One round now, so a new registry starts with a checkpoint; a
        // backlog (a restore, a seeded catalog) is left to the periodic
        // sequencer, 20,000 entries a round, while requests are served.
        self.sequence(db).await?;
        Ok(())
    }

    /// Hash tile `index` of `level`, `width` hashes wide, of the served
    /// tree; `None` when the served checkpoint does not cover it.
    pub async fn hash_tile(
        &self,
        db: &Db,
        level: u8,
        index: u64,
        width: u64,
    ) -> Result<Option<Vec<u8>>, LogError> {
        let Some(size) = self.checkpoint().map(|c| c.size) else {
            return Ok(None);
        };
        let Ok(width) = u32::try_from(width) else {
            return Ok(None);
        };
        match with_stored(db, |hashes| {
            tlog::hash_tile(size, level, index, width, hashes)
        })
        .await
        {
            Ok(tile) => Ok(Some(tile)),
            // Past the served tree: no such tile.
            Err(LogError::Tree(_)) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Entry bundle `index`, `width` entries wide, if the served checkpoint
    /// covers it.
    pub async fn entry_bundle(
        &self,
        db: &Db,
        index: u64,
        width: u64,
    ) -> Result<Option<Vec<u8>>, LogError> {
        let size = self.checkpoint().map_or(0, |c| c.size);
        let Some(from) = index.checked_mul(TILE_WIDTH) else {
            return Ok(None);
        };
        let to = from + width;
        if width == 0 || width > TILE_WIDTH || to > size {
            return Ok(None);
        }
        let rows = db.log_entries(to_i64(from), to_i64(to)).await?;
        if rows.len() as u64 != width {
            return Err(LogError::Inconsistent(format!(
                "entries {from}..{to} are not all stored"
            )));
        }
        Ok(Some(tlog::served_entry_bundle(
            rows.iter().map(|(_, e)| e.as_slice()),
        )))
    }

    /// Up to `count` entries of the served tree, newest first: the newest
    /// ones, or those around `at`. Returns them with the served size.
    pub async fn window(
        &self,
        db: &Db,
        at: Option<u64>,
        count: u64,
    ) -> Result<(Vec<(u64, serde_json::Value)>, u64), LogError> {
        let size = self.checkpoint().map_or(0, |c| c.size);
        let to = match at {
            Some(at) => at.saturating_add(count / 2 + 1).min(size),
            None => size,
        };
        let from = to.saturating_sub(count);
        let rows = db.log_entries(to_i64(from), to_i64(to)).await?;
        let entries = rows
            .into_iter()
            .rev()
            .map(|(i, bytes)| {
                let entry = serde_json::from_slice(&bytes).unwrap_or(serde_json::Value::Null);
                (u64::try_from(i).unwrap_or_default(), entry)
            })
            .collect();
        Ok((entries, size))
    }

    /// The names of the witnesses whose cosignatures the served checkpoint
    /// carries.
    pub fn cosigners(&self) -> Vec<String> {
        self.checkpoint()
            .and_then(|c| {
                tlog::open_witnessed_checkpoint(&c.note, &self.key.verifier_key(), &self.witnesses)
                    .ok()
            })
            .map(|(_, cosignatures)| cosignatures.into_iter().map(|c| c.witness).collect())
            .unwrap_or_default()
    }

    /// Takes a witness's cosignature of the served checkpoint: `note` is
    /// that checkpoint with the witness's signature line(s). Keeps every
    /// cosignature by a configured witness that holds.
    pub async fn add_cosignatures(&self, db: &Db, note: &[u8]) -> Result<usize, CosignError> {
        let served = self.checkpoint().ok_or(CosignError::Stale)?;
        let (opened, cosigned) =
            tlog::open_witnessed_checkpoint(note, &self.key.verifier_key(), &self.witnesses)
                .map_err(|e| CosignError::Invalid(e.to_string()))?;
        if opened.size != served.size || opened.root != served.root {
            return Err(CosignError::Stale);
        }
        if cosigned.is_empty() {
            return Err(CosignError::UnknownWitness);
        }
        self.keep_cosignatures(db, &served, &cosigned).await?;
        Ok(cosigned.len())
    }

    /// The witnesses configured, with the URLs of those asked.
    pub fn witness_configs(&self) -> &[WitnessConfig] {
        &self.witness_configs
    }

    /// The consistency proof from the tree of `old` entries to the served
    /// one of `size` (nothing from 0, as c2sp.org/tlog-witness wants).
    pub async fn consistency_proof(
        &self,
        db: &Db,
        size: u64,
        old: u64,
    ) -> Result<Vec<[u8; 32]>, LogError> {
        if old == 0 {
            return Ok(Vec::new());
        }
        with_stored(db, |hashes| tlog::consistency_proof(size, old, hashes)).await
    }

    /// The inclusion proof of entry `index` in the served tree of `size`.
    pub async fn inclusion_proof(
        &self,
        db: &Db,
        size: u64,
        index: u64,
    ) -> Result<Vec<[u8; 32]>, LogError> {
        with_stored(db, |hashes| tlog::inclusion_proof(size, index, hashes)).await
    }

    /// Keeps verified cosignatures of `checkpoint` (each witness's older
    /// ones dropped: only the newest checkpoint is served) and serves them
    /// with it while it is the served one.
    pub async fn keep_cosignatures(
        &self,
        db: &Db,
        checkpoint: &ServedCheckpoint,
        cosigned: &[tlog::Cosignature],
    ) -> Result<(), LogError> {
        let size = to_i64(checkpoint.size);
        for cosignature in cosigned {
            db.put_log_cosignature(size, &cosignature.witness, &cosignature.line)
                .await?;
            db.prune_log_cosignatures(&cosignature.witness, size)
                .await?;
        }
        let lines = db.log_cosignatures(size).await?;
        let mut state = self.write();
        if let Some(current) = state.checkpoint.as_mut()
            && current.size == checkpoint.size
        {
            *current = served_checkpoint(
                checkpoint.size,
                checkpoint.root,
                checkpoint.signed.to_vec(),
                &lines,
            );
        }
        Ok(())
    }
}

impl TransparencyLog {
    /// The audit of the stored log ([`TransparencyLog::audit`]), once,
    /// after start-up; its outcome is logged.
    pub async fn audit_and_report(&self, db: &Db) {
        loop {
            let started = std::time::Instant::now();
            match self.audit(db).await {
                Ok(size) => tracing::info!(
                    size,
                    millis = started.elapsed().as_millis() as u64,
                    "audited the transparency log"
                ),
                Err(LogError::Db(e)) => {
                    tracing::warn!(error = %e, "the audit of the transparency log could not read the database; trying again in a minute");
                    tokio::time::sleep(AUDIT_RETRY).await;
                    continue;
                }
                Err(e) => tracing::error!(error = %e, "the transparency log failed its audit"),
            }
            return;
        }
    }

    /// Runs the sequencer until the task is dropped: after every local
    /// append, and every second for entries or checkpoints other replicas
    /// wrote.
    pub async fn sequence_forever(&self, db: &Db) {
        loop {
            tokio::select! {
                () = self.wake.notified() => {}
                () = tokio::time::sleep(POLL) => {}
            }
            let round = tokio::time::Instant::now();
            if let Err(e) = self.sequence(db).await {
                tracing::error!(error = %e, "the transparency log's sequencer failed");
            }
            tokio::time::sleep_until(round + MIN_ROUND_INTERVAL).await;
        }
    }
}

/// Why a cosignature was not taken.
#[derive(Debug, thiserror::Error)]
pub enum CosignError {
    #[error("the note is not the registry's checkpoint with valid signatures: {0}")]
    Invalid(String),
    #[error("no signature in the note is by a configured witness")]
    UnknownWitness,
    #[error("the note is not the checkpoint served now; cosign the current one")]
    Stale,
    #[error(transparent)]
    Log(#[from] LogError),
}

fn served_checkpoint(
    size: u64,
    root: [u8; 32],
    signed: Vec<u8>,
    cosignatures: &[String],
) -> ServedCheckpoint {
    let mut note = signed.clone();
    for line in cosignatures {
        note.extend_from_slice(line.as_bytes());
        note.push(b'\n');
    }
    ServedCheckpoint {
        size,
        root,
        signed: Arc::new(signed),
        note: Arc::new(note),
    }
}

/// Runs one of the tree's computations over stored hashes read from the
/// database: once to learn the indexes it needs, once more with them. Each
/// computation asks for all its hashes at once (at most a tile's 256 or a
/// proof's 2 log2 n), so a third run means a hash is not stored.
async fn with_stored<T>(
    db: &Db,
    compute: impl Fn(&StoredHashes) -> Result<T, TreeError>,
) -> Result<T, LogError> {
    let mut hashes = StoredHashes::default();
    for _ in 0..2 {
        match compute(&hashes) {
            Ok(answer) => return Ok(answer),
            Err(e) => {
                let missing: Vec<i64> = hashes.missing().into_iter().map(to_i64).collect();
                if missing.is_empty() {
                    return Err(e.into());
                }
                for (at, hash) in db.log_hashes_at(&missing).await? {
                    let hash = <[u8; 32]>::try_from(hash.as_slice()).map_err(|_| {
                        LogError::Inconsistent(format!("stored hash {at} is not 32 bytes"))
                    })?;
                    hashes.insert(u64::try_from(at).unwrap_or_default(), hash);
                }
            }
        }
    }
    compute(&hashes).map_err(|e| {
        LogError::Inconsistent(format!(
            "stored hashes the served tree needs are missing: {e}"
        ))
    })
}

fn to_i64(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}
