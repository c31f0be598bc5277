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

use serde::{Deserialize, Serialize};
use tlog_tiles::{Checkpoint, Hash, HashReader};

use crate::signing::{PublicKey, SecretKey};

/// Hashes per tile side: C2SP tlog-tiles fixes tiles at height 8.
pub const TILE_HEIGHT: u8 = 8;
/// Entries or hashes in a full tile.
pub const TILE_WIDTH: u64 = 1 << TILE_HEIGHT;

/// What a log entry records: one state change of the registry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
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
    /// An owner granted a sealed agent's prompt key to an account.
    GrantAdd,
    /// An owner revoked a grant.
    GrantRevoke,
    /// A package's status (`name` alone) or a version's (`name` and
    /// `version`) changed: `status`, with `reason` and `successor` when
    /// given (PEP 792's statuses: active, deprecated, archived,
    /// quarantined).
    Status,
    /// An advisory was published, changed or withdrawn: `advisory` (its
    /// id), `modified` (the OSV `modified` time) and `sha256` (hex of the
    /// OSV document exactly as served), so an auditor can check the
    /// document it is served against the log.
    Advisory,
    /// A version was staged (docs/staged-releases.md): kind, name, version,
    /// sha256, signer and account, as a publish names them. Its approval is
    /// the version's `publish` entry, naming this one in `staged`.
    Stage,
    /// A staged version was rejected: `staged` is its stage entry's index.
    Reject,
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
    /// For a grant or its revocation: the hex commitment to the grant
    /// (`grants::commitment`), never the grantee's name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub grant: Option<String>,
    /// For a status change: the new status.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
    /// For a deprecation: the package to use instead.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub successor: Option<String>,
    /// For an advisory: its id.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub advisory: Option<String>,
    /// For an advisory: the document's `modified` time (RFC 3339).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub modified: Option<String>,
    /// For an approval (`publish`) or a rejection: the index of the
    /// version's `stage` entry.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub staged: Option<u64>,
    /// For a publish or a stage: hex SHA-256 of the version's provenance
    /// (its DSSE envelope, as served).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub provenance: Option<String>,
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
            grant: None,
            status: None,
            successor: None,
            advisory: None,
            modified: None,
            staged: None,
            provenance: None,
        }
    }

    /// The entry's bytes in the log: RFC 8785 canonical JSON, refused when
    /// longer than an entry bundle can frame. Every append goes through
    /// here, so the log never holds an entry its bundles cannot serve.
    pub fn to_bytes(&self) -> Result<Vec<u8>, EntryTooLong> {
        let bytes = serde_json_canonicalizer::to_vec(self).expect("an entry is plain JSON");
        if bytes.len() > MAX_ENTRY_LEN {
            return Err(EntryTooLong(bytes.len()));
        }
        Ok(bytes)
    }
}

/// The longest entry an entry bundle can frame (a 2-byte length).
pub const MAX_ENTRY_LEN: usize = u16::MAX as usize;

/// An entry longer than [`MAX_ENTRY_LEN`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("a log entry of {0} bytes is longer than an entry bundle can serve ({MAX_ENTRY_LEN})")]
pub struct EntryTooLong(pub usize);

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

    /// Stored hashes held: where the next append's hashes go.
    pub fn stored_len(&self) -> u64 {
        self.hashes.len() as u64
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
        self.append_leaf_hash(leaf_hash(entry))
    }

    /// Appends an entry known only by its leaf hash: a bundle's
    /// [placeholder](is_placeholder), whose hash comes from the level-0 tile.
    pub fn append_leaf_hash(&mut self, leaf: [u8; 32]) -> Result<Vec<[u8; 32]>, TreeError> {
        let added = tlog_tiles::stored_hashes_for_record_hash(self.size, Hash(leaf), self)?;
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
        root_of(size, self)
    }

    /// The root hash of the whole tree.
    pub fn root(&self) -> [u8; 32] {
        self.root_at(self.size).expect("the whole tree has a root")
    }

    /// The inclusion proof of entry `index` in the tree of `size` entries.
    pub fn inclusion_proof(&self, size: u64, index: u64) -> Result<Vec<[u8; 32]>, TreeError> {
        inclusion_proof(size, index, self)
    }

    /// The consistency proof from the tree of `old` entries to that of
    /// `new` entries.
    pub fn consistency_proof(&self, new: u64, old: u64) -> Result<Vec<[u8; 32]>, TreeError> {
        consistency_proof(new, old, self)
    }

    /// Hash tile `index` of `level` in the tree of `size` entries
    /// ([`hash_tile`]).
    pub fn hash_tile(
        &self,
        size: u64,
        level: u8,
        index: u64,
        width: u32,
    ) -> Result<Vec<u8>, TreeError> {
        hash_tile(size, level, index, width, self)
    }
}

