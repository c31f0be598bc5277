//! `pull NAME[@REQ]`: pick a version from the registry's index, download it
//! with progress, check its hash against the index and its signature against
//! the registry's key, and only then put it in place.

use std::{
    io::{self, BufReader, Seek, Write},
    path::PathBuf,
    process::ExitCode,
};

use agentlang_core::{
    container::{self, Limits},
    digest::Sha256Digest,
};
use anyhow::{Context, Result, bail};
use serde_json::json;
use sha2::{Digest, Sha256};

use crate::{
    args::KindArg,
    container_file,
    env::Env,
    index::{Index, pick_version},
    progress,
    spec::PackageReq,
    tlog::{self, LoggedRecord},
};

pub fn run(env: &Env, spec: &str, kind: KindArg, output: Option<PathBuf>) -> Result<ExitCode> {
    let wanted = PackageReq::parse(spec)?;
    let kind = kind.kind();
    let client = env.anonymous()?;
    let index: Index = client
        .send_json(client.get(&format!("/api/v1/index/{}/{}", kind.plural(), wanted.name)))
        .with_context(|| format!("looking up {kind} {}", wanted.name))?;
    let entry = pick_version(wanted.name.as_str(), &index.versions, wanted.req.as_ref())?;
    let expected = entry.digest()?;
    let version = &entry.version;
    let path = output.unwrap_or_else(|| {
        PathBuf::from(format!("{}@{version}.{}", wanted.name, kind.extension()))
    });

    let resp = client.send(client.get(&format!(
        "/api/v1/{}/{}/{version}/download",
        kind.plural(),
        wanted.name
    )))?;
    let bar = progress::bytes_bar(
        &env.out,
        resp.content_length(),
        &format!("downloading {}@{version}", wanted.name),
    );
    let mut tmp = container_file::temp_beside(&path)?;
    let mut hashing = HashingWriter {
        inner: tmp.as_file_mut(),
        hasher: Sha256::new(),
    };
    let copied = io::copy(&mut bar.wrap_read(resp), &mut hashing);
    bar.finish_and_clear();
    copied.with_context(|| format!("downloading {}@{version}", wanted.name))?;
    let actual = Sha256Digest::from_bytes(hashing.hasher.finalize().into());
    if actual != expected {
        bail!(
            "the download of {}@{version} has sha256 {}, but the index says {}; nothing was written",
            wanted.name,
            actual.to_hex(),
            expected.to_hex()
        );
    }
    let file = tmp.as_file_mut();
    file.flush()?;
    file.rewind()?;
    let container =
        container::read(BufReader::new(&*file), &Limits::default()).with_context(|| {
            format!(
                "the registry's {}@{version} is not a valid container",
                wanted.name
            )
        })?;
    let m = container.manifest();
    if m.kind() != kind || m.name() != &wanted.name || m.version() != version {
        bail!(
            "the registry sent {} {}@{} when asked for {kind} {}@{version}",
            m.kind(),
            m.name(),
            m.version(),
            wanted.name
        );
    }
    let key = client.public_key(m.signer())?;
    container
        .verify_signature(&key.key)
        .with_context(|| format!("{}@{version} does not verify", wanted.name))?;
    let record: LoggedRecord = client
        .send_json(client.get(&format!(
            "/api/v1/{}/{}/{version}",
            kind.plural(),
            wanted.name
        )))
        .with_context(|| format!("looking up {kind} {}@{version}", wanted.name))?;
    let log_index = tlog::check_version(
        &client,
        &env.log,
        &env.out,
        (kind, &wanted.name, version),
        &actual,
        record.log.map(|l| l.index),
    )?;
    file.sync_all()?;
    container_file::persist(tmp, &path)?;

    env.out.emit(
        &json!({
            "kind": kind,
            "name": m.name(),
            "version": version,
            "sha256": actual.to_hex(),
            "signer": m.signer(),
            "yanked": entry.yanked,
            "path": path,
            "log_index": log_index,
        }),
        || {
            let yanked = if entry.yanked {
                env.out.yellow(" (yanked)")
            } else {
                String::new()
            };
            format!(
                "{} pulled {}@{version}{yanked} into {}\n  sha256 {} · signed by {} · log entry {log_index}",
                env.out.green("✓"),
                env.out.bold(m.name().as_str()),
                path.display(),
                actual.to_hex(),
                m.signer()
            )
        },
    );
    Ok(ExitCode::SUCCESS)
}

struct HashingWriter<W> {
    inner: W,
    hasher: Sha256,
}

impl<W: Write> Write for HashingWriter<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.hasher.update(&buf[..n]);
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}
