//! Streaming, bounded reading and checking of untrusted container bytes.
//!
//! The bytes pass through, in order: a counter that hashes and sizes the
//! compressed container, the gzip decoder, a counter that enforces the
//! decompressed size and ratio limits, and a raw tar reader. Raw mode means
//! PAX headers reach us as entries, so their size is bounded and their
//! `path` and `size` records are checked here rather than trusted silently.
//! Limit breaches are recorded in a shared cell as they happen, because the
//! tar and gzip layers wrap or replace the I/O errors they pass up.

use std::{
    cell::{Cell, RefCell},
    collections::BTreeMap,
    convert::Infallible,
    io::{self, BufRead, BufReader, Cursor, Read},
    rc::Rc,
};

use sha2::{Digest, Sha256};
use zeroize::Zeroizing;

use super::{
    CaseIndex, ContainerError, Limits, check_definition, is_kept_member,
    manifest::{MANIFEST_PATH, Manifest, SIGNATURE_PATH},
};
use crate::{
    MemberPath,
    crypt::{self, Aad, CryptError, PromptKey},
    digest::Sha256Digest,
    signing::{PublicKey, SIGNATURE_LEN},
    tree::PathError,
};

const BLOCK: u64 = 512;
/// PAX headers we write hold one path record; anything near this is hostile.
const MAX_PAX_HEADER_BYTES: u64 = 64 * 1024;
const GZIP_MAGIC: [u8; 2] = [0x1f, 0x8b];

/// A container that passed every check except the signature (see
/// [`Container::verify_signature`]).
#[derive(Debug, Clone)]
pub struct Container {
    manifest: Manifest,
    manifest_bytes: Vec<u8>,
    signature: [u8; SIGNATURE_LEN],
    kept: BTreeMap<MemberPath, Vec<u8>>,
    sha256: Sha256Digest,
    size: u64,
}

impl Container {
    pub fn manifest(&self) -> &Manifest {
        &self.manifest
    }

    /// The exact bytes of `manifest.json`, which the signature covers.
    pub fn manifest_bytes(&self) -> &[u8] {
        &self.manifest_bytes
    }

    pub fn signature(&self) -> &[u8; SIGNATURE_LEN] {
        &self.signature
    }

    /// A kept member's bytes (see [`super::is_kept_member`]); `None` for a
    /// member that is absent or was only hashed.
    pub fn member(&self, path: &str) -> Option<&[u8]> {
        self.kept.get(path).map(Vec::as_slice)
    }

    /// Every kept member (manifest.json and signature.sig included), sorted.
    pub fn kept_members(&self) -> impl Iterator<Item = (&MemberPath, &[u8])> {
        self.kept.iter().map(|(p, b)| (p, b.as_slice()))
    }

    /// SHA-256 of the whole compressed container: its content address.
    pub fn sha256(&self) -> Sha256Digest {
        self.sha256
    }

    /// Length in bytes of the whole compressed container.
    pub fn size(&self) -> u64 {
        self.size
    }

    /// Decrypts a kept encrypted member (such as `prompt.yaml.enc`) with the
    /// publisher's prompt key; the associated data comes from the manifest,
    /// so an envelope moved from another package does not open.
    pub fn open_encrypted(
        &self,
        path: &str,
        key: &PromptKey,
    ) -> Result<Zeroizing<Vec<u8>>, ContainerError> {
        let entry = self
            .manifest
            .file(path)
            .filter(|f| f.encrypted)
            .ok_or_else(|| ContainerError::NotEncrypted(path.to_owned()))?;
        let envelope = self
            .member(path)
            .ok_or_else(|| ContainerError::NotEncrypted(path.to_owned()))?;
        let plain_path = entry
            .path
            .as_str()
            .strip_suffix(crypt::ENCRYPTED_SUFFIX)
            .and_then(|p| MemberPath::new(p).ok())
            .ok_or_else(|| ContainerError::NotEncrypted(path.to_owned()))?;
        let m = &self.manifest;
        let aad = Aad::new(m.kind(), m.name(), m.version(), &plain_path);
        crypt::open(key, &aad, envelope).map_err(|source| ContainerError::Decrypt {
            path: path.to_owned(),
            source,
        })
    }

