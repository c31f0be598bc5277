//! The registry's own agent identity: the agent id and organization it
//! answers CLowl and MoltSpeak messages as, and the Ed25519 key it signs its
//! MoltSpeak answers and agents' A2A Agent Cards with.
//!
//! The key comes from configuration (inline PEM or a file) or, failing both,
//! from `<data_dir>/moltspeak-identity.pem`, generated on first start with
//! mode 0600. Replicas behind one proxy must present one identity, so a
//! scale-out deployment configures the key rather than letting each replica
//! generate its own. The public half is published at
//! `GET /.well-known/moltspeak.json` and, as a JWK, `GET /.well-known/jwks.json`.

use std::{
    io::Write,
    os::unix::fs::OpenOptionsExt,
    path::{Path, PathBuf},
};

use agentlang_core::{
    a2a::{self, AgentCard, Jwk, SignError},
    protocol::moltspeak::{self, EncryptionKey, EncryptionSecret, Message, MoltError, Party},
    signing::{KeyId, SecretKey},
};
use ed25519_dalek::{SigningKey, pkcs8::DecodePrivateKey};

use crate::settings::IdentitySettings;

/// The file the generated key is kept in, under the data folder.
pub const IDENTITY_FILE: &str = "moltspeak-identity.pem";

#[derive(Debug, thiserror::Error)]
pub enum IdentityError {
    #[error("cannot read the identity key {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot create the identity key {path}: {source}")]
    Create {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("the identity key from {origin} is not a PKCS#8 PEM Ed25519 private key: {message}")]
    InvalidKey { origin: String, message: String },
    #[error("cannot generate the identity key: {0}")]
    Generate(String),
    #[error("the agent id must not be empty")]
    EmptyAgentId,
}

/// Who the registry is when it speaks an agent protocol.
pub struct RegistryIdentity {
    agent_id: String,
    org: String,
    signing_key: SigningKey,
    public_key: moltspeak::PublicKey,
    key_id: KeyId,
    /// The X25519 secret derived from the signing key (libsodium's
    /// `crypto_sign_ed25519_sk_to_curve25519`), so every replica holding the
    /// identity key opens the same envelopes.
    enc_secret: EncryptionSecret,
    enc_key: EncryptionKey,
}

impl std::fmt::Debug for RegistryIdentity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RegistryIdentity")
            .field("agent_id", &self.agent_id)
            .field("org", &self.org)
            .field("key_id", &self.key_id)
            .finish_non_exhaustive()
    }
}

impl RegistryIdentity {
    /// Loads the configured key, or the data folder's (creating it).
    pub fn load(settings: &IdentitySettings, data_dir: &Path) -> Result<Self, IdentityError> {
        let (pem, origin) = match (&settings.key_pem, &settings.key_file) {
            (Some(pem), _) => (pem.clone(), "configuration".to_owned()),
            (None, Some(path)) => (read_key(path)?, path.display().to_string()),
            (None, None) => {
                let path = data_dir.join(IDENTITY_FILE);
                (load_or_create_key(&path)?, path.display().to_string())
            }
        };
        Self::from_pkcs8_pem(&pem, &settings.agent_id, &settings.org).map_err(|e| match e {
            IdentityError::InvalidKey { message, .. } => {
                IdentityError::InvalidKey { origin, message }
            }
            other => other,
        })
    }

    pub fn from_pkcs8_pem(pem: &str, agent_id: &str, org: &str) -> Result<Self, IdentityError> {
        if agent_id.is_empty() {
            return Err(IdentityError::EmptyAgentId);
        }
        let signing_key =
            SigningKey::from_pkcs8_pem(pem.trim()).map_err(|e| IdentityError::InvalidKey {
                origin: "PEM".to_owned(),
                message: e.to_string(),
            })?;
        let verifying = signing_key.verifying_key();
        let enc_secret = EncryptionSecret::from_ed25519(&signing_key);
        Ok(Self {
            enc_key: enc_secret.public_key(),
            enc_secret,
            agent_id: agent_id.to_owned(),
            org: org.to_owned(),
            key_id: KeyId::of_raw_public_key(verifying.as_bytes()),
            public_key: moltspeak::PublicKey::from(verifying),
            signing_key,
        })
    }

