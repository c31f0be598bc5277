//! `pull NAME[@REQ]`: pick a version from the registry's index, download it
//! with progress, check its hash against the index and its signature against
//! the registry's key, and only then put it in place.

use std::{
    io::{BufReader, Seek, Write},
    path::PathBuf,
    process::ExitCode,
};

use agentlang_core::container::{self, Limits};
use anyhow::{Context, Result, bail};
use serde::Deserialize;
use serde_json::json;

use crate::{
    args::KindArg,
    container_file, download,
    env::Env,
    index::{Index, pick_version},
    spec::PackageReq,
    tlog::{self, LogRef},
};

/// `GET /api/v1/{kind}/{name}/{version}` as pull needs it.
#[derive(Debug, Deserialize)]
struct Record {
    /// Bytes of the container: the download stops past them.
    size: u64,
    #[serde(default)]
    log: Option<LogRef>,
}

pub fn run(
    env: &Env,
    spec: &str,
    kind: Option<KindArg>,
    output: Option<PathBuf>,
) -> Result<ExitCode> {
    let wanted = PackageReq::parse(spec)?;
    let client = env.anonymous()?;
    let kind = crate::index::which_kind(&client, &wanted.name, kind.map(KindArg::kind))?;
    let index: Index = client
        .send_json(client.get(&format!("/api/v1/index/{}/{}", kind.plural(), wanted.name)))
        .with_context(|| format!("looking up {kind} {}", wanted.name))?;
    let entry = pick_version(wanted.name.as_str(), &index.versions, wanted.req.as_ref())?;
    let expected = entry.digest()?;
    let version = &entry.version;
    let path = output.unwrap_or_else(|| {
        PathBuf::from(format!("{}@{version}.{}", wanted.name, kind.extension()))
    });
    let record: Record = client
        .send_json(client.get(&format!(
            "/api/v1/{}/{}/{version}",
            kind.plural(),
            wanted.name
        )))
        .with_context(|| format!("looking up {kind} {}@{version}", wanted.name))?;

    // Beside the destination, so the final rename stays on one file system;
    // removed on any failure below.
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let mut downloaded = download::download(
        &client,
        &env.out,
        (kind, &wanted.name, version),
        record.size,
        &dir,
    )?;
    let actual = downloaded.sha256;
    if actual != expected {
        bail!(
            "the download of {}@{version} has sha256 {}, but the index says {}; nothing was written: {}",
            wanted.name,
            actual.to_hex(),
            expected.to_hex(),
            download::MISMATCH_ADVICE
        );
    }
    let file = downloaded.file.as_file_mut();
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
    let log_index = tlog::check_version(
        &client,
        &env.log,
        &env.out,
        (kind, &wanted.name, version),
        &actual,
        record.log.map(|l| l.index),
    )?;
    container_file::persist(downloaded.file, &path)?;

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