    /// Checks that `key` is the manifest's signer and that `signature.sig`
    /// verifies over the exact manifest bytes.
    pub fn verify_signature(&self, key: &PublicKey) -> Result<(), ContainerError> {
        let key_id = key.key_id();
        if &key_id != self.manifest.signer() {
            return Err(ContainerError::SignerMismatch {
                manifest: self.manifest.signer().clone(),
                key: key_id,
            });
        }
        key.verify(&self.manifest_bytes, &self.signature)
            .map_err(ContainerError::Signature)
    }
}

/// Reads and checks a container from `reader`, never writing to disk and
/// never holding more than the kept members in memory. Every refusal has
/// its own [`ContainerError`] variant.
pub fn read<R: Read>(reader: R, limits: &Limits) -> Result<Container, ContainerError> {
    read_checked(reader, limits, |_| Ok::<(), Infallible>(())).map_err(|e| match e {
        ReadError::Container(e) => e,
        ReadError::Refused(never) => match never {},
    })
}

/// Hands every member of a container that [`read`] accepted to `each`,
/// with a reader of its bytes (`manifest.json` and `signature.sig` left
/// out), checking each against `manifest` as it goes: listed, once, of its
/// listed size, and (after `each` returns; what it left unread is read
/// here) of its listed SHA-256; and at the end, that every listed member
/// came. For unpacking a verified container: the caller writes, and throws
/// away what it wrote when this fails. Bytes read are bounded by the
/// manifest's sizes.
pub fn unpack<R: Read>(
    reader: R,
    manifest: &Manifest,
    mut each: impl FnMut(&MemberPath, &mut dyn Read) -> io::Result<()>,
) -> Result<(), ContainerError> {
    struct Hashing<'a, R> {
        inner: R,
        hasher: &'a mut Sha256,
    }
    impl<R: Read> Read for Hashing<'_, R> {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            let n = self.inner.read(buf)?;
            self.hasher.update(&buf[..n]);
            Ok(n)
        }
    }
    let io = |e: io::Error| ContainerError::Io(e.to_string());
    let mut archive = tar::Archive::new(flate2::read::GzDecoder::new(reader));
    let mut seen = std::collections::BTreeSet::new();
    for entry in archive.entries().map_err(io)? {
        let mut entry = entry.map_err(io)?;
        let raw = entry.path().map_err(io)?.to_string_lossy().into_owned();
        if raw == MANIFEST_PATH || raw == SIGNATURE_PATH {
            continue;
        }
        let path = member_path(raw)?;
        let Some(listed) = manifest.file(path.as_str()) else {
            return Err(ContainerError::UnlistedMember(path.to_string()));
        };
        if !seen.insert(path.clone()) {
            return Err(ContainerError::DuplicateMember(path.to_string()));
        }
        let entry_type = entry.header().entry_type();
        if entry_type != tar::EntryType::Regular {
            return Err(ContainerError::NotRegularFile {
                path: path.to_string(),
                entry_type: describe(entry_type),
            });
        }
        if entry.size() != listed.size {
            return Err(ContainerError::SizeMismatch {
                path: path.to_string(),
                listed: listed.size,
                actual: entry.size(),
            });
        }
        let mut hasher = Sha256::new();
        let mut hashing = Hashing {
            inner: (&mut entry).take(listed.size),
            hasher: &mut hasher,
        };
        each(&path, &mut hashing).map_err(io)?;
        io::copy(&mut hashing, &mut io::sink()).map_err(io)?;
        if Sha256Digest::from_bytes(hasher.finalize().into()) != listed.sha256 {
            return Err(ContainerError::HashMismatch(path.to_string()));
        }
    }
    if let Some(missing) = manifest.files().iter().find(|f| !seen.contains(&f.path)) {
        return Err(ContainerError::MissingMember(missing.path.to_string()));
    }
    Ok(())
}

/// Why [`read_checked`] stopped: the container, or the caller's check of
/// its manifest.
#[derive(Debug)]
pub enum ReadError<E> {
    Container(ContainerError),
    Refused(E),
}

/// [`read`], calling `on_manifest` as soon as `manifest.json` has been read
/// and parsed, before the members that follow it: a caller that can refuse
/// on the manifest alone (the signer, the package name) stops reading there.
pub fn read_checked<R: Read, E>(
    reader: R,
    limits: &Limits,
    on_manifest: impl FnOnce(&Manifest) -> Result<(), E>,
) -> Result<Container, ReadError<E>> {
    let mut check = Some(on_manifest);
    let mut refused = None;
    let read = read_inner(reader, limits, &mut |manifest| match check
        .take()
        .map(|check| check(manifest))
    {
        Some(Err(e)) => {
            refused = Some(e);
            false
        }
        _ => true,
    });
    match (read, refused) {
        (_, Some(e)) => Err(ReadError::Refused(e)),
        (Ok(container), None) => Ok(container),
        (Err(e), None) => Err(ReadError::Container(e)),
    }
}

