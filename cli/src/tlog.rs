//! The registry's transparency log, checked from this side: `pull`,
//! `install` and `verify` prove that what they got is the version the log
//! recorded, and that the log they see extends the one they saw before.
//!
//! Per registry, `<config>/logs/<host>/` keeps the log's verifier key
//! (pinned on first use unless `--log-key` gives it) and the last
//! checkpoint seen. A checkpoint under another key, one that does not
//! extend the saved one (a fork), or a smaller one (a rollback) is an
//! error, never a warning.
//!
//! An entry too long for a bundle's 2-byte framing is served as an empty
//! placeholder (`tlog::is_placeholder`); its leaf hash is still in the
//! level-0 hash tile, so a whole-log audit recomputes the root with it,
//! but the entry itself can be neither read nor proved.

use std::{cell::RefCell, path::PathBuf, thread, time::Duration};

use agentlang_core::{
    Kind, PackageName, Version,
    digest::Sha256Digest,
    tlog::{self, OpenedCheckpoint, TileProofs, WitnessKey},
};
use anyhow::{Context, Result, anyhow, bail};
use serde::Deserialize;
use serde_json::Value;

use crate::{
    client::{Bound, Client},
    config,
    output::Output,
};

/// The most entries `log verify` and `log show` read. They read every
/// entry, one bundle of 256 a request; a log this large takes hours to
/// read over HTTP, and a checkpoint claiming more (2^40, say) is refused
/// rather than looped over. Single entries are proved from a few tiles at
/// any size (`pull`, `install`, `verify`).
pub const MAX_AUDITED_ENTRIES: u64 = 1 << 24;

/// How the log is checked: flags and environment.
#[derive(Debug, Clone, Default)]
pub struct LogOptions {
    /// The log's verifier key; else the pinned one; else pinned now.
    pub key: Option<String>,
    /// Witness verifier keys (`cosignature/v1`).
    pub witnesses: Vec<String>,
    /// How many of `witnesses` must have cosigned the checkpoint.
    pub required_witnesses: usize,
}

/// Where a version record says its publish is in the transparency log.
#[derive(Debug, Deserialize)]
pub struct LoggedRecord {
    #[serde(default)]
    pub log: Option<LogRef>,
}

#[derive(Debug, Clone, Copy, Deserialize)]
pub struct LogRef {
    pub index: u64,
}

/// What [`CheckedLog::prove`] proves: an entry's inclusion, or that the
/// tree of so many entries is a prefix of the checkpoint's.
#[derive(Debug, Clone, Copy)]
enum Proof {
    Inclusion(u64),
    Consistency(u64),
}

/// How long to wait for a checkpoint that covers a fresh entry: the
/// registry signs one within seconds of a change.
const COVER_WAIT: Duration = Duration::from_secs(15);

/// A checkpoint verified and consistent with the last one seen, and the
/// means to prove entries in it.
pub struct CheckedLog<'c> {
    client: &'c Client,
    key: String,
    witnesses: Vec<WitnessKey>,
    required: usize,
    key_source: KeySource,
    dir: PathBuf,
    pub checkpoint: OpenedCheckpoint,
    note: String,
}

/// What `log forget` dropped.
pub struct Forgotten {
    pub dir: PathBuf,
    /// The pinned log key, if one was.
    pub key: Option<String>,
    /// The size of the last checkpoint seen, if one was kept.
    pub size: Option<u64>,
}

/// Drops what this machine trusts about `base`'s log: the pinned key and
/// the last checkpoint seen. The next command pins whatever key the
/// registry serves then, and checks consistency only from there on.
pub fn forget(base: &str) -> Result<Forgotten> {
    let dir = state_dir_of(base)?;
    let key = read_text(&dir.join("key"))?.map(|k| k.trim().to_owned());
    let size = read_text(&dir.join("checkpoint"))?
        .and_then(|note| note.lines().nth(1).and_then(|l| l.parse().ok()));
    match std::fs::remove_dir_all(&dir) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(e).with_context(|| format!("removing {}", dir.display())),
    }
    Ok(Forgotten { dir, key, size })
}

/// Where the key the log is checked with came from.
enum KeySource {
    /// `--log-key` or `AGENTLANG_LOG_KEY`.
    Given,
    /// Pinned on first use, in this file.
    Pinned(PathBuf),
}

