//! Prompt encryption: AES-256-GCM envelopes bound to the member they belong
//! to.
//!
//! An envelope (`X.enc`) is `AGLENC1\n`, a 12-byte nonce, then ciphertext
//! with its 16-byte tag. The associated data is `{kind}/{name}@{version}/{X}`,
//! so a ciphertext moved into another package, version or file fails to
//! decrypt. The nonce is the first 12 bytes of
//! HMAC-SHA256(key, AAD || 0x00 || plaintext): builds stay reproducible, and a
//! nonce repeats only for an identical message under an identical AAD, where
//! repeating it reveals nothing new.

use std::fmt;

use aes_gcm::{
    Aes256Gcm, KeyInit,
    aead::{AeadInOut, Nonce, Tag},
};
use base64::{Engine, engine::general_purpose::STANDARD};
use hmac::{Hmac, Mac};
use sha2::Sha256;
use zeroize::Zeroizing;

use crate::{Kind, MemberPath, PackageName, Version};

/// First bytes of every envelope.
pub const MAGIC: &[u8; 8] = b"AGLENC1\n";
pub const NONCE_LEN: usize = 12;
pub const TAG_LEN: usize = 16;
/// The smallest envelope: magic, nonce and the tag of an empty plaintext.
pub const MIN_ENVELOPE_LEN: usize = MAGIC.len() + NONCE_LEN + TAG_LEN;
/// Suffix of an encrypted member's path.
pub const ENCRYPTED_SUFFIX: &str = ".enc";

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CryptError {
    #[error("not an encrypted member: it does not start with \"AGLENC1\\n\"")]
    BadMagic,
    #[error("encrypted member is {0} bytes; an envelope holds at least {MIN_ENVELOPE_LEN}")]
    TooShort(usize),
    #[error(
        "decryption failed: wrong prompt key, or the ciphertext was altered or moved to another package, version or file"
    )]
    Decrypt,
    #[error("plaintext is too long for AES-GCM")]
    TooLong,
    #[error("prompt key file must hold one line of base64 encoding 32 bytes: {0}")]
    KeyFile(String),
    #[error("the operating system's random number generator failed: {0}")]
    Random(String),
    #[error("{0:?} is not a prompt key id (16 lowercase hex digits)")]
    KeyId(String),
}

/// A publisher's 32-byte prompt key. Zeroized on drop; never printed.
#[derive(Clone)]
pub struct PromptKey(Zeroizing<[u8; 32]>);

impl PromptKey {
    pub fn from_bytes(bytes: [u8; 32]) -> Self {
        Self(Zeroizing::new(bytes))
    }

    pub fn generate() -> Result<Self, CryptError> {
        let mut key = Zeroizing::new([0u8; 32]);
        getrandom::fill(key.as_mut()).map_err(|e| CryptError::Random(e.to_string()))?;
        Ok(Self(key))
    }

    /// Reads a key file: standard base64 of 32 bytes on one line (one
    /// trailing newline allowed).
    pub fn from_key_file(text: &str) -> Result<Self, CryptError> {
        let line = text
            .strip_suffix('\n')
            .map(|l| l.strip_suffix('\r').unwrap_or(l))
            .unwrap_or(text);
        if line.contains(['\n', '\r']) {
            return Err(CryptError::KeyFile("more than one line".into()));
        }
        let decoded = Zeroizing::new(
            STANDARD
                .decode(line.trim())
                .map_err(|e| CryptError::KeyFile(e.to_string()))?,
        );
        let bytes: [u8; 32] = decoded
            .as_slice()
            .try_into()
            .map_err(|_| CryptError::KeyFile(format!("it encodes {} bytes", decoded.len())))?;
        Ok(Self::from_bytes(bytes))
    }

    /// The key file's text: base64 and a newline.
    pub fn to_key_file(&self) -> Zeroizing<String> {
        let mut text = Zeroizing::new(STANDARD.encode(&self.0[..]));
        text.push('\n');
        text
    }

    pub fn as_bytes(&self) -> &[u8; 32] {
        &self.0
    }

    /// The key's public name: the first 8 bytes of SHA-256 over a domain
    /// tag and the key. Recorded in the manifest of what the key seals, so
    /// a grant of the key reaches every version it opens; it says nothing
    /// of the key.
    pub fn id(&self) -> PromptKeyId {
        use sha2::Digest;
        let digest = Sha256::new()
            .chain_update(b"agentlang-prompt-key-id\n")
            .chain_update(&self.0[..])
            .finalize();
        PromptKeyId(hex::encode(&digest[..8]))
    }

    fn cipher(&self) -> Aes256Gcm {
        Aes256Gcm::new(&(*self.0).into())
    }
}

impl fmt::Debug for PromptKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("PromptKey(..)")
    }
}

/// A prompt key's id ([`PromptKey::id`]): 16 lowercase hex digits.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct PromptKeyId(String);

impl PromptKeyId {
    pub fn parse(text: &str) -> Result<Self, CryptError> {
        if text.len() == 16 && text.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')) {
            Ok(Self(text.to_owned()))
        } else {
            Err(CryptError::KeyId(text.chars().take(40).collect()))
        }
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for PromptKeyId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl serde::Serialize for PromptKeyId {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.0)
    }
}

impl<'de> serde::Deserialize<'de> for PromptKeyId {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = <std::borrow::Cow<'de, str>>::deserialize(d)?;
        Self::parse(&text).map_err(serde::de::Error::custom)
    }
}

/// The associated data of one encrypted member: `{kind}/{name}@{version}/{X}`
/// where `X` is the plaintext member's path (`prompt.yaml` for
/// `prompt.yaml.enc`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Aad(String);