/// `on_manifest` answers whether to read on; when it says no, the error
/// returned is a placeholder the caller replaces with its own refusal.
fn read_inner<R: Read>(
    reader: R,
    limits: &Limits,
    on_manifest: &mut dyn FnMut(&Manifest) -> bool,
) -> Result<Container, ContainerError> {
    let state = Rc::new(State::default());
    let mut compressed = Compressed {
        inner: reader,
        hasher: Sha256::new(),
        state: Rc::clone(&state),
        limit: limits.max_compressed_bytes,
    };

    let mut magic = [0u8; 2];
    read_fully(&mut compressed, &mut magic, &state)?;
    if magic != GZIP_MAGIC {
        return Err(ContainerError::NotGzip);
    }
    let gzip =
        flate2::bufread::GzDecoder::new(BufReader::new(Cursor::new(magic).chain(compressed)));
    let tar_stream = Decompressed {
        inner: gzip,
        state: Rc::clone(&state),
        limits: *limits,
    };

    let mut archive = tar::Archive::new(tar_stream);
    let members = read_members(&mut archive, limits, &state, on_manifest)?;

    // What follows the last member: the end-of-archive marker (two zero
    // blocks, tar-rs has read the first if it was there), optionally more
    // zero padding, then the end of the gzip stream.
    let mut tar_stream = archive.into_inner();
    let mut rest = Vec::new();
    let mut zeros_after_end = state.decompressed.get().saturating_sub(members.end_of_last);
    loop {
        rest.clear();
        let n = (&mut tar_stream)
            .take(64 * 1024)
            .read_to_end(&mut rest)
            .map_err(|e| state.classify(&e))?;
        if n == 0 {
            break;
        }
        if rest.iter().any(|&b| b != 0) {
            return Err(ContainerError::DataAfterTarEnd);
        }
        zeros_after_end += n as u64;
    }
    if zeros_after_end < 2 * BLOCK {
        return Err(ContainerError::TruncatedTar);
    }

    let mut after_gzip = tar_stream.inner.into_inner();
    if !after_gzip
        .fill_buf()
        .map_err(|e| state.classify(&e))?
        .is_empty()
    {
        return Err(ContainerError::TrailingGarbage);
    }
    let (_, compressed) = after_gzip.into_inner().into_inner();
    let size = state.compressed.get();
    let sha256 = Sha256Digest::from_bytes(compressed.hasher.finalize().into());

    check_against_manifest(members.seen, members.kept, members.manifest, sha256, size)
}

/// What the tar pass learned about one member.
struct Seen {
    size: u64,
    sha256: Sha256Digest,
    /// The first bytes, enough to check an encrypted member's magic.
    head: Vec<u8>,
}

struct Members {
    seen: BTreeMap<MemberPath, Seen>,
    kept: BTreeMap<MemberPath, Vec<u8>>,
    /// Bytes of every kept member so far, against
    /// [`Limits::max_kept_total_bytes`].
    kept_bytes: u64,
    /// Parsed as soon as it has been read.
    manifest: Option<Manifest>,
    /// Offset in the tar stream just past the last entry's padded data.
    end_of_last: u64,
}

/// A PAX header's records that matter to the entry it describes.
#[derive(Default)]
struct Pax {
    path: Option<Vec<u8>>,
    size: Option<u64>,
}

