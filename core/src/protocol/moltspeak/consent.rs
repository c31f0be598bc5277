//! Consent proofs and masking.
//!
//! A consent token is what a `consent` request is answered with, and what
//! `pii_meta.consent.proof` must carry:
//! `consent-token:<base64url(JCS(claims))>.<base64url(Ed25519 signature)>`
//! (URL-safe alphabet, no padding), the signature by the issuer over the
//! claims' JCS bytes. Claims: `{typ: "moltspeak-consent", data_types,
//! purpose, granted_by, key, expires, issued}`; `key` is the Ed25519 key of
//! the agent the consent was granted to. The `typ` member keeps a token from
//! ever being the signing bytes of a message (which has no `typ`).
//!
//! `pii_meta.mask_fields` entries are PII types (`email`) or dotted paths in
//! `p` (`params.attendees`, `p.params.attendees`, `items.0.mail`); [`mask`]
//! replaces what they name by `"[masked]"`.

use std::collections::BTreeSet;

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use ed25519_dalek::{Signature, Signer, SigningKey, VerifyingKey};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{ErrorCode, MoltError, PiiMeta, PublicKey};
use crate::protocol::{canonical, pii};

/// What a proof starts with.
pub const TOKEN_PREFIX: &str = "consent-token:";
/// The claims' `typ`.
pub const TOKEN_TYPE: &str = "moltspeak-consent";
/// Longest token accepted (the claims are bounded by the consent payload's
/// own limits).
pub const MAX_TOKEN_BYTES: usize = 8192;
/// What masked values become.
pub const MASKED: &str = "[masked]";
/// `mask_fields` entries one message may carry.
pub const MAX_MASK_FIELDS: usize = 64;

/// What a consent token binds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ConsentClaims {
    pub typ: String,
    pub data_types: Vec<String>,
    pub purpose: String,
    /// The human who granted it (`user:jane@example.com`).
    pub granted_by: String,
    /// The grantee agent's Ed25519 key (`ed25519:<base64>`).
    pub key: String,
    /// Unix ms.
    pub expires: u64,
    /// Unix ms.
    pub issued: u64,
}

/// Why a token is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TokenError {
    #[error("the proof is not a consent token issued by this registry (malformed: {0})")]
    Malformed(&'static str),
    #[error("the consent token's signature does not verify with the registry's key")]
    BadSignature,
}

impl ConsentClaims {
    fn signing_bytes(&self) -> Vec<u8> {
        let value = serde_json::to_value(self).unwrap_or(Value::Null);
        canonical::to_jcs_bytes(&value).unwrap_or_default()
    }

    /// The token: `consent-token:<claims>.<signature>`.
    pub fn issue(&self, issuer: &SigningKey) -> String {
        let bytes = self.signing_bytes();
        let signature = issuer.sign(&bytes);
        format!(
            "{TOKEN_PREFIX}{}.{}",
            URL_SAFE_NO_PAD.encode(&bytes),
            URL_SAFE_NO_PAD.encode(signature.to_bytes())
        )
    }

    /// The claims of a token signed by `issuer` (no clock: see [`check_proof`]).
    pub fn verify(token: &str, issuer: &VerifyingKey) -> Result<Self, TokenError> {
        if token.len() > MAX_TOKEN_BYTES {
            return Err(TokenError::Malformed("too long"));
        }
        let body = token
            .strip_prefix(TOKEN_PREFIX)
            .ok_or(TokenError::Malformed("no consent-token: prefix"))?;
        let (claims, signature) = body
            .split_once('.')
            .ok_or(TokenError::Malformed("no signature part"))?;
        let claims = URL_SAFE_NO_PAD
            .decode(claims)
            .map_err(|_| TokenError::Malformed("claims are not base64url"))?;
        let signature: [u8; 64] = URL_SAFE_NO_PAD
            .decode(signature)
            .ok()
            .and_then(|s| s.try_into().ok())
            .ok_or(TokenError::Malformed(
                "signature is not 64 bytes of base64url",
            ))?;
        issuer
            .verify_strict(&claims, &Signature::from_bytes(&signature))
            .map_err(|_| TokenError::BadSignature)?;
        let parsed: Self = serde_json::from_slice(&claims)
            .map_err(|_| TokenError::Malformed("claims do not parse"))?;
        if parsed.typ != TOKEN_TYPE {
            return Err(TokenError::Malformed("not a consent token"));
        }
        Ok(parsed)
    }
}

