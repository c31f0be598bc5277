//! Prompt-key grants (docs/prompt-grants.md): a sealed agent's prompt key,
//! wrapped by its owner to a grantee's age X25519 recipients
//! (age-encryption.org/v1, ASCII-armored), so the registry stores and
//! serves only files it cannot open. The plaintext of a wrapped key is
//! the prompt key file's content (one line of base64 and a newline), so
//! `age -d -i IDENTITY` gives a file `--prompt-key` reads.
//!
//! What both sides agree on lives here: the bounds, the recipient and
//! identity forms, wrapping and unwrapping, and the commitment a grant's
//! log entry carries instead of the grantee's name.

use std::{fmt, io::Write, iter, str::FromStr};

use age::{
    armor::{ArmoredReader, ArmoredWriter, Format},
    secrecy::ExposeSecret,
};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use zeroize::Zeroizing;

use crate::{Username, crypt::PromptKeyId, digest::Sha256Digest};

/// Prompt recipients one account may register.
pub const MAX_RECIPIENTS_PER_ACCOUNT: usize = 8;
/// Live grants one agent may have.
pub const MAX_GRANTS_PER_AGENT: usize = 1_000;
/// The largest wrapped key the registry stores: an armored age file to
/// [`MAX_RECIPIENTS_PER_ACCOUNT`] recipients is about 1.5 KiB.
pub const MAX_WRAPPED_BYTES: usize = 8 * 1024;
/// The longest version range a grant may name.
pub const MAX_VERSIONS_LEN: usize = 256;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GrantError {
    #[error("{0:?} is not an age X25519 recipient (age1…)")]
    Recipient(String),
    #[error("not an age X25519 identity file (AGE-SECRET-KEY-1…): {0}")]
    Identity(String),
    #[error("a wrapped key is at most {MAX_WRAPPED_BYTES} bytes; this one is {0}")]
    TooLarge(usize),
    #[error("not an armored age file to X25519 recipients: {0}")]
    NotWrapped(String),
    #[error("cannot wrap the key: {0}")]
    Wrap(String),
    #[error("this identity cannot open the wrapped key: {0}")]
    Unwrap(String),
}

/// Whether an agent's prompt is readable by anyone (`open`: `prompt.yaml`
/// in plaintext) or only by those holding its key (`sealed`:
/// `prompt.yaml.enc`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "lowercase")]
pub enum PromptMode {
    Open,
    Sealed,
}

impl PromptMode {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Open => "open",
            Self::Sealed => "sealed",
        }
    }
}

impl fmt::Display for PromptMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// An age X25519 recipient (`age1…`, Bech32), in its canonical spelling.
#[derive(Clone)]
pub struct Recipient(age::x25519::Recipient);

impl Recipient {
    pub fn parse(text: &str) -> Result<Self, GrantError> {
        let bad = || GrantError::Recipient(text.chars().take(80).collect());
        // Bech32 is case-insensitive; one spelling is kept.
        if text.len() > 100 || text != text.to_ascii_lowercase() {
            return Err(bad());
        }
        age::x25519::Recipient::from_str(text)
            .map(Self)
            .map_err(|_| bad())
    }
}

impl fmt::Display for Recipient {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

impl fmt::Debug for Recipient {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Recipient({self})")
    }
}

impl PartialEq for Recipient {
    fn eq(&self, other: &Self) -> bool {
        self.to_string() == other.to_string()
    }
}

impl Eq for Recipient {}

impl Serialize for Recipient {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Recipient {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = <std::borrow::Cow<'de, str>>::deserialize(d)?;
        Self::parse(&text).map_err(serde::de::Error::custom)
    }
}

/// An age X25519 identity: the private half of a [`Recipient`]. Never
/// printed.
pub struct Identity(age::x25519::Identity);

impl Identity {
    pub fn generate() -> Self {
        Self(age::x25519::Identity::generate())
    }

    /// Reads an identity file as `age-keygen` writes it: `#` comments and
    /// one `AGE-SECRET-KEY-1…` line.
    pub fn from_file_text(text: &str) -> Result<Self, GrantError> {
        let mut keys = text
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty() && !l.starts_with('#'));
        let (Some(line), None) = (keys.next(), keys.next()) else {
            return Err(GrantError::Identity(
                "it must hold exactly one key line".into(),
            ));
        };
        age::x25519::Identity::from_str(line)
            .map(Self)
            .map_err(|e| GrantError::Identity(e.to_string()))
    }

    /// The file `age-keygen` would write: its recipient in a comment, then
    /// the key. Zeroized on drop.
    pub fn to_file_text(&self) -> Zeroizing<String> {
        let mut text = Zeroizing::new(format!("# public key: {}\n", self.recipient()));
        text.push_str(self.0.to_string().expose_secret());
        text.push('\n');
        text
    }

    pub fn recipient(&self) -> Recipient {
        Recipient(self.0.to_public())
    }
}

impl fmt::Debug for Identity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Identity({})", self.recipient())
    }
}