fn read_members<R: Read>(
    archive: &mut tar::Archive<R>,
    limits: &Limits,
    state: &State,
    on_manifest: &mut dyn FnMut(&Manifest) -> bool,
) -> Result<Members, ContainerError> {
    let mut members = Members {
        seen: BTreeMap::new(),
        kept: BTreeMap::new(),
        kept_bytes: 0,
        manifest: None,
        end_of_last: 0,
    };
    let mut case_index = CaseIndex::default();
    let mut pending_pax: Option<Pax> = None;
    let mut headers = 0usize;
    let mut buffer = vec![0u8; 64 * 1024];

    let entries = archive.entries().map_err(|e| state.classify(&e))?.raw(true);
    for entry in entries {
        let mut entry = entry.map_err(|e| state.classify(&e))?;
        headers += 1;
        if headers > limits.max_entries {
            return Err(ContainerError::TooManyEntries {
                limit: limits.max_entries,
            });
        }
        let header_size = entry.size();
        members.end_of_last = entry.raw_file_position() + header_size.div_ceil(BLOCK) * BLOCK;
        let entry_type = entry.header().entry_type();

        if entry_type.is_pax_local_extensions() {
            if pending_pax.is_some() {
                return Err(ContainerError::PaxHeader(
                    "two PAX headers describe one member".into(),
                ));
            }
            if header_size > MAX_PAX_HEADER_BYTES {
                return Err(ContainerError::PaxHeader(format!(
                    "{header_size} bytes; at most {MAX_PAX_HEADER_BYTES} are allowed"
                )));
            }
            let mut data = Vec::new();
            entry
                .read_to_end(&mut data)
                .map_err(|e| state.classify(&e))?;
            if data.len() as u64 != header_size {
                return Err(ContainerError::TruncatedTar);
            }
            pending_pax = Some(parse_pax(&data)?);
            continue;
        }
        if entry_type.is_pax_global_extensions() {
            return Err(ContainerError::PaxHeader(
                "global PAX headers are not allowed".into(),
            ));
        }

        let pax = pending_pax.take().unwrap_or_default();
        let raw_path = pax.path.unwrap_or_else(|| entry.path_bytes().into_owned());
        let path = String::from_utf8(raw_path).map_err(|e| {
            ContainerError::NonUtf8Path(String::from_utf8_lossy(e.as_bytes()).into())
        })?;

        match entry_type {
            tar::EntryType::Regular => {}
            tar::EntryType::Symlink => return Err(ContainerError::Symlink(path)),
            tar::EntryType::Link => return Err(ContainerError::Hardlink(path)),
            other => {
                return Err(ContainerError::NotRegularFile {
                    path,
                    entry_type: describe(other),
                });
            }
        }
        let path = member_path(path)?;
        if let Some(pax_size) = pax.size.filter(|s| *s != header_size) {
            return Err(ContainerError::PaxSizeMismatch {
                path: path.to_string(),
                header: header_size,
                pax: pax_size,
            });
        }
        case_index.insert(path.as_str())?;

        let keep = is_kept_member(&path);
        if keep && header_size > limits.max_kept_member_bytes {
            return Err(ContainerError::KeptMemberTooLarge {
                path: path.to_string(),
                size: header_size,
                limit: limits.max_kept_member_bytes,
            });
        }
        if keep {
            // Refused on the declared size, before any of it is read.
            members.kept_bytes += header_size;
            if members.kept_bytes > limits.max_kept_total_bytes {
                return Err(ContainerError::KeptMembersTooLarge {
                    limit: limits.max_kept_total_bytes,
                });
            }
        }
        let mut kept = Vec::new();
        let mut head = Vec::new();
        let mut hasher = Sha256::new();
        let mut read = 0u64;
        loop {
            let n = entry.read(&mut buffer).map_err(|e| state.classify(&e))?;
            if n == 0 {
                break;
            }
            let chunk = &buffer[..n];
            hasher.update(chunk);
            read += n as u64;
            if head.len() < crypt::MAGIC.len() {
                let want = (crypt::MAGIC.len() - head.len()).min(n);
                head.extend_from_slice(&chunk[..want]);
            }
            if keep {
                kept.extend_from_slice(chunk);
            }
        }
        if read != header_size {
            return Err(ContainerError::TruncatedTar);
        }
        if path.as_str() == MANIFEST_PATH {
            let manifest = Manifest::parse(&kept)?;
            if !on_manifest(&manifest) {
                return Err(ContainerError::Io("refused on its manifest".into()));
            }
            members.manifest = Some(manifest);
        }
        if keep {
            members.kept.insert(path.clone(), kept);
        }
        members.seen.insert(
            path,
            Seen {
                size: read,
                sha256: Sha256Digest::from_bytes(hasher.finalize().into()),
                head,
            },
        );
    }
    if pending_pax.is_some() {
        return Err(ContainerError::PaxHeader(
            "a PAX header at the end describes no member".into(),
        ));
    }
    // tar-rs ends the iteration at the first zero block, or at a clean end
    // of stream where the marker is missing; the caller tells them apart.
    Ok(members)
}