// The tree's arithmetic over any source of stored hashes: a whole [`Tree`]
// in memory, or [`StoredHashes`] read from storage on demand.

/// The root hash of the first `size` entries.
pub fn root_of(size: u64, hashes: &impl HashReader) -> Result<[u8; 32], TreeError> {
    Ok(tlog_tiles::tree_hash(size, hashes)?.0)
}

/// The inclusion proof of entry `index` in the tree of `size` entries.
pub fn inclusion_proof(
    size: u64,
    index: u64,
    hashes: &impl HashReader,
) -> Result<Vec<[u8; 32]>, TreeError> {
    Ok(tlog_tiles::prove_record(size, index, hashes)?
        .into_iter()
        .map(|h| h.0)
        .collect())
}

/// The consistency proof from the tree of `old` entries to that of `new`
/// entries.
pub fn consistency_proof(
    new: u64,
    old: u64,
    hashes: &impl HashReader,
) -> Result<Vec<[u8; 32]>, TreeError> {
    Ok(tlog_tiles::prove_tree(new, old, hashes)?
        .into_iter()
        .map(|h| h.0)
        .collect())
}

/// Hash tile `index` of `level` in the tree of `size` entries: its hashes
/// concatenated, `width` of them (`TILE_WIDTH` for a full tile).
pub fn hash_tile(
    size: u64,
    level: u8,
    index: u64,
    width: u32,
    hashes: &impl HashReader,
) -> Result<Vec<u8>, TreeError> {
    let past = || {
        TreeError(format!(
            "tile {level}/{index} of width {width} is past a tree of {size}"
        ))
    };
    if width == 0 || u64::from(width) > TILE_WIDTH {
        return Err(TreeError(format!(
            "a tile is 1 to {TILE_WIDTH} wide, not {width}"
        )));
    }
    // The entries the tile covers, without overflow for any address.
    let needed = index
        .checked_mul(TILE_WIDTH)
        .and_then(|n| n.checked_add(u64::from(width)))
        .and_then(|n| n.checked_mul(1u64.checked_shl(u32::from(TILE_HEIGHT) * u32::from(level))?))
        .ok_or_else(past)?;
    let tile = tlog_tiles::Tile::new(TILE_HEIGHT, level, index, width, false);
    if needed > size {
        return Err(past());
    }
    Ok(tile.read_data(hashes)?)
}

/// The stored indexes of a tree's right edge: the hash of each complete
/// subtree its `size` entries split into, one per bit set in `size`. They
/// are all the next append and the root need, so a log that keeps only
/// these ([`Frontier`]) holds `log2 size` hashes, not `2 size`.
pub fn frontier_indexes(size: u64) -> Vec<u64> {
    (0..64u8)
        .rev()
        .filter(|&level| size >> level & 1 == 1)
        .map(|level| tlog_tiles::stored_hash_index(level, (size >> level) - 1))
        .collect()
}

/// A tree by its right edge only ([`frontier_indexes`]): it appends
/// entries, giving the stored hashes each adds, and has a root, in memory
/// logarithmic in its size. Proofs and tiles need the rest of the stored
/// hashes: [`StoredHashes`].
#[derive(Debug, Clone, Default)]
pub struct Frontier {
    size: u64,
    edge: std::collections::BTreeMap<u64, Hash>,
}

impl HashReader for Frontier {
    fn read_hashes(&self, indexes: &[u64]) -> Result<Vec<Hash>, tlog_tiles::Error> {
        indexes
            .iter()
            .map(|i| {
                self.edge
                    .get(i)
                    .copied()
                    .ok_or(tlog_tiles::Error::IndexesNotInTree)
            })
            .collect()
    }
}

impl Frontier {
    /// The right edge of a tree of `size` entries from its stored hashes
    /// at [`frontier_indexes`], read back from storage as `(index, hash)`.
    pub fn from_stored(size: u64, hashes: Vec<(u64, [u8; 32])>) -> Result<Self, TreeError> {
        let edge: std::collections::BTreeMap<u64, Hash> =
            hashes.into_iter().map(|(i, h)| (i, Hash(h))).collect();
        let want: std::collections::BTreeSet<u64> = frontier_indexes(size).into_iter().collect();
        if !edge.keys().eq(want.iter()) {
            return Err(TreeError(format!(
                "the right edge of {size} entries is not the stored hashes given"
            )));
        }
        Ok(Self { size, edge })
    }