/// `<config>/logs/<host[_port]>`: per registry.
fn state_dir(client: &Client) -> Result<PathBuf> {
    state_dir_of(&client.base)
}

/// Where the log key and checkpoint of the registry at `base` are pinned.
pub fn pins_dir(base: &str) -> Result<PathBuf> {
    state_dir_of(base)
}

fn state_dir_of(base: &str) -> Result<PathBuf> {
    let host: String = base
        .split_once("://")
        .map_or(base, |(_, rest)| rest)
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '.' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    Ok(config::config_dir()?.join("logs").join(host))
}

fn read_text(path: &std::path::Path) -> Result<Option<String>> {
    match std::fs::read_to_string(path) {
        Ok(s) => Ok(Some(s)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e).with_context(|| format!("reading {}", path.display())),
    }
}

impl<'c> CheckedLog<'c> {
    /// Fetches the checkpoint and checks it: the log key's signature, the
    /// witnesses asked for, consistency with the saved checkpoint (which it
    /// then replaces). With `covering`, waits for a checkpoint that covers
    /// that entry.
    pub fn open(
        client: &'c Client,
        opts: &LogOptions,
        out: &Output,
        covering: Option<u64>,
    ) -> Result<Self> {
        let dir = state_dir(client)?;
        let key_file = dir.join("key");
        let key_source = match opts.key {
            Some(_) => KeySource::Given,
            None => KeySource::Pinned(key_file.clone()),
        };
        let key = match (&opts.key, read_text(&key_file)?) {
            (Some(given), _) => given.trim().to_owned(),
            (None, Some(pinned)) => pinned.trim().to_owned(),
            (None, None) => {
                let served = client
                    .send(client.get("/log/key"))
                    .and_then(|r| r.text(Bound::LOG_KEY))
                    .context("fetching the registry's log key")?;
                let served = served.trim().to_owned();
                tlog::check_log_key(&served)
                    .map_err(|e| anyhow!("the registry's log key {served:?}: {e}"))?;
                config::write_private(&key_file, format!("{served}\n").as_bytes())?;
                if !out.json {
                    crate::output::note(&format!(
                        "note: trusting the log key {served} of {} from now on (kept in {})",
                        client.base,
                        key_file.display()
                    ));
                }
                served
            }
        };
        let witnesses = opts
            .witnesses
            .iter()
            .map(|w| WitnessKey::parse(w).map_err(|e| anyhow!("{e}")))
            .collect::<Result<Vec<_>>>()?;
        if opts.required_witnesses > witnesses.len() {
            bail!(
                "{} witness cosignatures are required but only {} witness keys are given (--witness)",
                opts.required_witnesses,
                witnesses.len()
            );
        }
        let mut log = Self {
            client,
            key,
            witnesses,
            required: opts.required_witnesses,
            key_source,
            dir,
            checkpoint: OpenedCheckpoint {
                origin: String::new(),
                size: 0,
                root: [0; 32],
            },
            note: String::new(),
        };
        let started = std::time::Instant::now();
        loop {
            log.fetch_checkpoint()?;
            match covering {
                Some(index) if log.checkpoint.size <= index => {
                    if started.elapsed() > COVER_WAIT {
                        bail!(
                            "the registry's log has {} entries, but the version's entry is {index}: the log does not record it",
                            log.checkpoint.size
                        );
                    }
                    thread::sleep(Duration::from_millis(250));
                }
                _ => break,
            }
        }
        log.check_against_saved()?;
        config::write_private(&log.dir.join("checkpoint"), log.note.as_bytes())?;
        Ok(log)
    }

    fn fetch_checkpoint(&mut self) -> Result<()> {
        let note = self
            .client
            .send(self.client.get("/log/checkpoint"))
            .and_then(|r| r.text(Bound::CHECKPOINT))
            .context("fetching the registry's log checkpoint")?;
        let (opened, cosigned) =
            tlog::open_witnessed_checkpoint(note.as_bytes(), &self.key, &self.witnesses)
                .map_err(|e| self.unverified(&note, &e.to_string()))?;
        if cosigned.len() < self.required {
            bail!(
                "the registry's log checkpoint has {} of the {} witness cosignatures required",
                cosigned.len(),
                self.required
            );
        }
        self.checkpoint = opened;
        self.note = note;
        Ok(())
    }

