//! Deterministic tar + gzip: the same members always give the same bytes.
//!
//! Tar: POSIX ustar headers, `manifest.json` and `signature.sig` first, then
//! the other entries in path order, regular files only,
//! mode 0644, uid/gid 0, mtime 0, no user or group names. A path longer than
//! ustar's name/prefix split allows gets a PAX `path` record (POSIX.1-2001),
//! never a GNU extension. Gzip: no file name, mtime 0, OS byte 255
//! ("unknown"), level 9. The compressor is flate2's default backend
//! (miniz_oxide); a golden-hash test notices if its output ever changes.

use std::{collections::BTreeMap, io::Write};

use flate2::{Compression, GzBuilder};

use super::manifest::{MANIFEST_PATH, SIGNATURE_PATH};
use crate::MemberPath;

const GZIP_LEVEL: u32 = 9;
const GZIP_OS_UNKNOWN: u8 = 255;
const FILE_MODE: u32 = 0o644;

/// The members written first: a reader checks the manifest (and whoever
/// signed it) before the payload arrives, and the registry gives an upload
/// its verification slot only then.
const FIRST: [&str; 2] = [MANIFEST_PATH, SIGNATURE_PATH];

/// Packs `members`: [`FIRST`], then the rest in path order (being a
/// `BTreeMap`).
pub(crate) fn pack(members: &BTreeMap<MemberPath, Vec<u8>>) -> std::io::Result<Vec<u8>> {
    let gzip = GzBuilder::new()
        .mtime(0)
        .operating_system(GZIP_OS_UNKNOWN)
        .write(Vec::new(), Compression::new(GZIP_LEVEL));
    let mut tar = tar::Builder::new(gzip);
    let first = FIRST
        .iter()
        .filter_map(|name| members.iter().find(|(path, _)| path.as_str() == *name));
    let rest = members
        .iter()
        .filter(|(path, _)| !FIRST.contains(&path.as_str()));
    for (path, bytes) in first.chain(rest) {
        let mut header = tar::Header::new_ustar();
        header.set_entry_type(tar::EntryType::Regular);
        header.set_mode(FILE_MODE);
        header.set_uid(0);
        header.set_gid(0);
        header.set_mtime(0);
        header.set_size(bytes.len() as u64);
        if header.set_path(path.as_str()).is_err() {
            tar.append_pax_extensions([("path", path.as_str().as_bytes())])?;
            set_truncated_name(&mut header, path.as_str());
        }
        header.set_cksum();
        tar.append(&header, bytes.as_slice())?;
    }
    let mut gzip = tar.into_inner()?;
    gzip.flush()?;
    gzip.finish()
}

/// The ustar name field of an entry whose real path is in a PAX record: the
/// path's first 100 bytes, cut at a character boundary, for tools that
/// ignore PAX.
fn set_truncated_name(header: &mut tar::Header, path: &str) {
    let mut end = path.len().min(100);
    while !path.is_char_boundary(end) {
        end -= 1;
    }
    if let Some(ustar) = header.as_ustar_mut() {
        ustar.name = [0; 100];
        ustar.name[..end].copy_from_slice(&path.as_bytes()[..end]);
    }
}
