//! The transparency log's formats, in the C2SP specifications other tools
//! read (no IO here):
//! - an entry: the RFC 8785 canonical JSON of one change ([`LogEntry`]);
//! - the tree: RFC 6962 / 9162 Merkle hashing over entries, kept as Go
//!   sumdb's "stored hashes" so a tree of `n` entries is `2n - popcount(n)`
//!   hashes, appended to, never rewritten ([`Tree`]);
//! - tiles (c2sp.org/tlog-tiles, height 8): hash tiles and entry bundles
//!   with their paths ([`tile_path`], [`Tree::hash_tile`], [`entry_bundle`]);
//! - checkpoints (c2sp.org/tlog-checkpoint) as signed notes
//!   (c2sp.org/signed-note) with an Ed25519 log key ([`LogKey`],
//!   [`open_checkpoint`]).
//!
//! The Merkle arithmetic, proofs and note encoding come from Cloudflare's
//! `tlog_tiles` and `signed_note` crates (ports of Go's sumdb code).

use serde::Serialize;
use tlog_tiles::{Checkpoint, Hash, HashReader};

use crate::signing::{PublicKey, SecretKey};

/// Hashes per tile side: C2SP tlog-tiles fixes tiles at height 8.
pub const TILE_HEIGHT: u8 = 8;
/// Entries or hashes in a full tile.
pub const TILE_WIDTH: u64 = 1 << TILE_HEIGHT;

/// What a log entry records: one state change of the registry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum LogOp {
    Genesis,
    Publish,
    Yank,
    Unyank,
    OwnerAdd,
    OwnerRemove,
    KeyAdd,
    KeyRevoke,
}

/// One entry. Serialized as RFC 8785 canonical JSON ([`LogEntry::to_bytes`]):
/// keys sorted, no whitespace, absent fields left out, so the same change
/// always has the same bytes and any JCS implementation agrees.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LogEntry {
    pub v: u8,
    pub op: LogOp,
    /// RFC 3339, UTC.
    pub time: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// Hex SHA-256 of the container.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sha256: Option<String>,
    /// The signing key's id.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub signer: Option<String>,
    /// The account that made the change (or whom it concerns).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub account: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// For the genesis entry: the log's origin.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub origin: Option<String>,
}

impl LogEntry {
    /// An entry of `op` at `time` with no fields yet.
    pub fn new(op: LogOp, time: impl Into<String>) -> Self {
        Self {
            v: 1,
            op,
            time: time.into(),
            kind: None,
            name: None,
            version: None,
            sha256: None,
            signer: None,
            account: None,
            reason: None,
            origin: None,
        }
    }

    /// The entry's bytes in the log: RFC 8785 canonical JSON.
    pub fn to_bytes(&self) -> Vec<u8> {
        serde_json_canonicalizer::to_vec(self).expect("an entry is plain JSON")
    }
}

/// A log's Merkle tree as its stored hashes, in the order Go's sumdb (and
/// `tlog_tiles`) number them: every leaf hash and every complete subtree's
/// hash, appended as entries arrive.
#[derive(Debug, Clone, Default)]
pub struct Tree {
    size: u64,
    hashes: Vec<Hash>,
}

/// An error of the tree's arithmetic: an index past the tree, or a proof
/// that does not hold.
#[derive(Debug, thiserror::Error)]
#[error("transparency log: {0}")]
pub struct TreeError(String);

impl From<tlog_tiles::Error> for TreeError {
    fn from(e: tlog_tiles::Error) -> Self {
        Self(e.to_string())
    }
}

impl HashReader for Tree {
    fn read_hashes(&self, indexes: &[u64]) -> Result<Vec<Hash>, tlog_tiles::Error> {
        indexes
            .iter()
            .map(|&i| {
                usize::try_from(i)
                    .ok()
                    .and_then(|i| self.hashes.get(i))
                    .copied()
                    .ok_or(tlog_tiles::Error::IndexesNotInTree)
            })
            .collect()
    }
}

impl Tree {
    /// A tree from stored hashes read back from storage; checked to be the
    /// right number for `size` entries.
    pub fn from_stored(size: u64, hashes: Vec<[u8; 32]>) -> Result<Self, TreeError> {
        let want = tlog_tiles::stored_hash_count(size);
        if hashes.len() as u64 != want {
            return Err(TreeError(format!(
                "{size} entries need {want} stored hashes, not {}",
                hashes.len()
            )));
        }
        Ok(Self {
            size,
            hashes: hashes.into_iter().map(Hash).collect(),
        })
    }

    /// Entries in the tree.
    pub fn size(&self) -> u64 {
        self.size
    }