/// The PII rule's proof check, once the token's signature is known good:
/// not expired, granted to `sender`, and `pii_meta.consent` and
/// `pii_meta.types` agreeing with what was granted. `E_CONSENT` with the
/// path of what disagrees.
pub fn check_proof(
    meta: &PiiMeta,
    claims: &ConsentClaims,
    sender: Option<&PublicKey>,
    now_ms: u64,
) -> Result<(), MoltError> {
    let refuse = |field: &str, message: String| {
        Err(MoltError::new(ErrorCode::Consent, message, Some(field)))
    };
    const PROOF: &str = "pii_meta.consent.proof";
    if now_ms >= claims.expires {
        return refuse(
            PROOF,
            format!(
                "the consent token expired at {} (now {now_ms})",
                claims.expires
            ),
        );
    }
    let Some(sender) = sender else {
        return refuse(
            PROOF,
            "a consent token binds a key: send PII signed (in a verified session)".into(),
        );
    };
    if claims.key != sender.to_string() {
        return refuse(
            PROOF,
            "the consent token was granted to another agent's key".into(),
        );
    }
    let Some(consent) = meta.consent.as_ref() else {
        return refuse("pii_meta.consent", "required field is missing".into());
    };
    if consent.granted_by != claims.granted_by {
        return refuse(
            "pii_meta.consent.granted_by",
            "does not match the consent token's grantor".into(),
        );
    }
    if consent.purpose != claims.purpose {
        return refuse(
            "pii_meta.consent.purpose",
            "does not match the consent token's purpose".into(),
        );
    }
    if consent.expires != claims.expires {
        return refuse(
            "pii_meta.consent.expires",
            format!(
                "does not match the consent token's expiry ({})",
                claims.expires
            ),
        );
    }
    let granted: BTreeSet<&str> = claims.data_types.iter().map(String::as_str).collect();
    let beyond: Vec<&str> = meta
        .types
        .iter()
        .map(String::as_str)
        .filter(|t| !granted.contains(t))
        .collect();
    if !beyond.is_empty() {
        return refuse(
            "pii_meta.types",
            format!(
                "types not granted by the consent token: {}",
                beyond.join(", ")
            ),
        );
    }
    Ok(())
}

/// `E_INVALID_PARAM` at `pii_meta.mask_fields[i]` for an entry that is
/// neither a known PII type nor a dotted path of plain segments.
pub fn check_mask_fields(fields: &[String]) -> Result<(), MoltError> {
    if fields.len() > MAX_MASK_FIELDS {
        return Err(MoltError::invalid(
            "pii_meta.mask_fields",
            format!("at most {MAX_MASK_FIELDS} entries"),
        ));
    }
    for (i, entry) in fields.iter().enumerate() {
        let path = entry.strip_prefix("p.").unwrap_or(entry);
        if path.is_empty() || path.len() > 256 || path.split('.').any(str::is_empty) {
            return Err(MoltError::invalid(
                &format!("pii_meta.mask_fields[{i}]"),
                "must be a PII type or a dotted path in p (1 to 256 bytes, no empty segment)",
            ));
        }
    }
    Ok(())
}

/// Replaces in `payload` (a message's `p`) what each `mask_fields` entry
/// names: a path's value whole; for a PII type, every string holding that
/// type (and a member named after it, as the spec's `["email"]` reads).
/// Returns how many values were masked.
pub fn mask(payload: &mut Value, fields: &[String]) -> usize {
    let mut masked = 0;
    for entry in fields {
        let path = entry.strip_prefix("p.").unwrap_or(entry);
        if let Some(target) =
            path.split('.')
                .try_fold(&mut *payload, |value, segment| match value {
                    Value::Object(map) => map.get_mut(segment),
                    Value::Array(items) => {
                        segment.parse::<usize>().ok().and_then(|i| items.get_mut(i))
                    }
                    _ => None,
                })
        {
            *target = Value::String(MASKED.into());
            masked += 1;
        }
        if let Some(kind) = pii_type(entry) {
            masked += mask_type(payload, kind);
        }
    }
    masked
}

