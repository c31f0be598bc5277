//! Random secrets and their stored form: a secret is shown once and only
//! its SHA-256 is kept, so a read of the database hands out no credential.

use hmac::{Hmac, KeyInit, Mac};
use sha2::{Digest, Sha256};

/// 32 random bytes as lowercase hex.
pub fn random_hex() -> Result<String, getrandom::Error> {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes)?;
    Ok(hex::encode(bytes))
}

/// The stored form of a random secret: lowercase hex SHA-256. A fast hash
/// is enough for 256-bit random secrets (nothing to guess).
pub fn secret_hash(secret: &str) -> String {
    hex::encode(Sha256::digest(secret.as_bytes()))
}

/// Compares without an early exit, so timing does not reveal how much of a
/// guess was right.
pub fn constant_time_eq(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// The key a prompt recipient's registration challenge is MACed with
/// (`grants`): derived from the registry's signing secret (shared by every
/// replica), for this use only.
#[derive(Clone)]
pub struct ProofKey([u8; 32]);

impl ProofKey {
    pub fn derive(secret: &[u8]) -> Self {
        let mut mac =
            <Hmac<Sha256> as KeyInit>::new_from_slice(secret).expect("HMAC accepts any key length");
        mac.update(b"agentlang-recipient-proof-key\n");
        Self(mac.finalize().into_bytes().into())
    }

    pub(crate) fn mac(&self, text: &str) -> String {
        let mut mac = <Hmac<Sha256> as KeyInit>::new_from_slice(&self.0)
            .expect("HMAC accepts any key length");
        mac.update(text.as_bytes());
        hex::encode(mac.finalize().into_bytes())
    }
}

impl std::fmt::Debug for ProofKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ProofKey(..)")
    }
}

/// Second factor: the key TOTP secrets are sealed with (AES-256-GCM,
/// the account's id as associated data) and pending catalog sign-ins are
/// MACed with, derived from the registry's signing secret (every replica
/// has it), for these uses only.
#[derive(Clone)]
pub struct TwoFactorKey([u8; 32]);

const GCM_NONCE_LEN: usize = 12;
const GCM_TAG_LEN: usize = 16;

impl TwoFactorKey {
    pub fn derive(secret: &[u8]) -> Self {
        let mut mac =
            <Hmac<Sha256> as KeyInit>::new_from_slice(secret).expect("HMAC accepts any key length");
        mac.update(b"agentlang-two-factor-secret-key\n");
        Self(mac.finalize().into_bytes().into())
    }

    /// Hex of a random nonce, then the ciphertext with its tag.
    pub(crate) fn seal(&self, account_id: i64, plain: &[u8]) -> Result<String, String> {
        use aes_gcm::{
            Aes256Gcm,
            aead::{AeadInOut, Nonce},
        };
        let mut nonce = [0u8; GCM_NONCE_LEN];
        getrandom::fill(&mut nonce).map_err(|e| e.to_string())?;
        let mut body = plain.to_vec();
        let tag = <Aes256Gcm as aes_gcm::KeyInit>::new(&self.0.into())
            .encrypt_inout_detached(
                &Nonce::<Aes256Gcm>::from(nonce),
                &account_id.to_be_bytes(),
                body.as_mut_slice().into(),
            )
            .map_err(|e| e.to_string())?;
        let mut stored = nonce.to_vec();
        stored.extend_from_slice(&body);
        stored.extend_from_slice(&tag);
        Ok(hex::encode(stored))
    }

    /// The plaintext, when `sealed` is this key's for this account.
    pub(crate) fn open(&self, account_id: i64, sealed: &str) -> Option<Vec<u8>> {
        use aes_gcm::{
            Aes256Gcm,
            aead::{AeadInOut, Nonce, Tag},
        };
        let bytes = hex::decode(sealed).ok()?;
        if bytes.len() < GCM_NONCE_LEN + GCM_TAG_LEN {
            return None;
        }
        let (nonce, rest) = bytes.split_at(GCM_NONCE_LEN);
        let (body, tag) = rest.split_at(rest.len() - GCM_TAG_LEN);
        let nonce: [u8; GCM_NONCE_LEN] = nonce.try_into().ok()?;
        let tag: [u8; GCM_TAG_LEN] = tag.try_into().ok()?;
        let mut body = body.to_vec();
        <Aes256Gcm as aes_gcm::KeyInit>::new(&self.0.into())
            .decrypt_inout_detached(
                &Nonce::<Aes256Gcm>::from(nonce),
                &account_id.to_be_bytes(),
                body.as_mut_slice().into(),
                &Tag::<Aes256Gcm>::from(tag),
            )
            .ok()?;
        Some(body)
    }