    /// Entries in the tree.
    pub fn size(&self) -> u64 {
        self.size
    }

    /// Stored hashes in the tree: where the next append's hashes go.
    pub fn stored_len(&self) -> u64 {
        tlog_tiles::stored_hash_count(self.size)
    }

    /// Appends one entry; returns the stored hashes it added.
    pub fn append(&mut self, entry: &[u8]) -> Result<Vec<[u8; 32]>, TreeError> {
        self.append_leaf_hash(leaf_hash(entry))
    }

    /// Appends an entry known only by its leaf hash (a bundle's
    /// [placeholder](is_placeholder)).
    pub fn append_leaf_hash(&mut self, leaf: [u8; 32]) -> Result<Vec<[u8; 32]>, TreeError> {
        let added = tlog_tiles::stored_hashes_for_record_hash(self.size, Hash(leaf), self)?;
        let first = self.stored_len();
        self.edge.extend((first..).zip(added.iter().copied()));
        self.size += 1;
        let keep = frontier_indexes(self.size);
        self.edge.retain(|i, _| keep.contains(i));
        Ok(added.into_iter().map(|h| h.0).collect())
    }

    /// The root hash.
    pub fn root(&self) -> [u8; 32] {
        root_of(self.size, self).expect("a frontier holds its root's hashes")
    }
}

/// Stored hashes read from storage on demand: a reader that answers from
/// what it holds and notes what it lacks, so the caller can fetch those and
/// run the computation again ([`StoredHashes::missing`]). Each of the
/// tree's computations asks once for all it needs, so one fetch suffices.
#[derive(Debug, Default)]
pub struct StoredHashes {
    known: std::collections::HashMap<u64, Hash>,
    missing: std::cell::RefCell<std::collections::BTreeSet<u64>>,
}

impl HashReader for StoredHashes {
    fn read_hashes(&self, indexes: &[u64]) -> Result<Vec<Hash>, tlog_tiles::Error> {
        let found: Option<Vec<Hash>> = indexes.iter().map(|i| self.known.get(i).copied()).collect();
        found.ok_or_else(|| {
            self.missing
                .borrow_mut()
                .extend(indexes.iter().filter(|i| !self.known.contains_key(i)));
            tlog_tiles::Error::IndexesNotInTree
        })
    }
}

impl StoredHashes {
    /// The indexes asked for and not held, taken (empty when nothing was
    /// lacking).
    pub fn missing(&self) -> Vec<u64> {
        std::mem::take(&mut *self.missing.borrow_mut())
            .into_iter()
            .collect()
    }

