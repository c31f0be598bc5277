//! Signing keys: registered only with proof that the registrant holds the
//! private half, revoked (never deleted) by their holder.
//!
//! The proof is an Ed25519 signature over
//! `agentlang-key-registration:<origin>:<username>:<key id>`. It names the
//! account, so a proof made for one account cannot register the key to
//! another, and someone who only saw the public key cannot claim it (and
//! then publish its holder's signed containers as their own). It names the
//! registry's origin (`scheme://host[:port]` of its public URL), so a proof
//! sent to one registry cannot be replayed to register the key on another
//! (by that registry's operator, say). Proofs of the older text, without
//! the origin, do not verify and are refused.

use std::{sync::Arc, time::Instant};

use agentlang_core::{
    Username,
    signing::{KeyId, PublicKey, SigningError},
    tlog::LogOp,
};
use base64::Engine;

use crate::{FieldError, Registry, ServiceError, audit, tlog};
use store::keys::{InsertKeyError, SigningKeyWithOwner};

pub use store::keys::SigningKeyRecord;

pub use crate::kept_keys::PublishingKeys;

/// The account's keys, revoked ones included, for a publish's checks, and
/// whether they were kept from an earlier read ([`PublishingKeys`]);
/// `fresh` reads them from the database whatever is kept.
pub async fn publishing_keys(
    registry: &Registry,
    account_id: i64,
    fresh: bool,
) -> Result<(Arc<Vec<SigningKeyRecord>>, bool), ServiceError> {
    if !fresh && let Some(keys) = registry.publishing_keys.kept(account_id) {
        return Ok((keys, true));
    }
    let read = Instant::now();
    let keys = Arc::new(registry.db.list_signing_keys(account_id).await?);
    registry
        .publishing_keys
        .keep(account_id, read, Arc::clone(&keys));
    Ok((keys, false))
}

/// The origin a key proof names for a registry at `public_url`: RFC 6454's
/// serialization, `scheme://host[:port]` (lowercase, no default port, no
/// path), as a client computes it from the URL it was configured with.
pub fn origin_of(public_url: &str) -> String {
    url::Url::parse(public_url).map_or_else(
        |_| public_url.to_owned(),
        |url| url.origin().ascii_serialization(),
    )
}

/// What a key registration's proof signs.
pub fn registration_message(origin: &str, username: &str, key_id: &KeyId) -> String {
    format!("agentlang-key-registration:{origin}:{username}:{key_id}")
}

/// The text an account signs to register a key on this registry, with
/// `<key id>` standing for the key's id (the web form shows it).
pub fn registration_text(registry: &Registry, username: &Username) -> String {
    format!(
        "agentlang-key-registration:{}:{username}:<key id>",
        origin_of(registry.public_url())
    )
}

/// Parses a public key and checks its proof of possession for the
/// registry at `origin`: every problem as a field error (`public_key_pem`,
/// `proof`).
pub fn check_key_and_proof(
    origin: &str,
    username: &str,
    public_key_pem: &str,
    proof: &str,
) -> Result<PublicKey, ServiceError> {
    let key = PublicKey::from_spki_pem(public_key_pem.trim()).map_err(|e| {
        let message = match e {
            SigningError::WeakKey => "the key is weak (a small-order point) and is refused".into(),
            other => other.to_string(),
        };
        ServiceError::Validation(vec![FieldError::new("public_key_pem", message)])
    })?;
    let refused = |why: &str| {
        ServiceError::Validation(vec![FieldError::new(
            "proof",
            format!(
                "{why}: sign the text {:?} with the private key and send the signature in base64 \
                 (`agentlang keys register` does this; a proof names the registry's origin, so \
                 one made for another registry, or for another URL of this one, does not verify \
                 here)",
                registration_message(origin, username, &key.key_id())
            ),
        )])
    };
    let signature = base64::engine::general_purpose::STANDARD
        .decode(proof.trim())
        .map_err(|_| refused("the proof is not base64"))?;
    key.verify(
        registration_message(origin, username, &key.key_id()).as_bytes(),
        &signature,
    )
    .map_err(|_| refused("the proof does not verify"))?;
    Ok(key)
}