    pub fn agent_id(&self) -> &str {
        &self.agent_id
    }

    pub fn org(&self) -> &str {
        &self.org
    }

    /// The `ed25519:<base64>` public key.
    pub fn public_key(&self) -> &moltspeak::PublicKey {
        &self.public_key
    }

    /// Lowercase hex SHA-256 of the raw public key, like every key id here.
    pub fn key_id(&self) -> &KeyId {
        &self.key_id
    }

    /// `from` of the registry's MoltSpeak messages, key included.
    /// The X25519 key envelopes to the registry are sealed to.
    pub fn enc_key(&self) -> &EncryptionKey {
        &self.enc_key
    }

    /// The crypto_box shared with the holder of `peer`'s secret.
    pub fn shared_box(&self, peer: &EncryptionKey) -> moltspeak::SharedBox {
        moltspeak::SharedBox::new(&self.enc_secret, peer)
    }

    pub fn party(&self) -> Party {
        Party {
            key: Some(self.public_key),
            enc_key: Some(self.enc_key),
            ..Party::new(self.agent_id.clone(), Some(&self.org))
        }
    }

    /// Signs a MoltSpeak message the registry sends.
    pub fn sign(&self, message: Message) -> Result<Message, MoltError> {
        message.sign(&self.signing_key)
    }

    /// Attests a capability (org-signed by the registry's key).
    pub fn attest(
        &self,
        claim: &moltspeak::capabilities::AttestationClaim,
    ) -> moltspeak::capabilities::Attestation {
        claim.sign(&self.signing_key)
    }

    /// Issues a MoltSpeak consent token. Its claims carry a `typ` no
    /// message has, so the signature cannot stand for a message's.
    pub fn issue_consent(&self, claims: &moltspeak::consent::ConsentClaims) -> String {
        claims.issue(&self.signing_key)
    }

    /// Signs an agent's A2A Agent Card (`kid`: the key id; `jku`: where
    /// the key set is served). The same key as MoltSpeak's: a JWS signs
    /// `base64url '.' base64url`, which no MoltSpeak message's canonical
    /// JSON (an object, `{...}`) can be, so neither signature can stand
    /// for the other.
    pub fn sign_agent_card(&self, card: AgentCard, jku: &str) -> Result<AgentCard, SignError> {
        a2a::sign(card, &self.signing_key, self.key_id.as_str(), Some(jku))
    }

    /// The public key as a JWK, named by its key id.
    /// An Ed25519 signature of `message` with the identity key: the
    /// registry's provenance statements (docs/provenance.md), which a
    /// reader checks with the key `/.well-known/jwks.json` names.
    pub fn sign_bytes(&self, message: &[u8]) -> [u8; 64] {
        use ed25519_dalek::Signer as _;
        self.signing_key.sign(message).to_bytes()
    }

    /// The identity's Ed25519 public key, raw.
    pub fn raw_public_key(&self) -> [u8; 32] {
        self.signing_key.verifying_key().to_bytes()
    }

    pub fn jwk(&self) -> Jwk {
        Jwk::ed25519(&self.signing_key.verifying_key(), self.key_id.as_str())
    }
}

fn read_key(path: &Path) -> Result<String, IdentityError> {
    std::fs::read_to_string(path).map_err(|source| IdentityError::Read {
        path: path.to_owned(),
        source,
    })
}