    /// Holds a stored hash read back from storage.
    pub fn insert(&mut self, index: u64, hash: [u8; 32]) {
        self.known.insert(index, Hash(hash));
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

/// The entry bundle a registry serves: [`entry_bundle`], except that an
/// entry too long to frame is replaced by an empty [placeholder]
/// (is_placeholder). [`LogEntry::to_bytes`] refuses such entries, so only a
/// log written before that bound can hold one; without the placeholder its
/// bundle, and every entry sharing it, could never be served again.
pub fn served_entry_bundle<'a>(entries: impl IntoIterator<Item = &'a [u8]>) -> Vec<u8> {
    let mut out = Vec::new();
    for entry in entries {
        let entry = if entry.len() > MAX_ENTRY_LEN {
            &[][..]
        } else {
            entry
        };
        out.extend_from_slice(&(entry.len() as u16).to_be_bytes());
        out.extend_from_slice(entry);
    }
    out
}

/// Whether an entry read from a bundle is the placeholder of one too long
/// to serve. Entries of this log are JSON objects, never empty, so an empty
/// one can mean nothing else; its leaf hash is still in the level-0 tile.
pub fn is_placeholder(entry: &[u8]) -> bool {
    entry.is_empty()
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

/// What a tile path names: a hash tile's level (`None` for an entry
/// bundle), its index and width.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TileAddress {
    pub level: Option<u8>,
    pub index: u64,
    pub width: u64,
}

/// Reads a tile path after `tile/` (`0/x001/234`, `entries/005.p/12`).
/// Only the canonical spelling [`tile_path`] writes is accepted, so one
/// tile has one URL; levels are below 64, widths 1 to 255 when partial.
pub fn parse_tile_path(path: &str) -> Option<TileAddress> {
    let (level, rest) = path.split_once('/')?;
    let level = match level {
        "entries" => None,
        l if !l.is_empty() && l.len() <= 2 && l.bytes().all(|b| b.is_ascii_digit()) => {
            Some(l.parse::<u8>().ok().filter(|l| *l < 64)?)
        }
        _ => return None,
    };
    let (digits, width) = match rest.split_once(".p/") {
        Some((digits, width)) => {
            if width.is_empty() || width.len() > 3 || !width.bytes().all(|b| b.is_ascii_digit()) {
                return None;
            }
            (digits, width.parse::<u64>().ok()?)
        }
        None => (rest, TILE_WIDTH),
    };
    if width == 0 || width > TILE_WIDTH {
        return None;
    }
    let groups: Vec<&str> = digits.split('/').collect();
    if groups.len() > 7 {
        return None;
    }
    let mut index: u64 = 0;
    for (i, group) in groups.iter().enumerate() {
        let last = i + 1 == groups.len();
        let group = if last {
            *group
        } else {
            group.strip_prefix('x')?
        };
        if group.len() != 3 || !group.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        index = index
            .checked_mul(1000)?
            .checked_add(group.parse::<u64>().ok()?)?;
    }
    // Rejects non-canonical spellings (`x000/001`).
    (tile_path(level, index, width) == format!("tile/{path}")).then_some(TileAddress {
        level,
        index,
        width,
    })
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

/// Checks that `vkey` is a log verifier key in the signed-note text form
/// (`<name>+<id>+<base64(0x01 || Ed25519 key)>`).
pub fn check_log_key(vkey: &str) -> Result<(), TreeError> {
    signed_note::StandardVerifier::new(vkey)
        .map(drop)
        .map_err(|e| TreeError(e.to_string()))
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
    open_witnessed_checkpoint(note, verifier_key, &[]).map(|(opened, _)| opened)
}

/// A signed-note signature type: a timestamped Ed25519 cosignature
/// (c2sp.org/tlog-cosignature, `cosignature/v1`).
const COSIGNATURE_V1_TYPE: u8 = 0x04;

/// The message a `cosignature/v1` signs: a header line, a time line, then
/// the checkpoint's whole note body.
fn cosigned_message(time: u64, checkpoint: &[u8]) -> Vec<u8> {
    let mut message = format!("cosignature/v1\ntime {time}\n").into_bytes();
    message.extend_from_slice(checkpoint);
    message
}

/// A witness's key, as a verifier of its `cosignature/v1` signatures.
#[derive(Clone)]
pub struct WitnessKey {
    name: String,
    id: u32,
    key: PublicKey,
}

impl std::fmt::Debug for WitnessKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "WitnessKey({}+{:08x})", self.name, self.id)
    }
}

impl WitnessKey {
    /// Reads a verifier key `<name>+<key id hex>+<base64(0x04 || key)>`.
    pub fn parse(vkey: &str) -> Result<Self, TreeError> {
        use base64::Engine;
        let bad = |why: &str| TreeError(format!("witness key {vkey:?}: {why}"));
        let mut parts = vkey.trim().splitn(3, '+');
        let (Some(name), Some(id), Some(key)) = (parts.next(), parts.next(), parts.next()) else {
            return Err(bad("expected <name>+<id>+<key>"));
        };
        if !signed_note::is_key_name_valid(name) {
            return Err(bad("not a key name"));
        }
        let id = u32::from_str_radix(id, 16)
            .ok()
            .filter(|_| id.len() == 8)
            .ok_or_else(|| bad("the id is not 8 hex digits"))?;
        let encoded = base64::engine::general_purpose::STANDARD
            .decode(key)
            .map_err(|_| bad("the key is not base64"))?;
        let Some((&COSIGNATURE_V1_TYPE, raw)) = encoded.split_first() else {
            return Err(bad("not a cosignature/v1 (0x04) Ed25519 key"));
        };
        let raw: &[u8; 32] = raw.try_into().map_err(|_| bad("not 32 key bytes"))?;
        if signed_note::key_id(name, &encoded) != id {
            return Err(bad("the id does not match the name and key"));
        }
        Ok(Self {
            name: name.to_owned(),
            id,
            key: PublicKey::from_raw(raw).map_err(|e| bad(&e.to_string()))?,
        })
    }

    /// The key in its text form.
    pub fn vkey(&self) -> String {
        use base64::Engine;
        let mut encoded = vec![COSIGNATURE_V1_TYPE];
        encoded.extend_from_slice(&self.key.to_raw());
        format!(
            "{}+{:08x}+{}",
            self.name,
            self.id,
            base64::engine::general_purpose::STANDARD.encode(encoded)
        )
    }

    pub fn name(&self) -> &str {
        &self.name
    }
}

impl signed_note::Verifier for WitnessKey {
    fn name(&self) -> &str {
        &self.name
    }

