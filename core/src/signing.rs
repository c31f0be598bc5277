//! Ed25519 signing keys in the formats OpenSSL speaks (PKCS#8 and SPKI PEM),
//! so a container can be checked with `openssl pkeyutl` and no code of ours.
//!
//! Every public key this module parses is refused when it is weak (a
//! small-order point): such a key makes a signature valid for almost any
//! message, and `verify_strict` would reject all its signatures anyway, so
//! accepting one at registration could only mislead.

use std::{fmt, str::FromStr};

use ed25519_dalek::{
    Signature, SigningKey, VerifyingKey,
    pkcs8::{
        DecodePrivateKey, DecodePublicKey, EncodePrivateKey, EncodePublicKey, KeypairBytes,
        spki::der::pem::LineEnding,
    },
};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use sha2::{Digest, Sha256};
use zeroize::Zeroizing;

/// Length of a raw Ed25519 signature, as stored in `signature.sig`.
pub const SIGNATURE_LEN: usize = 64;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SigningError {
    #[error("not a PKCS#8 PEM Ed25519 private key (BEGIN PRIVATE KEY): {0}")]
    PrivateKeyPem(String),
    #[error("not an SPKI PEM Ed25519 public key (BEGIN PUBLIC KEY): {0}")]
    PublicKeyPem(String),
    #[error("public key is not a valid Ed25519 point")]
    InvalidPublicKey,
    #[error("public key is weak (a small-order point) and is refused")]
    WeakKey,
    #[error("signature is {0} bytes; an Ed25519 signature is exactly {SIGNATURE_LEN}")]
    SignatureLength(usize),
    #[error("signature does not verify with this public key")]
    BadSignature,
    #[error("the operating system's random number generator failed: {0}")]
    Random(String),
    #[error("{0:?} is not a key id (64 lowercase hex characters)")]
    InvalidKeyId(String),
}

/// A key id: the lowercase hex SHA-256 of the raw 32-byte public key.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct KeyId(String);

impl KeyId {
    pub fn new(id: impl Into<String>) -> Result<Self, SigningError> {
        let id = id.into();
        let well_formed = id.len() == 64
            && id
                .bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b));
        if well_formed {
            Ok(Self(id))
        } else {
            Err(SigningError::InvalidKeyId(id))
        }
    }

    /// The id of a raw 32-byte public key.
    pub fn of_raw_public_key(raw: &[u8; 32]) -> Self {
        Self(hex::encode(Sha256::digest(raw)))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for KeyId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl FromStr for KeyId {
    type Err = SigningError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::new(s)
    }
}

impl Serialize for KeyId {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.0)
    }
}

impl<'de> Deserialize<'de> for KeyId {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Self::new(String::deserialize(d)?).map_err(serde::de::Error::custom)
    }
}

/// An Ed25519 private key. The inner `SigningKey` zeroizes itself on drop.
pub struct SecretKey(SigningKey);

impl SecretKey {
    /// A fresh key from the operating system's random number generator.
    pub fn generate() -> Result<Self, SigningError> {
        let mut seed = Zeroizing::new([0u8; 32]);
        getrandom::fill(seed.as_mut()).map_err(|e| SigningError::Random(e.to_string()))?;
        Ok(Self(SigningKey::from_bytes(&seed)))
    }

    /// Reads a `BEGIN PRIVATE KEY` document, as `openssl genpkey -algorithm
    /// ed25519` writes it.
    pub fn from_pkcs8_pem(pem: &str) -> Result<Self, SigningError> {
        SigningKey::from_pkcs8_pem(pem)
            .map(Self)
            .map_err(|e| SigningError::PrivateKeyPem(e.to_string()))
    }

    /// The key as a `BEGIN PRIVATE KEY` document (LF line endings), in the
    /// PKCS#8 v1 form `openssl genpkey` writes: seed only. The v2 form that
    /// `SigningKey` writes (with the public key appended) is refused by
    /// OpenSSL 3.0 (`openssl pkey`: "unsupported").
    pub fn to_pkcs8_pem(&self) -> Zeroizing<String> {
        let seed_only = KeypairBytes {
            secret_key: self.0.to_bytes(),
            public_key: None,
        };
        // Encoding a 32-byte seed into a fixed ASN.1 structure cannot fail;
        // the library's Result covers other key types.
        seed_only
            .to_pkcs8_pem(LineEnding::LF)
            .expect("an Ed25519 seed always encodes as PKCS#8")
    }

    pub fn public_key(&self) -> PublicKey {
        PublicKey(self.0.verifying_key())
    }

    /// The raw 64-byte signature over `message`.
    pub fn sign(&self, message: &[u8]) -> [u8; SIGNATURE_LEN] {
        use ed25519_dalek::Signer;
        self.0.sign(message).to_bytes()
    }
}