/// Reads the key at `path`, or generates it there with mode 0600. Another
/// process sharing the data folder may win the race to create it; then its
/// key is the one used.
fn load_or_create_key(path: &Path) -> Result<String, IdentityError> {
    match std::fs::read_to_string(path) {
        Ok(pem) => return Ok(pem),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(source) => {
            return Err(IdentityError::Read {
                path: path.to_owned(),
                source,
            });
        }
    }
    let create_error = |source| IdentityError::Create {
        path: path.to_owned(),
        source,
    };
    if let Some(parent) = path.parent() {
        store::files::create_private_dir(parent).map_err(create_error)?;
    }
    let key = SecretKey::generate().map_err(|e| IdentityError::Generate(e.to_string()))?;
    let pem = key.to_pkcs8_pem();
    match std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
    {
        Ok(mut file) => {
            file.write_all(pem.as_bytes()).map_err(create_error)?;
            file.sync_all().map_err(create_error)?;
            Ok(pem.to_string())
        }
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => read_key(path),
        Err(source) => Err(create_error(source)),
    }
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    use agentlang_core::protocol::moltspeak::{Classification, MessageBuilder, Op};
    use serde_json::Map;

    use super::*;

    #[test]
    fn a_generated_key_is_kept_with_mode_0600_and_reused() {
        let dir = tempfile::tempdir().unwrap();
        let settings = IdentitySettings::default();
        let first = RegistryIdentity::load(&settings, dir.path()).unwrap();
        let second = RegistryIdentity::load(&settings, dir.path()).unwrap();
        assert_eq!(first.key_id(), second.key_id());
        let mode = std::fs::metadata(dir.path().join(IDENTITY_FILE))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
        assert_eq!(first.agent_id(), "agentlang-registry");
    }

    #[test]
    fn a_configured_key_wins_over_the_data_folder() {
        let dir = tempfile::tempdir().unwrap();
        let pem = SecretKey::generate().unwrap().to_pkcs8_pem().to_string();
        let expected = SecretKey::from_pkcs8_pem(&pem)
            .unwrap()
            .public_key()
            .key_id();
        let inline = IdentitySettings {
            key_pem: Some(pem.clone()),
            ..IdentitySettings::default()
        };
        let identity = RegistryIdentity::load(&inline, dir.path()).unwrap();
        assert_eq!(identity.key_id(), &expected);
        assert!(!dir.path().join(IDENTITY_FILE).exists());

        let file = dir.path().join("shared.pem");
        std::fs::write(&file, &pem).unwrap();
        let from_file = IdentitySettings {
            key_file: Some(file),
            ..IdentitySettings::default()
        };
        let identity = RegistryIdentity::load(&from_file, dir.path()).unwrap();
        assert_eq!(identity.key_id(), &expected);
    }

    #[test]
    fn bad_keys_and_ids_are_refused_with_their_origin() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("bad.pem");
        std::fs::write(&file, "not a key").unwrap();
        let settings = IdentitySettings {
            key_file: Some(file.clone()),
            ..IdentitySettings::default()
        };
        let err = RegistryIdentity::load(&settings, dir.path()).unwrap_err();
        assert!(
            matches!(&err, IdentityError::InvalidKey { origin, .. } if origin == &file.display().to_string()),
            "{err}"
        );
        let missing = IdentitySettings {
            key_file: Some(dir.path().join("absent.pem")),
            ..IdentitySettings::default()
        };
        assert!(matches!(
            RegistryIdentity::load(&missing, dir.path()),
            Err(IdentityError::Read { .. })
        ));
        let pem = SecretKey::generate().unwrap().to_pkcs8_pem().to_string();
        assert!(matches!(
            RegistryIdentity::from_pkcs8_pem(&pem, "", "org"),
            Err(IdentityError::EmptyAgentId)
        ));
    }

    #[test]
    fn signed_messages_verify_with_the_published_key() {
        let pem = SecretKey::generate().unwrap().to_pkcs8_pem().to_string();
        let identity = RegistryIdentity::from_pkcs8_pem(&pem, "registry", "acme").unwrap();
        let message = MessageBuilder::new("m1", Op::Hello, Classification::Public, Map::new())
            .from(&identity.party())
            .build()
            .unwrap();
        let signed = identity.sign(message).unwrap();
        signed
            .verify(identity.public_key().verifying_key())
            .unwrap();
        signed.verify_with_sender_key().unwrap();
        assert!(!format!("{identity:?}").contains("BEGIN"));
    }
}
