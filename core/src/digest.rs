//! The one SHA-256 digest type. A digest has two spellings and every use
//! says which: bare hex (`manifest.json`, object keys, database columns, the
//! `ETag`; the type's own `Serialize`) and `sha256:<hex>` (`agent.lock`,
//! through [`prefixed`]). Both are lowercase only: one digest, one spelling,
//! or byte-identical files stop being a thing. There is deliberately no
//! `Display`, so no text picks a spelling by accident.

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer, de};
use sha2::Digest as _;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DigestError {
    #[error("{0:?} is not a SHA-256 digest (64 lowercase hex characters)")]
    Hex(String),
    #[error("{0:?} is not a hash of the form sha256:<64 lowercase hex digits>")]
    Prefixed(String),
}

#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Sha256Digest([u8; 32]);

impl Sha256Digest {
    pub const PREFIX: &'static str = "sha256:";

    /// The digest of `bytes`.
    pub fn of(bytes: &[u8]) -> Self {
        Self(sha2::Sha256::digest(bytes).into())
    }

    pub fn from_bytes(bytes: [u8; 32]) -> Self {
        Self(bytes)
    }

    pub fn as_bytes(&self) -> &[u8; 32] {
        &self.0
    }

    /// Whether `bytes` hash to this digest.
    pub fn matches(&self, bytes: &[u8]) -> bool {
        Self::of(bytes) == *self
    }

    /// 64 lowercase hex digits.
    pub fn parse_hex(text: &str) -> Result<Self, DigestError> {
        decode_lowercase(text).ok_or_else(|| DigestError::Hex(text.to_owned()))
    }

    /// `sha256:` and 64 lowercase hex digits.
    pub fn parse_prefixed(text: &str) -> Result<Self, DigestError> {
        text.strip_prefix(Self::PREFIX)
            .and_then(decode_lowercase)
            .ok_or_else(|| DigestError::Prefixed(text.to_owned()))
    }

    /// The bare spelling, on the stack: a registry writes one per file and
    /// per tool of every lock it serves.
    pub fn hex(&self) -> Hex {
        let mut out = [0u8; 64];
        // Cannot fail: the buffer is exactly twice the digest's length.
        let _ = base16ct::lower::encode(&self.0, &mut out);
        Hex(out)
    }

    pub fn to_hex(&self) -> String {
        self.hex().as_str().to_owned()
    }

    /// `sha256:<hex>`, the lockfile's spelling.
    pub fn to_prefixed(&self) -> String {
        format!("{}{}", Self::PREFIX, self.hex())
    }
}

/// One pass over the text: `base16ct`'s lower decoder refuses uppercase
/// digits itself, so nothing checks the text first.
fn decode_lowercase(text: &str) -> Option<Sha256Digest> {
    if text.len() != 64 {
        return None;
    }
    let mut bytes = [0u8; 32];
    base16ct::lower::decode(text, &mut bytes).ok()?;
    Some(Sha256Digest(bytes))
}

/// 64 lowercase hex digits on the stack.
#[derive(Clone, Copy)]
pub struct Hex([u8; 64]);

impl Hex {
    pub fn as_str(&self) -> &str {
        // Hex digits are ASCII.
        std::str::from_utf8(&self.0).unwrap_or_default()
    }
}

impl fmt::Display for Hex {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl fmt::Debug for Sha256Digest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Sha256Digest({})", self.hex())
    }
}

impl Serialize for Sha256Digest {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.hex().as_str())
    }
}

impl<'de> Deserialize<'de> for Sha256Digest {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = <std::borrow::Cow<'de, str>>::deserialize(d)?;
        Self::parse_hex(&text).map_err(de::Error::custom)
    }
}

/// `#[serde(with = "digest::prefixed")]`: the `sha256:<hex>` spelling, and
/// [`prefixed::option`] and [`prefixed::map`] for the fields that hold one
/// optionally or per key.
pub mod prefixed {
    use std::collections::BTreeMap;

    use super::*;

    pub fn serialize<S: Serializer>(digest: &Sha256Digest, s: S) -> Result<S::Ok, S::Error> {
        let prefix = Sha256Digest::PREFIX.as_bytes();
        let mut text = [0u8; 7 + 64];
        text[..prefix.len()].copy_from_slice(prefix);
        text[prefix.len()..].copy_from_slice(&digest.hex().0);
        s.serialize_str(std::str::from_utf8(&text).unwrap_or_default())
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Sha256Digest, D::Error> {
        let text = <std::borrow::Cow<'de, str>>::deserialize(d)?;
        Sha256Digest::parse_prefixed(&text).map_err(de::Error::custom)
    }

    /// The adapter the container helpers hand to serde; not a type anyone holds.
    struct Prefixed(Sha256Digest);

    impl Serialize for Prefixed {
        fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
            serialize(&self.0, s)
        }
    }