    /// Why a checkpoint that does not verify with our key does not: the
    /// registry now serves another key its checkpoint verifies with (a
    /// reset registry, a rotated key, or an impostor: only the user can
    /// tell), or it does not verify at all (forged or damaged).
    fn unverified(&self, note: &str, error: &str) -> anyhow::Error {
        let base = &self.client.base;
        let ours = match &self.key_source {
            KeySource::Given => format!(
                "the log key given (--log-key or AGENTLANG_LOG_KEY), {}",
                self.key
            ),
            KeySource::Pinned(file) => format!(
                "the log key pinned in {} on first use, {}",
                file.display(),
                self.key
            ),
        };
        let served = self
            .client
            .send(self.client.get("/log/key"))
            .and_then(|r| r.text(Bound::LOG_KEY))
            .map(|k| k.trim().to_owned());
        match served {
            Ok(served)
                if served != self.key
                    && tlog::open_checkpoint(note.as_bytes(), &served).is_ok() =>
            {
                let fix = match &self.key_source {
                    KeySource::Given => "give the new key with --log-key".to_owned(),
                    KeySource::Pinned(_) => format!(
                        "run `agentlang log forget {base}` to drop the pinned key and the checkpoint seen before; the next command trusts the key served then"
                    ),
                };
                anyhow!(
                    "the registry {base} now signs its log with another key: it serves {served}, but this machine checks with {ours}. A registry that was reset (its database removed) or whose log key was replaced looks like this, and so does a server impersonating it. If you know it was reset, {fix}; otherwise do not trust what it serves"
                )
            }
            _ => anyhow!(
                "the registry {base}'s log checkpoint does not verify with {ours}: {error}. It is forged or damaged, or the key is wrong"
            ),
        }
    }

    /// The saved checkpoint must be a prefix of this one.
    fn check_against_saved(&self) -> Result<()> {
        let Some(saved) = read_text(&self.dir.join("checkpoint"))? else {
            return Ok(());
        };
        let Ok(old) = tlog::open_checkpoint(saved.as_bytes(), &self.key) else {
            // Saved under another key (the pin was replaced with
            // --log-key): nothing to compare with.
            return Ok(());
        };
        let new = &self.checkpoint;
        if old.origin != new.origin {
            return Ok(());
        }
        if new.size < old.size {
            bail!(
                "the registry's log rolled back: it shows {} entries, but it showed {} before (kept in {}). A registry restored from a backup looks like this, and so does one hiding entries; if you know it was restored, `agentlang log forget {}` drops what this machine saw",
                new.size,
                old.size,
                self.dir.join("checkpoint").display(),
                self.client.base
            );
        }
        let proof = self
            .prove(Proof::Consistency(old.size))
            .context("proving the log consistent with the one seen before")?;
        tlog::check_consistency(&proof, new.size, new.root, old.size, old.root).map_err(|_| {
            anyhow!(
                "the registry's log forked: its tree of {} entries does not extend the one of {} seen before (kept in {}). A registry reset with the same key looks like this, and so does one showing different logs to different clients; if you know it was reset, `agentlang log forget {}` drops what this machine saw",
                new.size,
                old.size,
                self.dir.join("checkpoint").display(),
                self.client.base
            )
        })
    }

    /// A proof read from the checkpoint's hash tiles. `TileProofs` sees
    /// only that a tile could not be had, so the reason (a tile too large,
    /// a stalled answer) is kept here and reported instead.
    fn prove(&self, proof: Proof) -> Result<Vec<[u8; 32]>> {
        let failed = RefCell::new(None);
        let fetch = |path: &str| {
            self.hash_tile(path).map_err(|e| {
                let line = format!("{e:#}");
                failed.replace(Some(e));
                line
            })
        };
        let proofs = TileProofs::new(self.checkpoint.size, self.checkpoint.root, fetch);
        let proved = match proof {
            Proof::Inclusion(index) => proofs.inclusion(index),
            Proof::Consistency(old) => proofs.consistency(old),
        };
        proved.map_err(|e| failed.take().unwrap_or_else(|| anyhow!("{e}")))
    }

    /// Hash tile `path` (`tile/<L>/<N>[.p/<W>]`), within its bound.
    fn hash_tile(&self, path: &str) -> Result<Vec<u8>> {
        self.client
            .send(self.client.get(&format!("/log/{path}")))
            .and_then(|r| r.bytes(Bound::HASH_TILE))
            .with_context(|| format!("fetching log hashes ({path})"))
    }