    /// Every stored hash, in storage order (index `i` is
    /// `tlog_tiles::stored_hash_index`'s numbering).
    pub fn stored(&self) -> impl Iterator<Item = [u8; 32]> + '_ {
        self.hashes.iter().map(|h| h.0)
    }

    /// Appends one entry; returns the stored hashes it added (to be written
    /// after those already stored).
    pub fn append(&mut self, entry: &[u8]) -> Result<Vec<[u8; 32]>, TreeError> {
        let added = tlog_tiles::stored_hashes(self.size, entry, self)?;
        self.hashes.extend(&added);
        self.size += 1;
        Ok(added.into_iter().map(|h| h.0).collect())
    }

    /// The root hash of the first `size` entries.
    pub fn root_at(&self, size: u64) -> Result<[u8; 32], TreeError> {
        if size > self.size {
            return Err(TreeError(format!(
                "no tree of {size} entries in a log of {}",
                self.size
            )));
        }
        Ok(tlog_tiles::tree_hash(size, self)?.0)
    }

    /// The root hash of the whole tree.
    pub fn root(&self) -> [u8; 32] {
        self.root_at(self.size).expect("the whole tree has a root")
    }

    /// The inclusion proof of entry `index` in the tree of `size` entries.
    pub fn inclusion_proof(&self, size: u64, index: u64) -> Result<Vec<[u8; 32]>, TreeError> {
        Ok(tlog_tiles::prove_record(size, index, self)?
            .into_iter()
            .map(|h| h.0)
            .collect())
    }

    /// The consistency proof from the tree of `old` entries to that of
    /// `new` entries.
    pub fn consistency_proof(&self, new: u64, old: u64) -> Result<Vec<[u8; 32]>, TreeError> {
        Ok(tlog_tiles::prove_tree(new, old, self)?
            .into_iter()
            .map(|h| h.0)
            .collect())
    }

    /// Hash tile `index` of `level` in the tree of `size` entries: its
    /// hashes concatenated, `width` of them (`TILE_WIDTH` for a full tile).
    pub fn hash_tile(
        &self,
        size: u64,
        level: u8,
        index: u64,
        width: u32,
    ) -> Result<Vec<u8>, TreeError> {
        let tile = tlog_tiles::Tile::new(TILE_HEIGHT, level, index, width, false);
        let needed =
            (index * TILE_WIDTH + u64::from(width)) << (u32::from(TILE_HEIGHT) * u32::from(level));
        if needed > size {
            return Err(TreeError(format!(
                "tile {level}/{index} of width {width} is past a tree of {size}"
            )));
        }
        Ok(tile.read_data(self)?)
    }
}

/// The leaf hash of an entry: SHA-256(0x00 || entry).
pub fn leaf_hash(entry: &[u8]) -> [u8; 32] {
    tlog_tiles::record_hash(entry).0
}

/// An entry bundle (c2sp.org/tlog-tiles): each entry preceded by its length
/// as a 2-byte big-endian integer. `None` when an entry is 64 KiB or more.
pub fn entry_bundle<'a>(entries: impl IntoIterator<Item = &'a [u8]>) -> Option<Vec<u8>> {
    let mut out = Vec::new();
    for entry in entries {
        let len = u16::try_from(entry.len()).ok()?;
        out.extend_from_slice(&len.to_be_bytes());
        out.extend_from_slice(entry);
    }
    Some(out)
}

/// A tile's path under the log's prefix, as c2sp.org/tlog-tiles writes it:
/// `tile/<L>/<N>` with `N` in groups of three digits (`x001/x234/067`), or
/// `tile/entries/<N>` for an entry bundle, with `.p/<W>` for a partial one.
pub fn tile_path(level: Option<u8>, index: u64, width: u64) -> String {
    let mut groups = Vec::new();
    let mut n = index;
    loop {
        groups.push(n % 1000);
        n /= 1000;
        if n == 0 {
            break;
        }
    }
    let digits: Vec<String> = groups
        .iter()
        .rev()
        .enumerate()
        .map(|(i, g)| {
            if i + 1 == groups.len() {
                format!("{g:03}")
            } else {
                format!("x{g:03}")
            }
        })
        .collect();
    let level = level.map_or_else(|| "entries".to_owned(), |l| l.to_string());
    let partial = if width < TILE_WIDTH {
        format!(".p/{width}")
    } else {
        String::new()
    };
    format!("tile/{level}/{}{partial}", digits.join("/"))
}

/// The log's signing key: an Ed25519 key with the name its notes carry.
pub struct LogKey {
    name: String,
    key: SecretKey,
    id: u32,
}