    impl<'de> Deserialize<'de> for Prefixed {
        fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
            deserialize(d).map(Prefixed)
        }
    }

    /// `Option<Sha256Digest>` spelled `sha256:<hex>` when present.
    pub mod option {
        use super::*;

        pub fn serialize<S: Serializer>(
            digest: &Option<Sha256Digest>,
            s: S,
        ) -> Result<S::Ok, S::Error> {
            digest.map(Prefixed).serialize(s)
        }

        pub fn deserialize<'de, D: Deserializer<'de>>(
            d: D,
        ) -> Result<Option<Sha256Digest>, D::Error> {
            Ok(Option::<Prefixed>::deserialize(d)?.map(|p| p.0))
        }
    }

    /// `BTreeMap<K, Sha256Digest>` whose values are spelled `sha256:<hex>`.
    pub mod map {
        use super::*;

        pub fn serialize<K: Serialize, S: Serializer>(
            map: &BTreeMap<K, Sha256Digest>,
            s: S,
        ) -> Result<S::Ok, S::Error> {
            s.collect_map(map.iter().map(|(k, v)| (k, Prefixed(*v))))
        }

        pub fn deserialize<'de, K: Deserialize<'de> + Ord, D: Deserializer<'de>>(
            d: D,
        ) -> Result<BTreeMap<K, Sha256Digest>, D::Error> {
            let map = BTreeMap::<K, Prefixed>::deserialize(d)?;
            Ok(map.into_iter().map(|(k, v)| (k, v.0)).collect())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_digest_two_spellings() {
        let d = Sha256Digest::of(b"abc");
        let hex = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad";
        assert_eq!(d.to_hex(), hex);
        assert_eq!(d.to_prefixed(), format!("sha256:{hex}"));
        assert_eq!(Sha256Digest::parse_hex(hex), Ok(d));
        assert_eq!(Sha256Digest::parse_prefixed(&d.to_prefixed()), Ok(d));
        assert!(d.matches(b"abc") && !d.matches(b"abd"));
        assert_eq!(
            Sha256Digest::of(b"").to_hex(),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
    }

    #[test]
    fn each_spelling_refuses_the_other_and_every_near_miss() {
        let hex = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad";
        for bad in [
            format!("sha256:{hex}"),
            hex.to_uppercase(),
            "abc".to_owned(),
            "../../etc/passwd".to_owned(),
            format!("{hex}00"),
            format!("{}z", &hex[..63]),
            hex[..62].to_owned(),
            // One uppercase digit, and a two-byte character in 64 bytes.
            format!("{}A{}", &hex[..10], &hex[11..]),
            format!("{}\u{e9}", &hex[..62]),
            // The bytes either side of each range of digits.
            format!("/{}", &hex[1..]),
            format!(":{}", &hex[1..]),
            format!("`{}", &hex[1..]),
            format!("g{}", &hex[1..]),
        ] {
            assert_eq!(
                Sha256Digest::parse_hex(&bad),
                Err(DigestError::Hex(bad.clone()))
            );
        }
        for bad in [
            hex.to_owned(),
            format!("sha256:{}", hex.to_uppercase()),
            "sha256:ba7816bf".to_owned(),
            format!("sha512:{hex}"),
            format!("sha256:{}z", &hex[..63]),
        ] {
            assert_eq!(
                Sha256Digest::parse_prefixed(&bad),
                Err(DigestError::Prefixed(bad.clone()))
            );
        }
    }

    #[test]
    fn serde_spells_bare_by_default_and_prefixed_on_request() {
        #[derive(Serialize, Deserialize, PartialEq, Debug)]
        struct Both {
            bare: Sha256Digest,
            #[serde(with = "prefixed")]
            lock: Sha256Digest,
            #[serde(with = "prefixed::option")]
            maybe: Option<Sha256Digest>,
            #[serde(with = "prefixed::map")]
            files: std::collections::BTreeMap<String, Sha256Digest>,
        }
        let d = Sha256Digest::of(b"abc");
        let both = Both {
            bare: d,
            lock: d,
            maybe: Some(d),
            files: [("a".to_owned(), d)].into(),
        };
        let json = serde_json::to_string(&both).unwrap();
        let h = d.to_hex();
        assert_eq!(
            json,
            format!(
                r#"{{"bare":"{h}","lock":"sha256:{h}","maybe":"sha256:{h}","files":{{"a":"sha256:{h}"}}}}"#
            )
        );
        assert_eq!(serde_json::from_str::<Both>(&json).unwrap(), both);
        let none = format!(r#"{{"bare":"{h}","lock":"sha256:{h}","maybe":null,"files":{{}}}}"#);
        assert_eq!(serde_json::from_str::<Both>(&none).unwrap().maybe, None);
        for swapped in [
            format!(r#"{{"bare":"sha256:{h}","lock":"sha256:{h}","maybe":null,"files":{{}}}}"#),
            format!(r#"{{"bare":"{h}","lock":"{h}","maybe":null,"files":{{}}}}"#),
            format!(r#"{{"bare":"{h}","lock":"sha256:{h}","maybe":"{h}","files":{{}}}}"#),
            format!(r#"{{"bare":"{h}","lock":"sha256:{h}","maybe":null,"files":{{"a":"{h}"}}}}"#),
        ] {
            assert!(serde_json::from_str::<Both>(&swapped).is_err(), "{swapped}");
        }
    }
}