    fn key_id(&self) -> u32 {
        self.id
    }

    fn verify(&self, msg: &[u8], sig: &[u8]) -> bool {
        let Some((time, sig)) = sig.split_first_chunk::<8>() else {
            return false;
        };
        let time = u64::from_be_bytes(*time);
        time < 1 << 63 && self.key.verify(&cosigned_message(time, msg), sig).is_ok()
    }
}

/// A witness that cosigns checkpoints (`cosignature/v1`): what a witness
/// runs, here for tests and for operators trying the protocol.
pub struct Witness {
    name: String,
    id: u32,
    key: SecretKey,
    time: u64,
}

impl Witness {
    pub fn new(name: impl Into<String>, key: SecretKey) -> Result<Self, TreeError> {
        let name = name.into();
        if !signed_note::is_key_name_valid(&name) {
            return Err(TreeError(format!("{name:?} cannot name a note key")));
        }
        let mut encoded = vec![COSIGNATURE_V1_TYPE];
        encoded.extend_from_slice(&key.public_key().to_raw());
        let id = signed_note::key_id(&name, &encoded);
        Ok(Self {
            name,
            id,
            key,
            time: 0,
        })
    }

    /// The witness's verifier key.
    pub fn key(&self) -> WitnessKey {
        WitnessKey {
            name: self.name.clone(),
            id: self.id,
            key: self.key.public_key(),
        }
    }

    /// Adds this witness's cosignature, made at `time` (Unix seconds), to
    /// the checkpoint note `note`; the note's own signatures are kept.
    pub fn cosign(&mut self, note: &[u8], time: u64) -> Result<Vec<u8>, TreeError> {
        let mut note =
            signed_note::Note::from_bytes(note).map_err(|e| TreeError(format!("the note: {e}")))?;
        self.time = time;
        note.add_sigs(&[&*self])
            .map_err(|e| TreeError(e.to_string()))?;
        Ok(note.to_bytes())
    }
}

impl signed_note::Signer for Witness {
    fn name(&self) -> &str {
        &self.name
    }

    fn key_id(&self) -> u32 {
        self.id
    }

    fn sign(&self, msg: &[u8]) -> Result<Vec<u8>, signature::Error> {
        let mut sig = self.time.to_be_bytes().to_vec();
        sig.extend_from_slice(&self.key.sign(&cosigned_message(self.time, msg)));
        Ok(sig)
    }
}

/// A witness's verified cosignature of a checkpoint.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cosignature {
    /// The witness key's name.
    pub witness: String,
    /// The note's signature line (`— <name> <base64>`), without its newline.
    pub line: String,
}

/// A checkpoint note verified against the log's key and any of
/// `witnesses`: its facts, and the cosignatures that hold. A bad signature
/// by a known key is an error; lines by unknown keys are ignored.
pub fn open_witnessed_checkpoint(
    note: &[u8],
    verifier_key: &str,
    witnesses: &[WitnessKey],
) -> Result<(OpenedCheckpoint, Vec<Cosignature>), TreeError> {
    let log = signed_note::StandardVerifier::new(verifier_key)
        .map_err(|e| TreeError(format!("the log key: {e}")))?;
    let log_name = signed_note::Verifier::name(&log).to_owned();
    let log_id = signed_note::Verifier::key_id(&log);
    let mut verifiers: Vec<Box<dyn signed_note::Verifier>> = vec![Box::new(log)];
    verifiers.extend(
        witnesses
            .iter()
            .map(|w| Box::new(w.clone()) as Box<dyn signed_note::Verifier>),
    );
    let parsed =
        signed_note::Note::from_bytes(note).map_err(|e| TreeError(format!("the note: {e}")))?;
    let (verified, _) = parsed
        .verify(&signed_note::VerifierList::new(verifiers))
        .map_err(|e| TreeError(format!("the checkpoint's signatures: {e}")))?;
    let is_log = |sig: &signed_note::Signature| sig.name() == log_name && sig.id() == log_id;
    if !verified.iter().any(is_log) {
        return Err(TreeError(
            "the checkpoint is not signed by the log's key".to_owned(),
        ));
    }
    let checkpoint = Checkpoint::from_bytes(parsed.text())
        .map_err(|_| TreeError("the note is not a checkpoint".to_owned()))?;
    let cosignatures = verified
        .iter()
        .filter(|sig| !is_log(sig))
        .map(|sig| Cosignature {
            witness: sig.name().to_owned(),
            line: String::from_utf8_lossy(&sig.to_bytes())
                .trim_end()
                .to_owned(),
        })
        .collect();
    Ok((
        OpenedCheckpoint {
            origin: checkpoint.origin().to_owned(),
            size: checkpoint.size(),
            root: checkpoint.hash().0,
        },
        cosignatures,
    ))
}

