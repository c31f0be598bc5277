//! Reading container files from disk, and writing them atomically.

use std::{
    fs,
    io::{BufReader, Write},
    path::{Path, PathBuf},
};

use agentlang_core::container::{self, Container, Limits};
use anyhow::{Context, Result};

/// Reads and checks a container file (structure, sizes, hashes; not the
/// signature, which needs the signer's key).
pub fn read(path: &Path) -> Result<Container> {
    let file = fs::File::open(path).with_context(|| format!("opening {}", path.display()))?;
    container::read(BufReader::new(file), &Limits::default())
        .with_context(|| format!("{} is not a valid container", path.display()))
}

/// `NAME@VERSION.KIND` in the current folder.
pub fn default_file_name(c: &agentlang_core::container::Manifest) -> PathBuf {
    PathBuf::from(format!(
        "{}@{}.{}",
        c.name(),
        c.version(),
        c.kind().extension()
    ))
}

/// Writes `bytes` to `path` through a temporary file in the same folder,
/// renamed into place: readers see the old file or the new one, never half.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    let mut tmp = temp_beside(path)?;
    tmp.write_all(bytes)
        .and_then(|()| tmp.as_file().sync_all())
        .with_context(|| format!("writing {}", path.display()))?;
    persist(tmp, path)
}

/// A temporary file in `path`'s folder (so the final rename stays on one
/// file system); removed on drop unless persisted.
pub fn temp_beside(path: &Path) -> Result<tempfile::NamedTempFile> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    tempfile::Builder::new()
        .prefix(".agentlang-")
        .suffix(".part")
        .tempfile_in(dir)
        .with_context(|| format!("creating a temporary file in {}", dir.display()))
}

pub fn persist(tmp: tempfile::NamedTempFile, path: &Path) -> Result<()> {
    tmp.persist(path)
        .map(drop)
        .map_err(|e| e.error)
        .with_context(|| format!("writing {}", path.display()))
}