/// Registers a key to the account after checking its proof; 409 when the
/// key is registered already (to anyone).
pub async fn register_key(
    registry: &Registry,
    account_id: i64,
    username: &Username,
    public_key_pem: &str,
    proof: &str,
) -> Result<SigningKeyRecord, ServiceError> {
    let origin = origin_of(registry.public_url());
    let key = check_key_and_proof(&origin, username.as_str(), public_key_pem, proof)?;
    let key_id = key.key_id();
    let record = registry
        .db
        .insert_signing_key(
            &key_id,
            account_id,
            &key.to_spki_pem(),
            &tlog::key_entry(LogOp::KeyAdd, &key_id, username.as_str()),
        )
        .await
        .map_err(|e| match e {
            InsertKeyError::AlreadyRegistered => {
                ServiceError::Conflict(format!("the key {key_id} is already registered"))
            }
            InsertKeyError::Db(e) => e.into(),
        })?;
    registry.publishing_keys.forget(account_id);
    registry.tlog.appended();
    audit::record(registry, account_id, "key_registered", key_id.as_str()).await;
    tracing::info!(key_id = %key_id, by = %username, "signing key registered");
    Ok(record)
}

/// Revokes one of the account's keys; 404 when it has no such key.
pub async fn revoke_key(
    registry: &Registry,
    account_id: i64,
    username: &Username,
    key_id: &str,
) -> Result<SigningKeyRecord, ServiceError> {
    let not_found = || ServiceError::NotFound(format!("key {key_id}"));
    let key_id = KeyId::new(key_id).map_err(|_| not_found())?;
    let key = registry
        .db
        .revoke_signing_key(
            account_id,
            &key_id,
            &tlog::key_entry(LogOp::KeyRevoke, &key_id, username.as_str()),
        )
        .await?
        .ok_or_else(not_found)?;
    registry.publishing_keys.forget(account_id);
    registry.tlog.appended();
    audit::record(registry, account_id, "key_revoked", key_id.as_str()).await;
    tracing::info!(key_id = %key_id, by = %username, "signing key revoked");
    Ok(key)
}

/// The account's keys, oldest first, revoked ones included.
pub async fn list_keys(
    registry: &Registry,
    account_id: i64,
) -> Result<Vec<SigningKeyRecord>, ServiceError> {
    Ok(registry.db.list_signing_keys(account_id).await?)
}

/// A key and who holds it; 404 for an id that is not a key's.
pub async fn find_key(
    registry: &Registry,
    key_id: &str,
) -> Result<SigningKeyWithOwner, ServiceError> {
    let not_found = || ServiceError::NotFound(format!("key {key_id}"));
    let id = KeyId::new(key_id).map_err(|_| not_found())?;
    registry
        .db
        .find_signing_key_with_owner(&id)
        .await?
        .ok_or_else(not_found)
}

#[cfg(test)]
mod tests {
    use agentlang_core::signing::SecretKey;

    use super::*;

    const HERE: &str = "https://registry.example";

    fn proof(secret: &SecretKey, origin: &str, username: &str) -> String {
        let message = registration_message(origin, username, &secret.public_key().key_id());
        base64::engine::general_purpose::STANDARD.encode(secret.sign(message.as_bytes()))
    }

    #[test]
    fn a_key_registers_only_with_its_holders_proof_for_this_account_and_registry() {
        let secret = SecretKey::generate().unwrap();
        let pem = secret.public_key().to_spki_pem();
        assert!(check_key_and_proof(HERE, "alice", &pem, &proof(&secret, HERE, "alice")).is_ok());
        // A proof for another account, for another registry, of the text
        // without an origin, by another key, or not a signature.
        let other = SecretKey::generate().unwrap();
        let without_origin = {
            let message = format!(
                "agentlang-key-registration:alice:{}",
                secret.public_key().key_id()
            );
            base64::engine::general_purpose::STANDARD.encode(secret.sign(message.as_bytes()))
        };
        for bad in [
            proof(&secret, HERE, "mallory"),
            proof(&secret, "https://other.example", "alice"),
            without_origin,
            proof(&other, HERE, "alice"),
            "AAAA".into(),
            "%%".into(),
        ] {
            let err = check_key_and_proof(HERE, "alice", &pem, &bad).unwrap_err();
            let ServiceError::Validation(fields) = err else {
                panic!("{err:?}")
            };
            assert_eq!(fields[0].field, "proof");
            assert!(
                fields[0]
                    .message
                    .contains("agentlang-key-registration:https://registry.example:alice:"),
                "{}",
                fields[0].message
            );
        }
    }

    #[test]
    fn the_origin_is_the_public_urls_scheme_host_and_port() {
        assert_eq!(origin_of("https://Registry.Example"), HERE);
        assert_eq!(origin_of("https://registry.example:443/x/"), HERE);
        assert_eq!(origin_of("http://127.0.0.1:8080"), "http://127.0.0.1:8080");
    }
}