/// A signed-note signature type: Ed25519.
const ED25519_TYPE: u8 = 0x01;

fn encoded_public(key: &PublicKey) -> Vec<u8> {
    let mut encoded = vec![ED25519_TYPE];
    encoded.extend_from_slice(&key.to_raw());
    encoded
}

impl LogKey {
    /// `name` is the log's key name, by convention its origin.
    pub fn new(name: impl Into<String>, key: SecretKey) -> Result<Self, TreeError> {
        let name = name.into();
        if !signed_note::is_key_name_valid(&name) {
            return Err(TreeError(format!("{name:?} cannot name a note key")));
        }
        let id = signed_note::key_id(&name, &encoded_public(&key.public_key()));
        Ok(Self { name, key, id })
    }

    /// The verifier key in the signed-note text form:
    /// `<name>+<key id hex>+<base64(0x01 || public key)>`.
    pub fn verifier_key(&self) -> String {
        use base64::Engine;
        format!(
            "{}+{:08x}+{}",
            self.name,
            self.id,
            base64::engine::general_purpose::STANDARD
                .encode(encoded_public(&self.key.public_key()))
        )
    }

    /// The checkpoint of a tree of `size` entries with root `root`, as a
    /// signed note.
    pub fn sign_checkpoint(
        &self,
        origin: &str,
        size: u64,
        root: [u8; 32],
    ) -> Result<Vec<u8>, TreeError> {
        let checkpoint = Checkpoint::new(origin, size, Hash(root), "")
            .map_err(|_| TreeError(format!("{origin:?} cannot be a checkpoint's origin")))?;
        let mut note = signed_note::Note::new(&checkpoint.to_bytes(), &[])
            .map_err(|e| TreeError(e.to_string()))?;
        note.add_sigs(&[self])
            .map_err(|e| TreeError(e.to_string()))?;
        Ok(note.to_bytes())
    }
}

impl signed_note::Signer for LogKey {
    fn name(&self) -> &str {
        &self.name
    }

    fn key_id(&self) -> u32 {
        self.id
    }

    fn sign(&self, msg: &[u8]) -> Result<Vec<u8>, signature::Error> {
        Ok(self.key.sign(msg).to_vec())
    }
}

/// A checkpoint's facts once its note is verified.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OpenedCheckpoint {
    pub origin: String,
    pub size: u64,
    pub root: [u8; 32],
}

/// Verifies a checkpoint note against `verifier_key` (the text form) and
/// reads it; a note the key did not sign, or a malformed one, is an error.
pub fn open_checkpoint(note: &[u8], verifier_key: &str) -> Result<OpenedCheckpoint, TreeError> {
    let verifier = signed_note::StandardVerifier::new(verifier_key)
        .map_err(|e| TreeError(format!("the log key: {e}")))?;
    let note =
        signed_note::Note::from_bytes(note).map_err(|e| TreeError(format!("the note: {e}")))?;
    let verifiers = signed_note::VerifierList::new(vec![Box::new(verifier)]);
    note.verify(&verifiers)
        .map_err(|e| TreeError(format!("the checkpoint's signature: {e}")))?;
    let checkpoint = Checkpoint::from_bytes(note.text())
        .map_err(|_| TreeError("the note is not a checkpoint".to_owned()))?;
    Ok(OpenedCheckpoint {
        origin: checkpoint.origin().to_owned(),
        size: checkpoint.size(),
        root: checkpoint.hash().0,
    })
}

/// Checks that entry `index` with `leaf` is in the tree of `size` entries
/// with root `root`, by `proof`.
pub fn check_inclusion(
    proof: &[[u8; 32]],
    size: u64,
    root: [u8; 32],
    index: u64,
    leaf: [u8; 32],
) -> Result<(), TreeError> {
    let proof: Vec<Hash> = proof.iter().copied().map(Hash).collect();
    Ok(tlog_tiles::check_record(
        &proof,
        size,
        Hash(root),
        index,
        Hash(leaf),
    )?)
}

/// Checks that the tree of `old` entries with root `old_root` is a prefix
/// of the tree of `new` entries with root `new_root`, by `proof`.
pub fn check_consistency(
    proof: &[[u8; 32]],
    new: u64,
    new_root: [u8; 32],
    old: u64,
    old_root: [u8; 32],
) -> Result<(), TreeError> {
    let proof: Vec<Hash> = proof.iter().copied().map(Hash).collect();
    Ok(tlog_tiles::check_tree(
        &proof,
        new,
        Hash(new_root),
        old,
        Hash(old_root),
    )?)
}
