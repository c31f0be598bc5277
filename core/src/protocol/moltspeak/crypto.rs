//! MoltSpeak's encrypted envelopes: X25519 keys in their `x25519:<base64>`
//! form and NaCl `crypto_box` (X25519, XSalsa20, Poly1305: libsodium's
//! `crypto_box_easy`, PyNaCl's `Box`) of a complete signed message.
//!
//! No clock, no randomness: the caller supplies every nonce (24 random
//! bytes, never reused with the same pair of keys).

use std::fmt;

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use crypto_box::SalsaBox;
use crypto_box::aead::Aead;
use crypto_box::aead::generic_array::GenericArray;
use ed25519_dalek::SigningKey;
use serde::{Serialize, Serializer};
use serde_json::{Value, json};

use super::{
    ENCRYPTION_ALGORITHM, EncryptedEnvelope, ErrorCode, KeyFormatError, Message, MoltError,
    VERSION, decode_prefixed,
};

/// Bytes of an XSalsa20 nonce.
pub const NONCE_BYTES: usize = 24;

/// An X25519 public key, `x25519:` + standard base64 of its 32 bytes.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct EncryptionKey([u8; 32]);

impl EncryptionKey {
    pub fn parse(s: &str) -> Result<Self, KeyFormatError> {
        decode_prefixed::<32>(s, "x25519:")
            .map(Self)
            .map_err(KeyFormatError)
    }

    pub fn from_bytes(bytes: [u8; 32]) -> Self {
        Self(bytes)
    }

    pub fn as_bytes(&self) -> &[u8; 32] {
        &self.0
    }
}

impl fmt::Display for EncryptionKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "x25519:{}", STANDARD.encode(self.0))
    }
}

impl fmt::Debug for EncryptionKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

impl Serialize for EncryptionKey {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

/// An X25519 secret key. Its `Debug` shows only the public half.
#[derive(Clone)]
pub struct EncryptionSecret(crypto_box::SecretKey);

impl EncryptionSecret {
    pub fn from_bytes(bytes: [u8; 32]) -> Self {
        Self(crypto_box::SecretKey::from_bytes(bytes))
    }

    /// The X25519 secret libsodium's `crypto_sign_ed25519_sk_to_curve25519`
    /// derives from an Ed25519 key: the clamped first half of SHA-512 of its
    /// seed. Every holder of the Ed25519 key derives the same one, so one
    /// configured key gives every replica the same `enc_key`.
    pub fn from_ed25519(key: &SigningKey) -> Self {
        let mut scalar = key.to_scalar_bytes();
        scalar[0] &= 248;
        scalar[31] &= 127;
        scalar[31] |= 64;
        Self::from_bytes(scalar)
    }

    pub fn to_bytes(&self) -> [u8; 32] {
        self.0.to_bytes()
    }

    pub fn public_key(&self) -> EncryptionKey {
        EncryptionKey(*self.0.public_key().as_bytes())
    }
}

impl fmt::Debug for EncryptionSecret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("EncryptionSecret")
            .field(&self.public_key())
            .finish()
    }
}

/// The crypto_box state shared by two parties: the X25519 agreement of one
/// side's secret with the other's public key (both sides compute the same).
pub struct SharedBox(SalsaBox);

impl fmt::Debug for SharedBox {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("SharedBox(..)")
    }
}

impl SharedBox {
    pub fn new(own: &EncryptionSecret, peer: &EncryptionKey) -> Self {
        Self(SalsaBox::new(
            &crypto_box::PublicKey::from_bytes(peer.0),
            &own.0,
        ))
    }

    /// `crypto_box_easy`: the 16-byte tag, then the ciphertext.
    pub fn encrypt(&self, nonce: &[u8; NONCE_BYTES], plaintext: &[u8]) -> Vec<u8> {
        // Encryption without associated data cannot fail.
        self.0
            .encrypt(GenericArray::from_slice(nonce), plaintext)
            .unwrap_or_default()
    }

    /// `crypto_box_open_easy`; `None` when the tag does not verify.
    pub fn decrypt(&self, nonce: &[u8; NONCE_BYTES], ciphertext: &[u8]) -> Option<Vec<u8>> {
        self.0
            .decrypt(GenericArray::from_slice(nonce), ciphertext)
            .ok()
    }
}

/// The encrypted envelope carrying `message` (its UTF-8 JSON) from the
/// holder of `sender_public`'s secret, sealed with `shared`, for `session`.
pub fn seal(
    shared: &SharedBox,
    sender_public: &EncryptionKey,
    session: &str,
    nonce: &[u8; NONCE_BYTES],
    message: &Message,
) -> Value {
    let ciphertext = shared.encrypt(nonce, &message.to_vec());
    json!({
        "moltspeak": VERSION,
        "envelope": {
            "encrypted": true,
            "algorithm": ENCRYPTION_ALGORITHM,
            "sender_public": sender_public.to_string(),
            "nonce": format!("base64:{}", STANDARD.encode(nonce)),
            "session": session,
        },
        "ciphertext": format!("base64:{}", STANDARD.encode(ciphertext)),
    })
}

/// Decrypts an envelope and parses the message inside. `E_AUTH_FAILED`
/// when the ciphertext does not open with `shared` (wrong key, tampered);
/// the parse error of the inner message otherwise, its field prefixed by
/// `ciphertext.`.
pub fn open(shared: &SharedBox, envelope: &EncryptedEnvelope) -> Result<Message, MoltError> {
    let plaintext = shared
        .decrypt(&envelope.nonce, &envelope.ciphertext)
        .ok_or_else(|| {
            MoltError::new(
                ErrorCode::AuthFailed,
                "the ciphertext does not open with the session's keys (wrong key or tampered)",
                Some("ciphertext"),
            )
        })?;
    Message::from_slice(&plaintext).map_err(|e| MoltError {
        field: Some(match &e.field {
            Some(f) => format!("ciphertext.{f}"),
            None => "ciphertext".into(),
        }),
        ..e
    })
}
