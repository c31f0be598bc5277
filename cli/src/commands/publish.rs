//! `publish FILE|DIR`: upload a container with a progress bar, then point at
//! its catalog page.

use std::{fs, path::Path, process::ExitCode};

use agentlang_core::grants::PromptMode;
use anyhow::{Context, Result};
use reqwest::blocking::{
    Body,
    multipart::{Form, Part},
};
use serde_json::{Value, json};

use crate::{args::BuildKeys, build, client::Bound, container_file, env::Env, progress};

pub fn run(
    env: &Env,
    path: &Path,
    keys: &BuildKeys,
    stage: bool,
    provenance: Option<&Path>,
) -> Result<ExitCode> {
    // Read before anything is built or sent: a missing or oversized file
    // fails here.
    let envelope = provenance.map(read_envelope).transpose()?;
    let built = if path.is_dir() {
        let built = build::build_dir(env, path, keys, None)?;
        if !env.out.json {
            crate::output::note(&built.human);
        }
        Some(built)
    } else {
        None
    };
    let file = built
        .as_ref()
        .map_or_else(|| path.to_owned(), |b| b.path.clone());
    // Checked locally first: a broken file fails here, with the reason,
    // instead of after an upload.
    let container = container_file::read(&file)?;
    let m = container.manifest();
    let client = env.authenticated()?;
    let len = fs::metadata(&file)
        .with_context(|| format!("reading {}", file.display()))?
        .len();
    let reader = fs::File::open(&file).with_context(|| format!("opening {}", file.display()))?;
    let bar = progress::bytes_bar(
        &env.out,
        Some(len),
        &format!("uploading {}@{}", m.name(), m.version()),
    );
    // The upload may take long but not for ever: the answer must come
    // within the time the bytes take at the slowest rate tolerated.
    let request = client
        // Staged releases: `?stage=true` stores it for an owner to approve.
        .post(if stage {
            "/api/v1/publish?stage=true"
        } else {
            "/api/v1/publish"
        })
        .timeout(client.timeouts().transfer(len));
    let request = match envelope {
        // Provenance: a form of the container and the envelope.
        Some(envelope) => request.multipart(
            Form::new()
                .part(
                    "container",
                    Part::reader_with_length(bar.wrap_read(reader), len)
                        .mime_str("application/octet-stream")?,
                )
                .part(
                    "provenance",
                    Part::bytes(envelope).mime_str("application/json")?,
                ),
        ),
        None => request
            .header(reqwest::header::CONTENT_TYPE, "application/octet-stream")
            .body(Body::sized(bar.wrap_read(reader), len)),
    };
    let sent = client.send(request);
    bar.finish_and_clear();
    let response = sent.with_context(|| format!("publishing {}@{}", m.name(), m.version()))?;
    // 200 rather than 201: these exact bytes were this version already.
    let already = response.status() == reqwest::StatusCode::OK;
    let record: Value = response.json(Bound::JSON)?;
    if stage {
        return super::stage::staged(env, &record);
    }
    let url = format!(
        "{}/{}/{}/{}",
        env.ctx.registry,
        m.kind().plural(),
        m.name(),
        m.version()
    );
    env.out.emit(
        &json!({
            "kind": m.kind(),
            "name": m.name(),
            "version": m.version(),
            "sha256": container.sha256().to_hex(),
            "url": url,
            "already_published": already,
            "prompt": m.prompt_mode(),
            "record": record,
            "build": built.as_ref().map(|b| &b.summary),
        }),
        || {
            let what = if already {
                "already published, identical:"
            } else {
                "published"
            };
            let mode = match m.prompt_mode() {
                Some(PromptMode::Sealed) => format!(
                    "\n  sealed: only its owners and the accounts you grant it to can run it (agentlang grant {} --to USERNAME)",
                    m.name()
                ),
                Some(PromptMode::Open) => {
                    "\n  open: anyone who downloads it can read and run its prompt".to_owned()
                }
                None => String::new(),
            };
            format!(
                "{} {what} {} {}@{}\n  {url}{mode}",
                env.out.green("✓"),
                m.kind(),
                env.out.bold(m.name().as_str()),
                m.version()
            )
        },
    );
    Ok(ExitCode::SUCCESS)
}

/// The provenance file, within the registry's bound.
fn read_envelope(path: &Path) -> Result<Vec<u8>> {
    let bytes = fs::read(path).with_context(|| format!("reading {}", path.display()))?;
    if bytes.len() > agentlang_core::provenance::MAX_ENVELOPE_BYTES {
        anyhow::bail!(
            "{} is {} bytes; a provenance envelope is at most {} bytes",
            path.display(),
            bytes.len(),
            agentlang_core::provenance::MAX_ENVELOPE_BYTES
        );
    }
    Ok(bytes)
}