    /// Entries in bundle `tile` of the checkpoint's tree.
    fn bundle_width(&self, tile: u64) -> u64 {
        (self.checkpoint.size - tile * tlog::TILE_WIDTH).min(tlog::TILE_WIDTH)
    }

    /// Entry bundle `tile` of the checkpoint's tree, split and checked to
    /// hold as many entries as the tree says. A placeholder is empty.
    fn bundle(&self, tile: u64) -> Result<Vec<Vec<u8>>> {
        let width = self.bundle_width(tile);
        let path = tlog::tile_path(None, tile, width);
        let bundle = self
            .client
            .send(self.client.get(&format!("/log/{path}")))
            .and_then(|r| r.bytes(Bound::ENTRY_BUNDLE))
            .with_context(|| format!("fetching log entries ({path})"))?;
        tlog::split_bundle(&bundle)
            .filter(|e| e.len() as u64 == width)
            .map(|e| e.into_iter().map(<[u8]>::to_vec).collect())
            .ok_or_else(|| anyhow!("the registry's log bundle {path} is malformed"))
    }

    /// Entry `index`, proved to be in the checkpoint's tree.
    pub fn entry(&self, index: u64) -> Result<Value> {
        let entries = self.bundle(index / tlog::TILE_WIDTH)?;
        let bytes = entries
            .get(usize::try_from(index % tlog::TILE_WIDTH).unwrap_or(usize::MAX))
            .ok_or_else(|| anyhow!("log entry {index} is not in its bundle"))?;
        if tlog::is_placeholder(bytes) {
            bail!("log entry {index} is too long to be served; the registry serves a placeholder");
        }
        let proof = self
            .prove(Proof::Inclusion(index))
            .with_context(|| format!("proving log entry {index}"))?;
        tlog::check_inclusion(
            &proof,
            self.checkpoint.size,
            self.checkpoint.root,
            index,
            tlog::leaf_hash(bytes),
        )
        .map_err(|_| anyhow!("log entry {index} is not in the checkpoint's tree"))?;
        serde_json::from_slice(bytes).with_context(|| format!("log entry {index} is not JSON"))
    }

    /// Every entry of the checkpoint's tree, fetched bundle by bundle and
    /// handed to `each` with its index (`None` for a placeholder, whose
    /// leaf hash comes from the level-0 hash tile). The tree recomputed
    /// from the leaf hashes must have the checkpoint's root; that is known
    /// only after the last entry, so `each` should keep what it finds until
    /// this returns. Returns how many entries were placeholders.
    pub fn for_each_entry(
        &self,
        out: &Output,
        mut each: impl FnMut(u64, Option<&[u8]>),
    ) -> Result<u64> {
        let size = self.checkpoint.size;
        if size > MAX_AUDITED_ENTRIES {
            bail!(
                "the registry's log checkpoint claims {size} entries; reading every entry stops at {MAX_AUDITED_ENTRIES}"
            );
        }
        let bundles = size.div_ceil(tlog::TILE_WIDTH);
        let bar = crate::progress::count_bar(out, bundles, "reading the log");
        // The right edge only: a few dozen hashes however large the log.
        let mut tree = tlog::Frontier::default();
        let mut placeholders = 0;
        for tile in 0..bundles {
            let entries = self.bundle(tile)?;
            // The level-0 tile of the same index holds the bundle's leaf
            // hashes; needed only for its placeholders.
            let mut leaves = None;
            for (offset, entry) in (0u16..).zip(&entries) {
                let index = tile * tlog::TILE_WIDTH + u64::from(offset);
                if tlog::is_placeholder(entry) {
                    placeholders += 1;
                    if leaves.is_none() {
                        leaves = Some(self.leaf_hashes(tile)?);
                    }
                    let leaf = leaves
                        .as_deref()
                        .and_then(|l: &[u8]| l.chunks_exact(32).nth(usize::from(offset)))
                        .and_then(|h| <[u8; 32]>::try_from(h).ok())
                        .ok_or_else(|| anyhow!("log entry {index} has no leaf hash"))?;
                    tree.append_leaf_hash(leaf)
                        .map_err(|e| anyhow!("recomputing the log's tree: {e}"))?;
                    each(index, None);
                } else {
                    tree.append(entry)
                        .map_err(|e| anyhow!("recomputing the log's tree: {e}"))?;
                    each(index, Some(entry));
                }
            }
            bar.inc(1);
        }
        bar.finish_and_clear();
        if tree.root() != self.checkpoint.root {
            bail!(
                "the registry's log entries do not give the root its checkpoint of {size} entries signs"
            );
        }
        Ok(placeholders)
    }

