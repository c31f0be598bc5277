//! A container downloaded within the size its version record announces,
//! hashed as it arrives, into a temporary file that is kept only once the
//! caller has checked it: what `pull`, `install` and pinned tools share.

use std::{
    fs,
    io::{self, Seek, Write},
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
///
/// A download cut short keeps what arrived in `dir` (named after the
/// version, so only the same download picks it up) and the next one asks
/// for the rest with `Range`: a version's bytes never change, and the
/// whole is hashed and checked by the caller as always.
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
    let partial = dir.join(format!(
        ".agentlang-{}-{name}@{version}.partial",
        kind.as_str()
    ));
    let mut hashing = HashingWriter {
        inner: file.as_file_mut(),
        hasher: Sha256::new(),
        written: 0,
    };
    // What an earlier, cut download left: taken over, so a failure now
    // keeps it in the same place again.
    if let Ok(mut earlier) = fs::File::open(&partial) {
        let kept = earlier.metadata().map(|m| m.len()).unwrap_or(0);
        if kept > 0 && kept < announced {
            io::copy(&mut earlier, &mut hashing)
                .with_context(|| format!("reading {}", partial.display()))?;
        }
        let _ = fs::remove_file(&partial);
    }
    let context = || format!("downloading {label}, which its record says is {announced} bytes");
    let purpose = if client.is_inspecting() {
        "?purpose=inspect"
    } else {
        ""
    };
    let mut request = client.get(&format!(
        "/api/v1/{}/{name}/{version}/download{purpose}",
        kind.plural()
    ));
    if hashing.written > 0 {
        request = request.header(
            reqwest::header::RANGE,
            format!("bytes={}-", hashing.written),
        );
    }
    let answer = client.send(request).with_context(context)?;
    if answer.status() != reqwest::StatusCode::PARTIAL_CONTENT && hashing.written > 0 {
        // The registry sent the whole: start again from its first byte.
        hashing
            .inner
            .set_len(0)
            .and_then(|()| hashing.inner.rewind())?;
        hashing.hasher = Sha256::new();
        hashing.written = 0;
    }
    let resumed_at = hashing.written;
    let body = answer
        .limited(
            label.clone(),
            announced - resumed_at,
            client.timeouts().transfer(announced - resumed_at),
        )
        .with_context(context)?;
    let bar = progress::bytes_bar(
        out,
        Some(announced),
        &format!("downloading {name}@{version}"),
    );
    bar.set_position(resumed_at);
    let copied = io::copy(&mut bar.wrap_read(body), &mut hashing);
    bar.finish_and_clear();
    let size = hashing.written;
    let sha256 = Sha256Digest::from_bytes(hashing.hasher.clone().finalize().into());
    let cut = match copied {
        // More than announced is not a cut: those bytes are not kept.
        Err(e) if size >= announced => return Err(e).with_context(context),
        Err(e) => Some(crate::client::one_line(&format!(
            "{:#}",
            anyhow::Error::new(e)
        ))),
        Ok(_) if size < announced => Some("the connection closed".to_owned()),
        Ok(_) => None,
    };
    if let Some(why) = cut {
        let kept = size > 0 && file.as_file().sync_all().is_ok() && file.persist(&partial).is_ok();
        let resume = if kept {
            format!(
                "; run the command again to resume (the {size} bytes are kept in {})",
                partial.display()
            )
        } else {
            "; run the command again".to_owned()
        };
        bail!(
            "the download of {label} was cut after {size} of the {announced} bytes its record announces ({why}){resume}"
        );
    }
    file.as_file_mut()
        .flush()
        .and_then(|()| file.as_file().sync_all())
        .with_context(|| format!("writing {}", file.path().display()))?;
    Ok(Downloaded { file, sha256, size })
}

/// What a download whose bytes do not hash to what the registry published
/// tells the user to do: nothing of it is kept.
pub const MISMATCH_ADVICE: &str = "the registry, or a proxy between it and you, sent other bytes than were published: try again, and if it persists tell the registry's operator";

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