    /// The MAC of a pending sign-in's text, under a sub-key of its own.
    pub(crate) fn pending_mac(&self, text: &str) -> String {
        let mut mac = <Hmac<Sha256> as KeyInit>::new_from_slice(&self.0)
            .expect("HMAC accepts any key length");
        mac.update(b"agentlang-pending-sign-in\n");
        mac.update(text.as_bytes());
        hex::encode(mac.finalize().into_bytes())
    }
}

impl std::fmt::Debug for TwoFactorKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("TwoFactorKey(..)")
    }
}

/// The smallest signing secret accepted: 32 bytes.
pub const MIN_SECRET_LEN: usize = 32;
/// What a secret's characters must be worth, estimated: 32 random bytes
/// as hex are worth about 235 bits, a readable phrase of 40 characters
/// about 115.
const MIN_SECRET_BITS: f64 = 128.0;

/// Refuses a configured signing secret that cannot be a random one: too
/// short, a placeholder from the documentation, a repetition, or of low
/// estimated entropy. The message says how to make a good one.
pub fn check_secret_strength(secret: &str) -> Result<(), String> {
    const HOW: &str = "generate one with `openssl rand -hex 32`";
    if secret.len() < MIN_SECRET_LEN {
        return Err(format!(
            "the secret is {} bytes; at least {MIN_SECRET_LEN} random bytes are needed ({HOW})",
            secret.len()
        ));
    }
    let lower = secret.to_ascii_lowercase();
    if [
        "change-me",
        "changeme",
        "replace-me",
        "example",
        "placeholder",
    ]
    .iter()
    .any(|marker| lower.contains(marker))
    {
        return Err(format!(
            "the secret is the documentation's placeholder ({HOW})"
        ));
    }
    let bytes = secret.as_bytes();
    let repeats = (1..=bytes.len() / 2).any(|period| {
        bytes.len().is_multiple_of(period) && bytes.chunks(period).all(|c| c == &bytes[..period])
    });
    if repeats {
        return Err(format!("the secret is a repetition ({HOW})"));
    }
    if estimated_bits(bytes) < MIN_SECRET_BITS {
        return Err(format!(
            "the secret has too little entropy to be random ({HOW})"
        ));
    }
    Ok(())
}

/// Shannon entropy of the byte distribution times the length: a rough,
/// linear estimate that readable text falls well short of.
fn estimated_bits(bytes: &[u8]) -> f64 {
    let mut counts = [0u32; 256];
    for &b in bytes {
        counts[usize::from(b)] += 1;
    }
    let n = bytes.len() as f64;
    let per_byte: f64 = counts
        .iter()
        .filter(|&&c| c > 0)
        .map(|&c| {
            let p = f64::from(c) / n;
            -p * p.log2()
        })
        .sum();
    per_byte * n
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_are_random_and_stored_hashed() {
        let secret = random_hex().unwrap();
        assert_eq!(secret.len(), 64);
        assert_ne!(random_hex().unwrap(), secret);
        let hash = secret_hash(&secret);
        assert_ne!(hash, secret);
        assert_eq!(hash, secret_hash(&secret));
        assert!(constant_time_eq(&hash, &secret_hash(&secret)));
        assert!(!constant_time_eq(&hash, &secret));
        assert!(!constant_time_eq("ab", "abc"));
    }

    #[test]
    fn two_factor_secrets_open_only_for_their_account_and_key() {
        let key = TwoFactorKey::derive(b"a secret of the registry, long enough to sign with");
        let sealed = key.seal(7, b"twenty bytes secret!").unwrap();
        assert_eq!(key.open(7, &sealed).unwrap(), b"twenty bytes secret!");
        assert!(key.open(8, &sealed).is_none());
        let other = TwoFactorKey::derive(b"another registry's secret, long enough too");
        assert!(other.open(7, &sealed).is_none());
        assert_ne!(key.pending_mac("1.2"), other.pending_mac("1.2"));
    }

    #[test]
    fn weak_signing_secrets_are_refused_with_a_reason() {
        assert!(check_secret_strength(&random_hex().unwrap()).is_ok());
        for (weak, why) in [
            ("0123456789abcdef", "bytes"),
            (
                "change-me-to-64-random-hex-characters-before-any-real-use-0000",
                "placeholder",
            ),
            (&"0123456789abcdef".repeat(4), "repetition"),
            (&"a".repeat(64), "repetition"),
            ("test-secret-test-secret-test-secret-0123", "entropy"),
            ("browser-test-secret-browser-test-secret", "entropy"),
        ] {
            let err = check_secret_strength(weak).unwrap_err();
            assert!(err.contains(why), "{weak}: {err}");
            assert!(err.contains("openssl rand -hex 32"), "{err}");
        }
    }
}