    /// The level-0 hash tile beside entry bundle `tile`: its entries' leaf
    /// hashes, checked to be as many. Whether they are right is known when
    /// the root recomputed with them is the checkpoint's.
    fn leaf_hashes(&self, tile: u64) -> Result<Vec<u8>> {
        let width = self.bundle_width(tile);
        let path = tlog::tile_path(Some(0), tile, width);
        let hashes = self.hash_tile(&path)?;
        if hashes.len() as u64 != width * 32 {
            bail!("the registry's log tile {path} does not hold {width} hashes");
        }
        Ok(hashes)
    }

    /// Proves that entry `index` records the publish of `kind name@version`
    /// with the container `sha256`.
    pub fn prove_publish(
        &self,
        kind: Kind,
        name: &PackageName,
        version: &Version,
        sha256: &Sha256Digest,
        index: u64,
    ) -> Result<()> {
        let entry = self.entry(index)?;
        if !records_publish(&entry, (kind, name, version), sha256) {
            bail!(
                "the registry's log does not record {kind} {name}@{version} with sha256 {} at entry {index} (it says {entry})",
                sha256.to_hex()
            );
        }
        Ok(())
    }
}

/// Checks one downloaded version against the log: opens the log (waiting
/// for a checkpoint that covers `index`) and proves the publish.
pub fn check_version(
    client: &Client,
    opts: &LogOptions,
    out: &Output,
    what: (Kind, &PackageName, &Version),
    sha256: &Sha256Digest,
    index: Option<u64>,
) -> Result<u64> {
    let (kind, name, version) = what;
    let index = index
        .ok_or_else(|| anyhow!("the registry names no log entry for {kind} {name}@{version}"))?;
    let log = CheckedLog::open(client, opts, out, Some(index))?;
    log.prove_publish(kind, name, version, sha256, index)?;
    Ok(index)
}

/// Whether a log entry is the publish of `kind name@version` with the
/// container `sha256`.
fn records_publish(
    entry: &Value,
    what: (Kind, &PackageName, &Version),
    sha256: &Sha256Digest,
) -> bool {
    let (kind, name, version) = what;
    let says = |field: &str| entry[field].as_str().unwrap_or_default().to_owned();
    says("op") == "publish"
        && says("kind") == kind.as_str()
        && PackageName::new(says("name")).ok().as_ref() == Some(name)
        && Version::parse(&says("version")).ok().as_ref() == Some(version)
        && says("sha256") == sha256.to_hex()
}

/// [`check_version`], and the receipt of the version's entry: a
/// c2sp.org/tlog-proof@v1 at the checkpoint just checked, its `extra` the
/// entry's bytes, for `install` to keep beside the artifact.
pub fn check_version_receipt(
    client: &Client,
    opts: &LogOptions,
    out: &Output,
    what: (Kind, &PackageName, &Version),
    sha256: &Sha256Digest,
    index: Option<u64>,
) -> Result<(u64, Vec<u8>)> {
    let (kind, name, version) = what;
    let index = index
        .ok_or_else(|| anyhow!("the registry names no log entry for {kind} {name}@{version}"))?;
    let log = CheckedLog::open(client, opts, out, Some(index))?;
    // The receipt's entry is proved in the checkpoint as it is built.
    let receipt = log.receipt(index)?;
    let entry: Value = serde_json::from_slice(receipt.extra.as_deref().unwrap_or_default())
        .with_context(|| format!("log entry {index} is not JSON"))?;
    if !records_publish(&entry, what, sha256) {
        bail!(
            "the registry's log does not record {kind} {name}@{version} with sha256 {} at entry {index} (it says {entry})",
            sha256.to_hex()
        );
    }
    Ok((index, receipt.to_text()))
}