/// Stored hashes in a tree of `size` entries.
pub fn stored_hash_count(size: u64) -> u64 {
    tlog_tiles::stored_hash_count(size)
}

/// Proofs read from a log's tiles, each tile checked against the tree's
/// root as it is read (`tlog_tiles`' `TileHashReader`), so a client needs
/// no trust in whoever serves the tiles. `fetch` gets a hash tile by its
/// C2SP path (`tile/0/x001/234.p/8`); the IO is the caller's.
pub struct TileProofs<F> {
    size: u64,
    root: [u8; 32],
    fetch: F,
}

struct FetchTiles<'a, F>(&'a F);

impl<F: Fn(&str) -> Result<Vec<u8>, String>> tlog_tiles::TileReader for FetchTiles<'_, F> {
    fn height(&self) -> u8 {
        TILE_HEIGHT
    }

    fn read_tiles(&self, tiles: &[tlog_tiles::Tile]) -> Result<Vec<Vec<u8>>, tlog_tiles::Error> {
        tiles
            .iter()
            .map(|tile| {
                let path = tile_path(
                    Some(tile.level()),
                    tile.level_index(),
                    u64::from(tile.width()),
                );
                let data = (self.0)(&path).map_err(|_| tlog_tiles::Error::IndexesNotInTree)?;
                if data.len() != tile.width() as usize * 32 {
                    return Err(tlog_tiles::Error::InvalidTile);
                }
                Ok(data)
            })
            .collect()
    }

    fn save_tiles(&self, _tiles: &[tlog_tiles::Tile], _data: &[Vec<u8>]) {}
}

impl<F: Fn(&str) -> Result<Vec<u8>, String>> TileProofs<F> {
    /// Proofs in the tree of `size` entries with root `root` (from a
    /// verified checkpoint).
    pub fn new(size: u64, root: [u8; 32], fetch: F) -> Self {
        Self { size, root, fetch }
    }

    /// The inclusion proof of entry `index`, from tiles that hold.
    pub fn inclusion(&self, index: u64) -> Result<Vec<[u8; 32]>, TreeError> {
        if index >= self.size {
            return Err(TreeError(format!(
                "entry {index} is not in a tree of {}",
                self.size
            )));
        }
        let tiles = FetchTiles(&self.fetch);
        let reader = tlog_tiles::TileHashReader::new(self.size, Hash(self.root), &tiles);
        Ok(tlog_tiles::prove_record(self.size, index, &reader)?
            .into_iter()
            .map(|h| h.0)
            .collect())
    }

    /// The consistency proof from the tree of `old` entries, from tiles
    /// that hold.
    pub fn consistency(&self, old: u64) -> Result<Vec<[u8; 32]>, TreeError> {
        if old > self.size {
            return Err(TreeError(format!(
                "a tree of {old} entries is not a prefix of one of {}",
                self.size
            )));
        }
        let tiles = FetchTiles(&self.fetch);
        let reader = tlog_tiles::TileHashReader::new(self.size, Hash(self.root), &tiles);
        Ok(tlog_tiles::prove_tree(self.size, old, &reader)?
            .into_iter()
            .map(|h| h.0)
            .collect())
    }
}

/// Splits an entry bundle into its entries; `None` when the framing does
/// not hold.
pub fn split_bundle(bundle: &[u8]) -> Option<Vec<&[u8]>> {
    let mut out = Vec::new();
    let mut rest = bundle;
    while !rest.is_empty() {
        let (len, tail) = rest.split_first_chunk::<2>()?;
        let len = usize::from(u16::from_be_bytes(*len));
        if tail.len() < len {
            return None;
        }
        out.push(&tail[..len]);
        rest = &tail[len..];
    }
    Some(out)
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

// ------------------------------------------------------------ tlog-proof

/// The first line of a c2sp.org/tlog-proof@v1.
pub const TLOG_PROOF_HEADER: &str = "c2sp.org/tlog-proof@v1";
/// Most inclusion-proof lines a proof may carry: a tree of 2^63 entries
/// needs 63.
pub const MAX_PROOF_LINES: usize = 63;
/// Largest proof text read: the extra line of the longest entry (65,535
/// bytes, 87,380 in base64), 63 proof lines and a checkpoint with a few
/// dozen cosignatures, with room to spare.
pub const MAX_PROOF_BYTES: usize = 128 * 1024;

/// A c2sp.org/tlog-proof@v1: an offline-verifiable proof that an entry is
/// in the log, for a verifier holding the log's key (and witnesses' keys).
/// This log puts the entry's bytes in `extra`, so the leaf hash is
/// recomputed from the proof alone and the entry says what it records.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TlogProof {
    /// The opaque extra data (here: the entry's bytes). Not authenticated
    /// until the inclusion proof of its leaf hash holds.
    pub extra: Option<Vec<u8>>,
    pub index: u64,
    /// The inclusion proof, the leaf's sibling first.
    pub proof: Vec<[u8; 32]>,
    /// The checkpoint note, verbatim (with its cosignatures).
    pub checkpoint: Vec<u8>,
}

