//! Key files on disk: the signing key (PKCS#8 PEM) with its public half
//! (SPKI PEM) beside it, and prompt keys (base64 on one line). Private files
//! are written mode 0600 and never overwritten by accident.

use std::{
    fs,
    path::{Path, PathBuf},
};

use agentlang_core::{
    PackageName,
    crypt::PromptKey,
    signing::{PublicKey, SecretKey},
};
use anyhow::{Context, Result, bail};

use crate::config;

/// File name of the default signing key inside the config folder.
pub const DEFAULT_SIGNING_KEY: &str = "signing.pem";

pub fn default_signing_key_path() -> Result<PathBuf> {
    Ok(config::config_dir()?.join(DEFAULT_SIGNING_KEY))
}

/// `PATH.pub`: where the public half of a private key file lives.
pub fn public_key_path(private: &Path) -> PathBuf {
    let mut name = private.as_os_str().to_owned();
    name.push(".pub");
    PathBuf::from(name)
}

/// Where a package's prompt key is kept when the CLI made it: beside the
/// signing key, one per package.
pub fn prompt_key_path(signing_key: &Path, name: &PackageName) -> PathBuf {
    let dir = signing_key.parent().unwrap_or_else(|| Path::new("."));
    dir.join(format!("{}.prompt.key", name.normalized()))
}

pub fn read_secret_key(path: &Path) -> Result<SecretKey> {
    let pem = fs::read_to_string(path).with_context(|| {
        format!(
            "reading the signing key {} (create one with `agentlang keygen`)",
            path.display()
        )
    })?;
    SecretKey::from_pkcs8_pem(&pem)
        .with_context(|| format!("{} is not an Ed25519 private key", path.display()))
}

pub fn read_public_key(path: &Path) -> Result<PublicKey> {
    let pem = fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    PublicKey::from_spki_pem(&pem)
        .with_context(|| format!("{} is not an Ed25519 public key", path.display()))
}

pub fn read_prompt_key(path: &Path) -> Result<PromptKey> {
    let text = fs::read_to_string(path)
        .with_context(|| format!("reading the prompt key {}", path.display()))?;
    PromptKey::from_key_file(&text)
        .with_context(|| format!("{} is not a prompt key", path.display()))
}

/// Refuses to replace an existing file unless told to.
pub fn ensure_writable(path: &Path, force: bool) -> Result<()> {
    if !force && path.exists() {
        bail!(
            "{} already exists; pass --force to replace it",
            path.display()
        );
    }
    Ok(())
}

/// Writes a new key pair: PATH (0600) and PATH.pub.
pub fn write_key_pair(path: &Path, key: &SecretKey, force: bool) -> Result<PathBuf> {
    let pub_path = public_key_path(path);
    ensure_writable(path, force)?;
    ensure_writable(&pub_path, force)?;
    config::write_private(path, key.to_pkcs8_pem().as_bytes())?;
    write_public(&pub_path, key.public_key().to_spki_pem().as_bytes())?;
    Ok(pub_path)
}

/// Writes a new prompt key (0600); refuses to replace one, since content
/// encrypted with the old key would be unreadable.
pub fn write_prompt_key(path: &Path, key: &PromptKey) -> Result<()> {
    ensure_writable(path, false)?;
    config::write_private(path, key.to_key_file().as_bytes())
}

fn write_public(path: &Path, bytes: &[u8]) -> Result<()> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    fs::write(path, bytes).with_context(|| format!("writing {}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn public_key_path_appends_pub() {
        assert_eq!(
            public_key_path(Path::new("/k/signing.pem")),
            PathBuf::from("/k/signing.pem.pub")
        );
    }

    #[test]
    fn prompt_key_sits_beside_the_signing_key_under_the_normalized_name() {
        let name = PackageName::new("Research-Assistant").unwrap();
        assert_eq!(
            prompt_key_path(Path::new("/k/signing.pem"), &name),
            PathBuf::from("/k/research_assistant.prompt.key")
        );
    }

    #[test]
    fn key_pair_round_trips_and_is_not_overwritten() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sub/signing.pem");
        let key = SecretKey::generate().unwrap();
        let pub_path = write_key_pair(&path, &key, false).unwrap();
        assert_eq!(
            read_public_key(&pub_path).unwrap().key_id(),
            key.public_key().key_id()
        );
        assert_eq!(
            read_secret_key(&path).unwrap().public_key().key_id(),
            key.public_key().key_id()
        );
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            assert_eq!(
                fs::metadata(&path).unwrap().permissions().mode() & 0o777,
                0o600
            );
        }
        let err = write_key_pair(&path, &SecretKey::generate().unwrap(), false).unwrap_err();
        assert!(err.to_string().contains("already exists"), "{err}");
        // The original key is untouched.
        assert_eq!(
            read_secret_key(&path).unwrap().public_key().key_id(),
            key.public_key().key_id()
        );
        write_key_pair(&path, &SecretKey::generate().unwrap(), true).unwrap();
        assert_ne!(
            read_secret_key(&path).unwrap().public_key().key_id(),
            key.public_key().key_id()
        );
    }
}