impl CheckedLog<'_> {
    /// A receipt of entry `index` at this checkpoint, built from the
    /// bundle and tiles already checked against it (so any registry or
    /// mirror serving tiles will do).
    pub fn receipt(&self, index: u64) -> Result<tlog::TlogProof> {
        let entries = self.bundle(index / tlog::TILE_WIDTH)?;
        let entry = entries
            .into_iter()
            .nth(usize::try_from(index % tlog::TILE_WIDTH).unwrap_or(usize::MAX))
            .filter(|e| !tlog::is_placeholder(e))
            .ok_or_else(|| anyhow!("log entry {index} cannot be had for a receipt"))?;
        let proof = self
            .prove(Proof::Inclusion(index))
            .with_context(|| format!("proving log entry {index}"))?;
        let receipt = tlog::TlogProof {
            extra: Some(entry),
            index,
            proof,
            checkpoint: self.note.clone().into_bytes(),
        };
        // What is written is what an offline verify accepts.
        receipt
            .verify_extra(&self.key, &self.witnesses, self.required)
            .map_err(|e| anyhow!("the receipt of log entry {index}: {e}"))?;
        Ok(receipt)
    }
}

/// The file beside an artifact that holds its receipt.
pub fn receipt_path(artifact: &std::path::Path) -> PathBuf {
    let mut name = artifact.as_os_str().to_owned();
    name.push(".tlog-proof");
    PathBuf::from(name)
}

/// The log key receipts of `registry` are checked with, offline: the one
/// given (`--log-key`), else the one pinned for that registry.
pub fn offline_log_key(registry: &str, opts: &LogOptions) -> Result<String> {
    if let Some(key) = &opts.key {
        return Ok(key.trim().to_owned());
    }
    let file = state_dir_of(registry)?.join("key");
    read_text(&file)?
        .map(|k| k.trim().to_owned())
        .ok_or_else(|| {
            anyhow!(
                "no log key is pinned for {registry} ({} is missing): give it with --log-key",
                file.display()
            )
        })
}

/// The witness keys of `opts`, checked against the count required.
pub fn witness_keys(opts: &LogOptions) -> Result<Vec<WitnessKey>> {
    let keys = opts
        .witnesses
        .iter()
        .map(|w| WitnessKey::parse(w).map_err(|e| anyhow!("{e}")))
        .collect::<Result<Vec<_>>>()?;
    if opts.required_witnesses > keys.len() {
        bail!(
            "{} witness cosignatures are required but only {} witness keys are given (--witness)",
            opts.required_witnesses,
            keys.len()
        );
    }
    Ok(keys)
}

/// Checks a receipt offline: the proof against the log key and witnesses,
/// and that its entry is the publish of `kind name@version` with the
/// artifact's `sha256` at `index`. Says what it proved.
pub fn check_receipt(
    receipt: &std::path::Path,
    log_key: &str,
    witnesses: &[WitnessKey],
    required: usize,
    what: (Kind, &PackageName, &Version),
    sha256: &Sha256Digest,
    index: u64,
) -> Result<String> {
    use std::io::Read;
    let (kind, name, version) = what;
    let file = std::fs::File::open(receipt)
        .with_context(|| format!("the receipt {} is missing", receipt.display()))?;
    let mut text = Vec::new();
    file.take(tlog::MAX_PROOF_BYTES as u64 + 1)
        .read_to_end(&mut text)
        .with_context(|| format!("reading {}", receipt.display()))?;
    let proof = tlog::TlogProof::parse(&text).map_err(|e| anyhow!("{}: {e}", receipt.display()))?;
    if proof.index != index {
        bail!(
            "{} is the receipt of log entry {}, but the manifest records entry {index}",
            receipt.display(),
            proof.index
        );
    }
    let (verified, entry) = proof
        .verify_extra(log_key, witnesses, required)
        .map_err(|e| anyhow!("{} (log entry {index}): {e}", receipt.display()))?;
    let entry: Value = serde_json::from_slice(entry)
        .with_context(|| format!("log entry {index} in {} is not JSON", receipt.display()))?;
    if !records_publish(&entry, what, sha256) {
        bail!(
            "log entry {index} in {} does not record {kind} {name}@{version} with sha256 {} (it says {entry})",
            receipt.display(),
            sha256.to_hex()
        );
    }
    Ok(format!(
        "log entry {index} in the tree of {} with {} witness cosignatures",
        verified.checkpoint.size,
        verified.cosignatures.len()
    ))
}