fn parse_pax(data: &[u8]) -> Result<Pax, ContainerError> {
    let mut pax = Pax::default();
    for record in tar::PaxExtensions::new(data) {
        let record =
            record.map_err(|_| ContainerError::PaxHeader("a record is malformed".into()))?;
        match record.key_bytes() {
            b"path" => pax.path = Some(record.value_bytes().to_vec()),
            b"size" => {
                let size = record
                    .value()
                    .ok()
                    .and_then(|v| v.parse::<u64>().ok())
                    .ok_or_else(|| ContainerError::PaxHeader("size is not a number".into()))?;
                pax.size = Some(size);
            }
            b"linkpath" => {
                return Err(ContainerError::PaxHeader(
                    "linkpath records describe links, which are not allowed".into(),
                ));
            }
            // mtime, uid, comments and the like do not change what a
            // member holds.
            _ => {}
        }
    }
    Ok(pax)
}

fn member_path(path: String) -> Result<MemberPath, ContainerError> {
    MemberPath::new(path.clone()).map_err(|source| match source {
        PathError::Absolute(p) => ContainerError::AbsolutePath(p),
        PathError::ParentDir(p) => ContainerError::ParentDirPath(p),
        source => ContainerError::InvalidPath { path, source },
    })
}

fn describe(entry_type: tar::EntryType) -> String {
    match entry_type {
        tar::EntryType::Directory => "directory".into(),
        tar::EntryType::Char => "character device".into(),
        tar::EntryType::Block => "block device".into(),
        tar::EntryType::Fifo => "FIFO".into(),
        tar::EntryType::Continuous => "contiguous file".into(),
        tar::EntryType::GNULongName | tar::EntryType::GNULongLink => {
            "GNU long-name header (PAX is used instead)".into()
        }
        tar::EntryType::GNUSparse => "GNU sparse file".into(),
        other => format!("tar entry of type {:?}", other.as_byte() as char),
    }
}

fn check_against_manifest(
    mut seen: BTreeMap<MemberPath, Seen>,
    mut kept: BTreeMap<MemberPath, Vec<u8>>,
    manifest: Option<Manifest>,
    sha256: Sha256Digest,
    size: u64,
) -> Result<Container, ContainerError> {
    let manifest_bytes = kept
        .remove(MANIFEST_PATH)
        .ok_or(ContainerError::MissingManifest)?;
    seen.remove(MANIFEST_PATH);
    let signature_bytes = kept
        .get(SIGNATURE_PATH)
        .ok_or(ContainerError::MissingSignature)?;
    let signature: [u8; SIGNATURE_LEN] = signature_bytes
        .as_slice()
        .try_into()
        .map_err(|_| ContainerError::SignatureLength(signature_bytes.len() as u64))?;
    kept.remove(SIGNATURE_PATH);
    seen.remove(SIGNATURE_PATH);

    // Parsed when it was read; present whenever its bytes are.
    let manifest = manifest.ok_or(ContainerError::MissingManifest)?;

    for (path, member) in &seen {
        let listed = manifest
            .file(path.as_str())
            .ok_or_else(|| ContainerError::UnlistedMember(path.to_string()))?;
        if listed.size != member.size {
            return Err(ContainerError::SizeMismatch {
                path: path.to_string(),
                listed: listed.size,
                actual: member.size,
            });
        }
        if listed.sha256 != member.sha256 {
            return Err(ContainerError::HashMismatch(path.to_string()));
        }
        if listed.encrypted {
            check_envelope_head(&member.head, member.size).map_err(|source| {
                ContainerError::BadEnvelope {
                    path: path.to_string(),
                    source,
                }
            })?;
        }
    }
    if let Some(missing) = manifest
        .files()
        .iter()
        .find(|f| !seen.contains_key(f.path.as_str()))
    {
        return Err(ContainerError::MissingMember(missing.path.to_string()));
    }

    check_definition(manifest.kind(), manifest.name(), manifest.version(), |p| {
        kept.get(p).map(Vec::as_slice)
    })?;

    // The metadata members stay reachable through `member`, like the rest.
    let mut kept = kept;
    kept.insert(
        MemberPath::new(MANIFEST_PATH).expect("valid member path"),
        manifest_bytes.clone(),
    );
    kept.insert(
        MemberPath::new(SIGNATURE_PATH).expect("valid member path"),
        signature.to_vec(),
    );
    Ok(Container {
        manifest,
        manifest_bytes,
        signature,
        kept,
        sha256,
        size,
    })
}

