//! A container downloaded within the size its version record announces,
//! hashed as it arrives, into a temporary file that is kept only once the
//! caller has checked it: what `pull`, `install` and pinned tools share.

use std::{
    fs,
    io::{self, Write},
    path::Path,
};

use agentlang_core::{Kind, PackageName, Version, container::Limits, digest::Sha256Digest};
use anyhow::{Context, Result, bail};
use sha2::{Digest, Sha256};
use tempfile::NamedTempFile;

use crate::{client::Client, output::Output, progress};

/// A download, complete and of the announced size, not yet checked
/// against anything: dropping it removes the file.
#[derive(Debug)]
pub struct Downloaded {
    pub file: NamedTempFile,
    pub sha256: Sha256Digest,
    pub size: u64,
}

/// The most bytes a container may have whatever its record announces: the
/// most the container reader accepts.
pub fn max_container_bytes() -> u64 {
    Limits::default().max_compressed_bytes
}

/// Downloads `kind name@version`, which its record says is `announced`
/// bytes, into a temporary file in `dir`. More bytes than announced stop
/// the download; fewer are an error too.
pub fn download(
    client: &Client,
    out: &Output,
    what: (Kind, &PackageName, &Version),
    announced: u64,
    dir: &Path,
) -> Result<Downloaded> {
    let (kind, name, version) = what;
    let label = format!("{kind} {name}@{version}");
    let max = max_container_bytes();
    if announced > max {
        bail!(
            "the registry's record of {label} announces {announced} bytes, more than the {max} a container may have"
        );
    }
    fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let mut file = tempfile::Builder::new()
        .prefix(".agentlang-")
        .suffix(".part")
        .tempfile_in(dir)
        .with_context(|| format!("creating a temporary file in {}", dir.display()))?;
    let context = || format!("downloading {label}, which its record says is {announced} bytes");
    let body = client
        .send(client.get(&format!(
            "/api/v1/{}/{name}/{version}/download",
            kind.plural()
        )))
        .and_then(|resp| {
            resp.limited(
                label.clone(),
                announced,
                client.timeouts().transfer(announced),
            )
        })
        .with_context(context)?;
    let bar = progress::bytes_bar(
        out,
        Some(announced),
        &format!("downloading {name}@{version}"),
    );
    let mut hashing = HashingWriter {
        inner: file.as_file_mut(),
        hasher: Sha256::new(),
        written: 0,
    };
    let copied = io::copy(&mut bar.wrap_read(body), &mut hashing);
    bar.finish_and_clear();
    copied.with_context(context)?;
    let size = hashing.written;
    let sha256 = Sha256Digest::from_bytes(hashing.hasher.finalize().into());
    if size != announced {
        bail!(
            "the download of {label} ended after {size} of the {announced} bytes its record announces; nothing was written"
        );
    }
    file.as_file_mut()
        .flush()
        .and_then(|()| file.as_file().sync_all())
        .with_context(|| format!("writing {}", file.path().display()))?;
    Ok(Downloaded { file, sha256, size })
}

struct HashingWriter<W> {
    inner: W,
    hasher: Sha256,
    written: u64,
}

impl<W: Write> Write for HashingWriter<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.hasher.update(&buf[..n]);
        self.written += n as u64;
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}
