//! Sealed prompts for those who did not seal them (docs/prompt-grants.md):
//! the prompt identity on disk, and the prompt key of one sealed version,
//! found (`--prompt-key`, the publisher's own, one fetched before) or
//! fetched through a grant, and checked against the agent's lock.

use std::path::{Path, PathBuf};

use agentlang_core::{
    PackageName, Version,
    container::{Container, ENCRYPTED_PROMPT_PATH, PROMPT_PATH},
    crypt::PromptKey,
    grants::{self, Identity, MAX_WRAPPED_BYTES},
    lockfile::Lockfile,
};
use anyhow::{Context, Result, bail};
use reqwest::StatusCode;
use zeroize::Zeroizing;

use crate::{
    client::{ApiError, Bound},
    config,
    env::Env,
    keyfiles,
};

/// File name of the prompt identity inside the config folder.
pub const IDENTITY_FILE: &str = "prompt.identity";
/// Folder (in the config folder) of prompt keys fetched through grants.
const KEPT_KEYS_DIR: &str = "prompt-keys";

pub fn default_identity_path() -> Result<PathBuf> {
    Ok(config::config_dir()?.join(IDENTITY_FILE))
}

pub fn read_identity(path: &Path) -> Result<Identity> {
    let text = Zeroizing::new(std::fs::read_to_string(path).with_context(|| {
        format!(
            "reading the prompt identity {} (create one with `agentlang keygen --prompt`)",
            path.display()
        )
    })?);
    Identity::from_file_text(&text).with_context(|| format!("reading {}", path.display()))
}

/// Where a key fetched through a grant is kept (0600), named by the
/// agent and the key's id, so `run` opens an installed agent offline.
fn kept_key_path(name: &PackageName, key_id: &str) -> Result<PathBuf> {
    Ok(config::config_dir()?
        .join(KEPT_KEYS_DIR)
        .join(format!("{}.{key_id}.key", name.normalized())))
}

/// The plaintext prompt of a sealed agent version, with the key that
/// opens it: `explicit` (`--prompt-key`), else the publisher's own key
/// beside the signing key, else one fetched before through a grant, else
/// fetched now (and kept). The plaintext must hash to what the agent's
/// lock says of prompt.yaml.
pub fn open_sealed_prompt(
    env: &Env,
    explicit: Option<&Path>,
    agent: &Container,
    lock: Option<&Lockfile>,
) -> Result<Zeroizing<Vec<u8>>> {
    let manifest = agent.manifest();
    let (name, version) = (manifest.name(), manifest.version());
    let label = format!("{name}@{version}");
    let open = |key: &PromptKey, from: &str| {
        agent
            .open_encrypted(ENCRYPTED_PROMPT_PATH, key)
            .with_context(|| format!("{from} does not open the prompt of {label}"))
    };
    let plain = if let Some(path) = explicit {
        open(
            &keyfiles::read_prompt_key(path)?,
            &path.display().to_string(),
        )?
    } else if let Some(plain) =
        own_key(name)?.and_then(|(key, path)| open(&key, &path.display().to_string()).ok())
    {
        plain
    } else {
        let key_id = manifest.prompt_key_id().map(|id| id.as_str().to_owned());
        let kept = match &key_id {
            Some(id) => Some(kept_key_path(name, id)?).filter(|p| p.exists()),
            None => None,
        };
        match kept {
            Some(path) => open(
                &keyfiles::read_prompt_key(&path)?,
                "the key kept from a grant",
            )?,
            None => {
                let key = fetch_granted_key(env, name, version, &label)?;
                let plain = open(&key, "the key granted to you")?;
                if let Some(id) = &key_id {
                    config::write_private(&kept_key_path(name, id)?, key.to_key_file().as_bytes())?;
                }
                plain
            }
        }
    };
    if let Some(expected) =
        lock.and_then(|l| l.files.iter().find(|(p, _)| p.as_str() == PROMPT_PATH))
        && !expected.1.matches(&plain)
    {
        bail!(
            "the decrypted prompt of {label} does not match its agent.lock (files.{PROMPT_PATH}); refusing it"
        );
    }
    Ok(plain)
}

/// The publisher's key for `name`, when this machine built it.
fn own_key(name: &PackageName) -> Result<Option<(PromptKey, PathBuf)>> {
    let path = keyfiles::prompt_key_path(&keyfiles::default_signing_key_path()?, name);
    if !path.exists() {
        return Ok(None);
    }
    Ok(Some((keyfiles::read_prompt_key(&path)?, path)))
}

/// Fetches and opens the caller's wrapped key for one version.
fn fetch_granted_key(
    env: &Env,
    name: &PackageName,
    version: &Version,
    label: &str,
) -> Result<PromptKey> {
    let sealed = format!(
        "the prompt of {label} is sealed: only its owners and the accounts they grant it to can run it"
    );
    let client = env.authenticated().with_context(|| {
        format!("{sealed}; log in (`agentlang login`) to use a grant, or pass --prompt-key FILE")
    })?;
    let path = format!("/api/v1/agents/{}/{version}/prompt-key", name.normalized());
    let answer = match client.send(client.get(&path)) {
        Ok(answer) => answer,
        Err(e) => {
            if let Some(api) = e.downcast_ref::<ApiError>()
                && api.status == StatusCode::NOT_FOUND
            {
                bail!(
                    "{sealed}, and you hold no grant for it: {}",
                    api.detail
                        .as_deref()
                        .unwrap_or("ask an owner to grant it to you")
                );
            }
            return Err(e.context(sealed));
        }
    };
    let wrapped = answer.bytes(Bound {
        what: "a wrapped prompt key",
        max: MAX_WRAPPED_BYTES as u64,
    })?;
    let identity_path = default_identity_path()?;
    let identity = read_identity(&identity_path)?;
    let text = grants::unwrap(&identity, &wrapped).with_context(|| {
        format!(
            "{} cannot open the key granted to you for {label}",
            identity_path.display()
        )
    })?;
    let text = std::str::from_utf8(&text).context("the granted key is not a prompt key file")?;
    PromptKey::from_key_file(text).context("the granted key is not a prompt key file")
}