/// Why a tlog-proof was refused: one variant per fact a verifier reports.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ProofError {
    #[error("the proof is longer than {MAX_PROOF_BYTES} bytes")]
    TooLong,
    #[error("the proof is malformed: {0}")]
    Malformed(String),
    #[error("the proof has more than {MAX_PROOF_LINES} inclusion-proof lines")]
    TooManyProofLines,
    #[error("the proof's checkpoint does not verify: {0}")]
    Checkpoint(String),
    #[error("the checkpoint has {valid} valid witness cosignatures of the {required} required")]
    Witnesses { valid: usize, required: usize },
    #[error("entry {index} is past the checkpoint's tree of {size} entries")]
    PastTree { index: u64, size: u64 },
    #[error("the proof carries no entry (no extra line)")]
    NoEntry,
    #[error("entry {index} is not in the checkpoint's tree by this proof")]
    NotIncluded { index: u64 },
}

/// What a verified proof proves.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VerifiedProof {
    pub checkpoint: OpenedCheckpoint,
    /// The cosignatures by known witnesses that hold.
    pub cosignatures: Vec<Cosignature>,
    pub index: u64,
}

fn b64() -> base64::engine::GeneralPurpose {
    base64::engine::general_purpose::STANDARD
}

impl TlogProof {
    /// The proof's text.
    pub fn to_text(&self) -> Vec<u8> {
        use base64::Engine;
        let mut out = format!("{TLOG_PROOF_HEADER}\n").into_bytes();
        if let Some(extra) = &self.extra {
            out.extend_from_slice(format!("extra {}\n", b64().encode(extra)).as_bytes());
        }
        out.extend_from_slice(format!("index {}\n", self.index).as_bytes());
        for hash in &self.proof {
            out.extend_from_slice(b64().encode(hash).as_bytes());
            out.push(b'\n');
        }
        out.push(b'\n');
        out.extend_from_slice(&self.checkpoint);
        out
    }

    /// Reads a proof's text strictly: the header, an optional `extra`
    /// line, `index N` (no leading zeroes), at most 63 hashes, an empty
    /// line, then the checkpoint (whose signatures [`Self::verify`] checks).
    pub fn parse(text: &[u8]) -> Result<Self, ProofError> {
        use base64::Engine;
        if text.len() > MAX_PROOF_BYTES {
            return Err(ProofError::TooLong);
        }
        let bad = |why: &str| ProofError::Malformed(why.to_owned());
        let mut rest = text;
        let mut line = || -> Result<&[u8], ProofError> {
            let at = rest
                .iter()
                .position(|&b| b == b'\n')
                .ok_or_else(|| bad("a line does not end in a newline"))?;
            let (l, tail) = rest.split_at(at);
            rest = &tail[1..];
            Ok(l)
        };
        if line()? != TLOG_PROOF_HEADER.as_bytes() {
            return Err(bad("the first line is not c2sp.org/tlog-proof@v1"));
        }
        let mut next = line()?;
        let extra = match next.strip_prefix(b"extra ") {
            Some(data) => {
                let extra = b64()
                    .decode(data)
                    .map_err(|_| bad("the extra line is not base64"))?;
                next = line()?;
                Some(extra)
            }
            None => None,
        };
        let index = next
            .strip_prefix(b"index ")
            .and_then(|n| std::str::from_utf8(n).ok())
            .filter(|n| *n == "0" || (!n.starts_with('0') && !n.is_empty()))
            .filter(|n| n.bytes().all(|b| b.is_ascii_digit()))
            .and_then(|n| n.parse::<u64>().ok())
            .ok_or_else(|| bad("no `index N` line"))?;
        let mut proof = Vec::new();
        loop {
            let l = line()?;
            if l.is_empty() {
                break;
            }
            if proof.len() == MAX_PROOF_LINES {
                return Err(ProofError::TooManyProofLines);
            }
            let hash = b64()
                .decode(l)
                .ok()
                .and_then(|h| <[u8; 32]>::try_from(h).ok())
                .ok_or_else(|| bad("an inclusion-proof line is not a base64 SHA-256 hash"))?;
            proof.push(hash);
        }
        if rest.is_empty() {
            return Err(bad("no checkpoint after the empty line"));
        }
        Ok(Self {
            extra,
            index,
            proof,
            checkpoint: rest.to_vec(),
        })
    }