impl fmt::Debug for SecretKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SecretKey")
            .field("key_id", &self.public_key().key_id())
            .finish_non_exhaustive()
    }
}

/// An Ed25519 public key; never weak (see the module documentation).
#[derive(Clone, PartialEq, Eq)]
pub struct PublicKey(VerifyingKey);

impl PublicKey {
    /// Reads a `BEGIN PUBLIC KEY` document. Weak keys are refused.
    pub fn from_spki_pem(pem: &str) -> Result<Self, SigningError> {
        let key = VerifyingKey::from_public_key_pem(pem)
            .map_err(|e| SigningError::PublicKeyPem(e.to_string()))?;
        Self::checked(key)
    }

    /// From the raw 32-byte encoding. Weak keys are refused.
    pub fn from_raw(raw: &[u8; 32]) -> Result<Self, SigningError> {
        let key = VerifyingKey::from_bytes(raw).map_err(|_| SigningError::InvalidPublicKey)?;
        Self::checked(key)
    }

    fn checked(key: VerifyingKey) -> Result<Self, SigningError> {
        if key.is_weak() {
            return Err(SigningError::WeakKey);
        }
        Ok(Self(key))
    }

    /// The key as a `BEGIN PUBLIC KEY` document (LF line endings).
    pub fn to_spki_pem(&self) -> String {
        // A valid point always encodes; the Result covers other key types.
        self.0
            .to_public_key_pem(LineEnding::LF)
            .expect("an Ed25519 point always encodes as SPKI")
    }

    pub fn to_raw(&self) -> [u8; 32] {
        self.0.to_bytes()
    }

    pub fn key_id(&self) -> KeyId {
        KeyId::of_raw_public_key(self.0.as_bytes())
    }

    /// Checks a raw signature with `verify_strict`, which also refuses
    /// non-canonical and small-order signature components.
    pub fn verify(&self, message: &[u8], signature: &[u8]) -> Result<(), SigningError> {
        let bytes: [u8; SIGNATURE_LEN] = signature
            .try_into()
            .map_err(|_| SigningError::SignatureLength(signature.len()))?;
        self.0
            .verify_strict(message, &Signature::from_bytes(&bytes))
            .map_err(|_| SigningError::BadSignature)
    }
}

impl fmt::Debug for PublicKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("PublicKey").field(&self.key_id()).finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_id_validates() {
        assert!(KeyId::new("a".repeat(64)).is_ok());
        for bad in [
            "A".repeat(64),
            "a".repeat(63),
            "g".repeat(64),
            String::new(),
        ] {
            assert_eq!(
                KeyId::new(bad.clone()),
                Err(SigningError::InvalidKeyId(bad))
            );
        }
        let parsed: Result<KeyId, _> = serde_json::from_str("\"ABC\"");
        assert!(parsed.is_err());
    }

    #[test]
    fn pem_round_trip_sign_verify() {
        let key = SecretKey::generate().unwrap();
        let again = SecretKey::from_pkcs8_pem(&key.to_pkcs8_pem()).unwrap();
        assert_eq!(key.public_key(), again.public_key());
        let public = PublicKey::from_spki_pem(&key.public_key().to_spki_pem()).unwrap();
        let sig = again.sign(b"hello");
        public.verify(b"hello", &sig).unwrap();
        assert_eq!(
            public.verify(b"hellO", &sig),
            Err(SigningError::BadSignature)
        );
        assert_eq!(
            public.verify(b"hello", &sig[..63]),
            Err(SigningError::SignatureLength(63))
        );
        let expected = hex::encode(Sha256::digest(public.to_raw()));
        assert_eq!(public.key_id().as_str(), expected);
    }

    #[test]
    fn weak_keys_are_refused() {
        // The identity point (y = 1) has order 1: the textbook weak key.
        let mut identity = [0u8; 32];
        identity[0] = 1;
        assert_eq!(
            PublicKey::from_raw(&identity).unwrap_err(),
            SigningError::WeakKey
        );
        let spki = VerifyingKey::from_bytes(&identity)
            .unwrap()
            .to_public_key_pem(LineEnding::LF)
            .unwrap();
        assert_eq!(
            PublicKey::from_spki_pem(&spki).unwrap_err(),
            SigningError::WeakKey
        );
    }

    #[test]
    fn wrong_pem_labels_are_refused() {
        let key = SecretKey::generate().unwrap();
        let public_pem = key.public_key().to_spki_pem();
        assert!(matches!(
            SecretKey::from_pkcs8_pem(&public_pem),
            Err(SigningError::PrivateKeyPem(_))
        ));
        assert!(matches!(
            PublicKey::from_spki_pem(&key.to_pkcs8_pem()),
            Err(SigningError::PublicKeyPem(_))
        ));
    }
}