impl Aad {
    pub fn new(kind: Kind, name: &PackageName, version: &Version, member: &MemberPath) -> Self {
        Self(format!("{kind}/{name}@{version}/{member}"))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// Encrypts `plaintext` into an envelope. The same inputs give the same bytes.
pub fn seal(key: &PromptKey, aad: &Aad, plaintext: &[u8]) -> Result<Vec<u8>, CryptError> {
    let nonce = derive_nonce(key, aad, plaintext);
    let mut envelope = Vec::with_capacity(MIN_ENVELOPE_LEN + plaintext.len());
    envelope.extend_from_slice(MAGIC);
    envelope.extend_from_slice(&nonce);
    let body_start = envelope.len();
    envelope.extend_from_slice(plaintext);
    let tag = key
        .cipher()
        .encrypt_inout_detached(
            &Nonce::<Aes256Gcm>::from(nonce),
            aad.as_str().as_bytes(),
            envelope[body_start..].as_mut().into(),
        )
        .map_err(|_| CryptError::TooLong)?;
    envelope.extend_from_slice(&tag);
    Ok(envelope)
}

/// Decrypts an envelope. On failure nothing of the plaintext survives: the
/// buffer decrypted into is zeroized when it is dropped.
pub fn open(key: &PromptKey, aad: &Aad, envelope: &[u8]) -> Result<Zeroizing<Vec<u8>>, CryptError> {
    check_envelope_shape(envelope)?;
    let (nonce, rest) = envelope[MAGIC.len()..].split_at(NONCE_LEN);
    let (ciphertext, tag) = rest.split_at(rest.len() - TAG_LEN);
    let nonce: [u8; NONCE_LEN] = nonce.try_into().map_err(|_| CryptError::Decrypt)?;
    let tag: [u8; TAG_LEN] = tag.try_into().map_err(|_| CryptError::Decrypt)?;
    let mut buffer = Zeroizing::new(ciphertext.to_vec());
    key.cipher()
        .decrypt_inout_detached(
            &Nonce::<Aes256Gcm>::from(nonce),
            aad.as_str().as_bytes(),
            buffer.as_mut_slice().into(),
            &Tag::<Aes256Gcm>::from(tag),
        )
        .map_err(|_| CryptError::Decrypt)?;
    Ok(buffer)
}

/// What the registry can check without the key: the magic and a length that
/// holds at least a nonce and a tag.
pub fn check_envelope_shape(envelope: &[u8]) -> Result<(), CryptError> {
    if !envelope.starts_with(MAGIC) {
        return Err(CryptError::BadMagic);
    }
    if envelope.len() < MIN_ENVELOPE_LEN {
        return Err(CryptError::TooShort(envelope.len()));
    }
    Ok(())
}

fn derive_nonce(key: &PromptKey, aad: &Aad, plaintext: &[u8]) -> [u8; NONCE_LEN] {
    // HMAC takes a key of any length, so this never fails.
    let mut mac = <Hmac<Sha256> as KeyInit>::new_from_slice(key.0.as_ref())
        .expect("HMAC accepts any key length");
    mac.update(aad.as_str().as_bytes());
    mac.update(&[0]);
    mac.update(plaintext);
    let digest = mac.finalize().into_bytes();
    let mut nonce = [0u8; NONCE_LEN];
    nonce.copy_from_slice(&digest[..NONCE_LEN]);
    nonce
}

#[cfg(test)]
mod tests {
    use super::*;

    fn aad(member: &str) -> Aad {
        Aad::new(
            Kind::Agent,
            &PackageName::new("demo").unwrap(),
            &Version::parse("1.0.0").unwrap(),
            &MemberPath::new(member).unwrap(),
        )
    }

    #[test]
    fn aad_spells_the_member() {
        assert_eq!(aad("prompt.yaml").as_str(), "agent/demo@1.0.0/prompt.yaml");
    }

    #[test]
    fn seal_is_deterministic_and_opens() {
        let key = PromptKey::from_bytes([7; 32]);
        let a = seal(&key, &aad("prompt.yaml"), b"secret").unwrap();
        let b = seal(&key, &aad("prompt.yaml"), b"secret").unwrap();
        assert_eq!(a, b);
        assert_eq!(a.len(), MIN_ENVELOPE_LEN + 6);
        assert_eq!(
            open(&key, &aad("prompt.yaml"), &a).unwrap().as_slice(),
            b"secret"
        );
        let c = seal(&key, &aad("prompt.yaml"), b"secreT").unwrap();
        assert_ne!(a[8..20], c[8..20], "nonce depends on the plaintext");
    }

    #[test]
    fn key_file_round_trip_and_refusals() {
        let key = PromptKey::generate().unwrap();
        let text = key.to_key_file();
        assert!(text.ends_with('\n'));
        let again = PromptKey::from_key_file(&text).unwrap();
        assert_eq!(key.as_bytes(), again.as_bytes());
        assert!(matches!(
            PromptKey::from_key_file("AAAA\nAAAA\n"),
            Err(CryptError::KeyFile(_))
        ));
        assert!(matches!(
            PromptKey::from_key_file("AAAA\n"),
            Err(CryptError::KeyFile(m)) if m.contains("3 bytes")
        ));
        assert!(matches!(
            PromptKey::from_key_file("not base64!"),
            Err(CryptError::KeyFile(_))
        ));
        assert_eq!(format!("{key:?}"), "PromptKey(..)");
    }

    #[test]
    fn shape_checks() {
        assert_eq!(
            check_envelope_shape(b"AGLENC2\n"),
            Err(CryptError::BadMagic)
        );
        assert_eq!(
            check_envelope_shape(b"AGLENC1\n0123"),
            Err(CryptError::TooShort(12))
        );
        assert_eq!(
            check_envelope_shape(&[MAGIC.as_slice(), &[0; 28]].concat()),
            Ok(())
        );
    }
}
