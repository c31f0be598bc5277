//! `keygen`: a new Ed25519 signing key.

use std::{path::PathBuf, process::ExitCode};

use agentlang_core::{grants::Identity, signing::SecretKey};
use anyhow::Result;
use serde_json::json;

use crate::{config, grants, keyfiles, output::Output};

/// `keygen --prompt`: an age identity, written as `age-keygen` writes one.
pub fn prompt_identity(out: &Output, output: Option<PathBuf>, force: bool) -> Result<ExitCode> {
    let path = match output {
        Some(p) => p,
        None => grants::default_identity_path()?,
    };
    keyfiles::ensure_writable(&path, force)?;
    let identity = Identity::generate();
    config::write_private(&path, identity.to_file_text().as_bytes())?;
    let recipient = identity.recipient().to_string();
    out.emit(&json!({ "identity": path, "recipient": recipient }), || {
        format!(
            "{} wrote {} (private, keep it safe)\n  recipient {}\n  next: agentlang keys register --prompt",
            out.green("✓"),
            path.display(),
            out.bold(&recipient)
        )
    });
    Ok(ExitCode::SUCCESS)
}

pub fn run(out: &Output, output: Option<PathBuf>, force: bool) -> Result<ExitCode> {
    let path = match output {
        Some(p) => p,
        None => keyfiles::default_signing_key_path()?,
    };
    let key = SecretKey::generate()?;
    let pub_path = keyfiles::write_key_pair(&path, &key, force)?;
    let key_id = key.public_key().key_id();
    out.emit(
        &json!({ "private_key": path, "public_key": pub_path, "key_id": key_id }),
        || {
            format!(
                "{} wrote {} (private, keep it safe) and {}\n  key id {}\n  next: agentlang keys register {}",
                out.green("✓"),
                path.display(),
                pub_path.display(),
                out.bold(key_id.as_str()),
                pub_path.display()
            )
        },
    );
    Ok(ExitCode::SUCCESS)
}