/// Encrypts `plaintext` to every one of `recipients` as one armored age
/// file (any of their identities opens it).
pub fn wrap(recipients: &[Recipient], plaintext: &[u8]) -> Result<String, GrantError> {
    let wrap_err = |e: &dyn fmt::Display| GrantError::Wrap(e.to_string());
    let encryptor =
        age::Encryptor::with_recipients(recipients.iter().map(|r| &r.0 as &dyn age::Recipient))
            .map_err(|e| wrap_err(&e))?;
    let mut armored = Vec::new();
    let mut writer = encryptor
        .wrap_output(
            ArmoredWriter::wrap_output(&mut armored, Format::AsciiArmor)
                .map_err(|e| wrap_err(&e))?,
        )
        .map_err(|e| wrap_err(&e))?;
    writer.write_all(plaintext).map_err(|e| wrap_err(&e))?;
    writer
        .finish()
        .and_then(ArmoredWriter::finish)
        .map_err(|e| wrap_err(&e))?;
    String::from_utf8(armored).map_err(|e| wrap_err(&e))
}

/// Opens a wrapped key with `identity` (armored or binary age).
pub fn unwrap(identity: &Identity, wrapped: &[u8]) -> Result<Zeroizing<Vec<u8>>, GrantError> {
    check_wrapped(wrapped)?;
    age::decrypt(&identity.0, wrapped)
        .map(Zeroizing::new)
        .map_err(|e| GrantError::Unwrap(e.to_string()))
}

/// Checks what the registry stores without opening it: small, and an
/// armored age file whose header parses and is not a passphrase's (scrypt
/// work is the reader's to pay, and a grant is to recipients).
pub fn check_wrapped(wrapped: &[u8]) -> Result<(), GrantError> {
    if wrapped.len() > MAX_WRAPPED_BYTES {
        return Err(GrantError::TooLarge(wrapped.len()));
    }
    if !wrapped.starts_with(b"-----BEGIN AGE ENCRYPTED FILE-----") {
        return Err(GrantError::NotWrapped("no armor line".into()));
    }
    let decryptor = age::Decryptor::new_buffered(ArmoredReader::new(wrapped))
        .map_err(|e| GrantError::NotWrapped(e.to_string()))?;
    if decryptor.is_scrypt() {
        return Err(GrantError::NotWrapped(
            "it is encrypted to a passphrase".into(),
        ));
    }
    Ok(())
}

/// What a grant's log entry says in place of whom it concerns: SHA-256
/// over a domain tag, a random 32-byte salt kept with the grant (shown to
/// its owners and its grantee), the grantee, the key id and the version
/// range. Whoever holds the salt can check the entry; nobody else learns
/// the grantee from the public log.
pub fn commitment(
    salt: &[u8; 32],
    grantee: &Username,
    key_id: &PromptKeyId,
    versions: Option<&str>,
) -> Sha256Digest {
    let digest = Sha256::new()
        .chain_update(b"agentlang-grant\n")
        .chain_update(salt)
        .chain_update(
            iter::once(grantee.as_str())
                .chain(iter::once(key_id.as_str()))
                .chain(iter::once(versions.unwrap_or("")))
                .collect::<Vec<_>>()
                .join("\n"),
        )
        .finalize();
    Sha256Digest::from_bytes(digest.into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_wrapped_key_opens_with_any_of_its_recipients_identities_only() {
        let (a, b, c) = (
            Identity::generate(),
            Identity::generate(),
            Identity::generate(),
        );
        let wrapped = wrap(&[a.recipient(), b.recipient()], b"a2V5\n").unwrap();
        check_wrapped(wrapped.as_bytes()).unwrap();
        assert_eq!(&*unwrap(&a, wrapped.as_bytes()).unwrap(), b"a2V5\n");
        assert_eq!(&*unwrap(&b, wrapped.as_bytes()).unwrap(), b"a2V5\n");
        assert!(matches!(
            unwrap(&c, wrapped.as_bytes()),
            Err(GrantError::Unwrap(_))
        ));
    }

    #[test]
    fn identities_and_recipients_round_trip_their_texts() {
        let id = Identity::generate();
        let again = Identity::from_file_text(&id.to_file_text()).unwrap();
        assert_eq!(again.recipient(), id.recipient());
        let text = id.recipient().to_string();
        assert!(text.starts_with("age1"));
        assert_eq!(Recipient::parse(&text).unwrap(), id.recipient());
        assert!(Recipient::parse(&text.to_ascii_uppercase()).is_err());
        assert!(Recipient::parse("age1nope").is_err());
        assert!(Identity::from_file_text("# nothing\n").is_err());
    }

    #[test]
    fn what_is_not_a_small_armored_age_file_is_refused() {
        assert!(matches!(
            check_wrapped(b"hello"),
            Err(GrantError::NotWrapped(_))
        ));
        let big = vec![b'a'; MAX_WRAPPED_BYTES + 1];
        assert!(matches!(check_wrapped(&big), Err(GrantError::TooLarge(_))));
        let garbled =
            b"-----BEGIN AGE ENCRYPTED FILE-----\nbm90IGFnZQ==\n-----END AGE ENCRYPTED FILE-----\n";
        assert!(matches!(
            check_wrapped(garbled),
            Err(GrantError::NotWrapped(_))
        ));
    }

    #[test]
    fn a_commitment_binds_every_part_of_the_grant() {
        let salt = [7u8; 32];
        let bob = Username::parse("bob").unwrap();
        let key = PromptKeyId::parse("0123456789abcdef").unwrap();
        let base = commitment(&salt, &bob, &key, None);
        assert_ne!(base, commitment(&[8u8; 32], &bob, &key, None));
        assert_ne!(
            base,
            commitment(&salt, &Username::parse("bobby").unwrap(), &key, None)
        );
        assert_ne!(base, commitment(&salt, &bob, &key, Some("^1")));
    }
}