fn pii_type(name: &str) -> Option<pii::PiiType> {
    [pii::PiiType::Email, pii::PiiType::Phone, pii::PiiType::Ssn]
        .into_iter()
        .find(|t| t.as_str() == name)
}

fn mask_type(value: &mut Value, kind: pii::PiiType) -> usize {
    match value {
        Value::String(text) if pii::scan_str(text).contains(&kind) => {
            *text = MASKED.into();
            1
        }
        Value::Array(items) => items.iter_mut().map(|v| mask_type(v, kind)).sum(),
        Value::Object(map) => map.values_mut().map(|v| mask_type(v, kind)).sum(),
        _ => 0,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::protocol::moltspeak::Consent;

    fn claims(key: &PublicKey) -> ConsentClaims {
        ConsentClaims {
            typ: TOKEN_TYPE.into(),
            data_types: vec!["email".into(), "name".into()],
            purpose: "scheduling".into(),
            granted_by: "user:jane@example.com".into(),
            key: key.to_string(),
            expires: 5_000,
            issued: 1_000,
        }
    }

    #[test]
    fn tokens_verify_only_with_their_issuer_and_untouched() {
        let issuer = SigningKey::from_bytes(&[9; 32]);
        let agent: PublicKey = SigningKey::from_bytes(&[8; 32]).verifying_key().into();
        let token = claims(&agent).issue(&issuer);
        assert_eq!(
            ConsentClaims::verify(&token, &issuer.verifying_key()).unwrap(),
            claims(&agent)
        );
        let other = SigningKey::from_bytes(&[7; 32]).verifying_key();
        assert_eq!(
            ConsentClaims::verify(&token, &other),
            Err(TokenError::BadSignature)
        );
        let mut forged = claims(&agent);
        forged.data_types.push("ssn".into());
        let (_, sig) = token.split_once('.').unwrap();
        let spliced = format!(
            "{TOKEN_PREFIX}{}.{sig}",
            URL_SAFE_NO_PAD.encode(forged.signing_bytes())
        );
        assert_eq!(
            ConsentClaims::verify(&spliced, &issuer.verifying_key()),
            Err(TokenError::BadSignature)
        );
        assert!(matches!(
            ConsentClaims::verify("consent-token:ct_abc123xyz", &issuer.verifying_key()),
            Err(TokenError::Malformed(_))
        ));
    }

    #[test]
    fn the_proof_must_match_the_meta_and_the_sender() {
        let agent: PublicKey = SigningKey::from_bytes(&[8; 32]).verifying_key().into();
        let c = claims(&agent);
        let mut meta = PiiMeta {
            types: vec!["email".into()],
            consent: Some(Consent {
                granted_by: c.granted_by.clone(),
                purpose: c.purpose.clone(),
                expires: c.expires,
                proof: "x".into(),
            }),
            mask_fields: vec![],
        };
        check_proof(&meta, &c, Some(&agent), 2_000).unwrap();
        let e = check_proof(&meta, &c, Some(&agent), 5_000).unwrap_err();
        assert_eq!(e.code, ErrorCode::Consent);
        let other: PublicKey = SigningKey::from_bytes(&[6; 32]).verifying_key().into();
        assert!(check_proof(&meta, &c, Some(&other), 2_000).is_err());
        meta.types.push("ssn".into());
        let e = check_proof(&meta, &c, Some(&agent), 2_000).unwrap_err();
        assert_eq!(e.field.as_deref(), Some("pii_meta.types"));
    }

    #[test]
    fn masks_paths_and_types() {
        let mut p = json!({"params": {"attendees": ["jane@example.com", "bob"], "note": "call 555-123-4567"},
                           "email": "x"});
        let n = mask(
            &mut p,
            &[
                "email".into(),
                "p.params.note".into(),
                "params.attendees.1".into(),
            ],
        );
        assert_eq!(
            p,
            json!({"params": {"attendees": ["[masked]", "[masked]"], "note": "[masked]"}, "email": "[masked]"})
        );
        assert!(n >= 4);
        assert!(check_mask_fields(&["a..b".into()]).is_err());
    }
}