    /// Verifies the proof: the checkpoint signed by `log_key`, at least
    /// `required` valid cosignatures by `witnesses`, and the leaf of
    /// `entry` (the logged bytes: here, `extra`, which the caller then
    /// reads) included at `index` in the checkpoint's tree.
    pub fn verify(
        &self,
        log_key: &str,
        witnesses: &[WitnessKey],
        required: usize,
        entry: &[u8],
    ) -> Result<VerifiedProof, ProofError> {
        let (checkpoint, cosignatures) =
            open_witnessed_checkpoint(&self.checkpoint, log_key, witnesses)
                .map_err(|e| ProofError::Checkpoint(e.0))?;
        if cosignatures.len() < required {
            return Err(ProofError::Witnesses {
                valid: cosignatures.len(),
                required,
            });
        }
        if self.index >= checkpoint.size {
            return Err(ProofError::PastTree {
                index: self.index,
                size: checkpoint.size,
            });
        }
        check_inclusion(
            &self.proof,
            checkpoint.size,
            checkpoint.root,
            self.index,
            leaf_hash(entry),
        )
        .map_err(|_| ProofError::NotIncluded { index: self.index })?;
        Ok(VerifiedProof {
            checkpoint,
            cosignatures,
            index: self.index,
        })
    }

    /// [`Self::verify`] with the entry carried in `extra`: returns the
    /// entry's bytes, now proven to be the log's entry `index`.
    pub fn verify_extra(
        &self,
        log_key: &str,
        witnesses: &[WitnessKey],
        required: usize,
    ) -> Result<(VerifiedProof, &[u8]), ProofError> {
        let entry = self.extra.as_deref().ok_or(ProofError::NoEntry)?;
        let verified = self.verify(log_key, witnesses, required, entry)?;
        Ok((verified, entry))
    }
}

// ------------------------------------------------------------ tlog-witness

/// A c2sp.org/tlog-witness `add-checkpoint` request body: `old N`, the
/// consistency proof from `old` (none when `old` is 0), an empty line,
/// then the checkpoint note.
pub fn add_checkpoint_body(old: u64, proof: &[[u8; 32]], checkpoint: &[u8]) -> Vec<u8> {
    use base64::Engine;
    let mut out = format!("old {old}\n").into_bytes();
    for hash in proof {
        out.extend_from_slice(b64().encode(hash).as_bytes());
        out.push(b'\n');
    }
    out.push(b'\n');
    out.extend_from_slice(checkpoint);
    out
}

/// Reads a 409 `text/x.tlog.size` answer: a decimal and a newline.
pub fn parse_tlog_size(body: &[u8]) -> Option<u64> {
    let text = std::str::from_utf8(body).ok()?.strip_suffix('\n')?;
    (!text.is_empty()
        && text.bytes().all(|b| b.is_ascii_digit())
        && (text == "0" || !text.starts_with('0')))
    .then(|| text.parse().ok())
    .flatten()
}

/// The cosignatures in a witness's 200 `add-checkpoint` answer (note
/// signature lines) that are valid by `witness` over `signed` (the
/// checkpoint note sent): the lines by other keys are ignored; a line by
/// this key that does not verify is an error.
pub fn witness_cosignatures(
    signed: &[u8],
    log_key: &str,
    witness: &WitnessKey,
    answer: &[u8],
) -> Result<Vec<Cosignature>, TreeError> {
    let answer = std::str::from_utf8(answer)
        .map_err(|_| TreeError("the witness's answer is not UTF-8".to_owned()))?;
    if answer.is_empty() || !answer.ends_with('\n') || answer.lines().any(|l| !l.starts_with("— "))
    {
        return Err(TreeError(
            "the witness's answer is not note signature lines".to_owned(),
        ));
    }
    let mut note = signed.to_vec();
    note.extend_from_slice(answer.as_bytes());
    let (_, cosignatures) =
        open_witnessed_checkpoint(&note, log_key, std::slice::from_ref(witness))?;
    if cosignatures.is_empty() {
        return Err(TreeError(format!(
            "the witness's answer carries no cosignature by {}",
            witness.name()
        )));
    }
    Ok(cosignatures)
}