/// The envelope shape check on the first bytes and the length alone, since
/// the member itself was streamed, not kept.
fn check_envelope_head(head: &[u8], size: u64) -> Result<(), CryptError> {
    if head != crypt::MAGIC {
        return Err(CryptError::BadMagic);
    }
    if size < crypt::MIN_ENVELOPE_LEN as u64 {
        return Err(CryptError::TooShort(
            usize::try_from(size).unwrap_or(usize::MAX),
        ));
    }
    Ok(())
}

/// Counters and the first failure seen below the tar layer.
#[derive(Default)]
struct State {
    compressed: Cell<u64>,
    decompressed: Cell<u64>,
    /// The gzip stream ended: a tar error after this is a truncated tar.
    gzip_ended: Cell<bool>,
    failure: RefCell<Option<ContainerError>>,
}

impl State {
    fn fail(&self, error: ContainerError) -> io::Error {
        let message = error.to_string();
        self.failure.borrow_mut().get_or_insert(error);
        io::Error::other(message)
    }

    /// Turns an I/O error from any layer into the refusal it stands for: a
    /// failure recorded below the tar reader wins; otherwise the tar reader
    /// itself found the archive malformed.
    fn classify(&self, error: &io::Error) -> ContainerError {
        if let Some(failure) = self.failure.borrow_mut().take() {
            return failure;
        }
        if self.gzip_ended.get() {
            return ContainerError::TruncatedTar;
        }
        ContainerError::Tar(error.to_string())
    }
}

/// Hashes and counts the compressed bytes as they are read.
struct Compressed<R> {
    inner: R,
    hasher: Sha256,
    state: Rc<State>,
    limit: u64,
}

impl<R: Read> Read for Compressed<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = match self.inner.read(buf) {
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => return Err(e),
            Err(e) => return Err(self.state.fail(ContainerError::Io(e.to_string()))),
        };
        self.hasher.update(&buf[..n]);
        let total = self.state.compressed.get() + n as u64;
        self.state.compressed.set(total);
        if total > self.limit {
            return Err(self
                .state
                .fail(ContainerError::CompressedTooLarge { limit: self.limit }));
        }
        Ok(n)
    }
}

/// Counts the decompressed bytes and stops a gzip bomb: the total and the
/// ratio to the compressed bytes read so far are checked on every read, so
/// the refusal comes after at most one buffer beyond a limit.
struct Decompressed<R> {
    inner: R,
    state: Rc<State>,
    limits: Limits,
}

impl<R: Read> Read for Decompressed<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = match self.inner.read(buf) {
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => return Err(e),
            // A failure below (input error, compressed limit) is already
            // recorded and wins.
            Err(e) if self.state.failure.borrow().is_some() => return Err(e),
            Err(e) => {
                let error = if e.kind() == io::ErrorKind::UnexpectedEof {
                    ContainerError::TruncatedGzip
                } else {
                    ContainerError::Gzip(e.to_string())
                };
                return Err(self.state.fail(error));
            }
        };
        if n == 0 && !buf.is_empty() {
            self.state.gzip_ended.set(true);
        }
        let total = self.state.decompressed.get() + n as u64;
        self.state.decompressed.set(total);
        let limits = &self.limits;
        if total > limits.max_uncompressed_bytes {
            return Err(self.state.fail(ContainerError::UncompressedTooLarge {
                limit: limits.max_uncompressed_bytes,
            }));
        }
        let compressed = self.state.compressed.get().max(1);
        if total > limits.ratio_grace_bytes && total / compressed > limits.max_ratio {
            return Err(self.state.fail(ContainerError::RatioTooHigh {
                limit: limits.max_ratio,
            }));
        }
        Ok(n)
    }
}

/// Fills `buf`, or reports a container too short to be gzip.
fn read_fully<R: Read>(
    reader: &mut R,
    buf: &mut [u8],
    state: &State,
) -> Result<(), ContainerError> {
    let mut filled = 0;
    while filled < buf.len() {
        match reader.read(&mut buf[filled..]) {
            Ok(0) => return Err(ContainerError::NotGzip),
            Ok(n) => filled += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(state.classify(&e)),
        }
    }
    Ok(())
}
