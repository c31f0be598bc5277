//! Signing keys: registered only with proof that the registrant holds the
//! private half, revoked (never deleted) by their holder.
//!
//! The proof is an Ed25519 signature over
//! `agentlang-key-registration:<username>:<key id>`: it names the account,
//! so a proof made for one account cannot register the key to another, and
//! someone who only saw the public key cannot claim it (and then publish
//! its holder's signed containers as their own).

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

/// What a key registration's proof signs.
pub fn registration_message(username: &str, key_id: &KeyId) -> String {
    format!("agentlang-key-registration:{username}:{key_id}")
}

/// Parses a public key and checks its proof of possession: every problem
/// as a field error (`public_key_pem`, `proof`).
pub fn check_key_and_proof(
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
                 (`agentlang keys register` does this)",
                registration_message(username, &key.key_id())
            ),
        )])
    };
    let signature = base64::engine::general_purpose::STANDARD
        .decode(proof.trim())
        .map_err(|_| refused("the proof is not base64"))?;
    key.verify(
        registration_message(username, &key.key_id()).as_bytes(),
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
    let key = check_key_and_proof(username.as_str(), public_key_pem, proof)?;
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

    fn proof(secret: &SecretKey, username: &str) -> String {
        let message = registration_message(username, &secret.public_key().key_id());
        base64::engine::general_purpose::STANDARD.encode(secret.sign(message.as_bytes()))
    }

    #[test]
    fn a_key_registers_only_with_its_holders_proof_for_this_account() {
        let secret = SecretKey::generate().unwrap();
        let pem = secret.public_key().to_spki_pem();
        assert!(check_key_and_proof("alice", &pem, &proof(&secret, "alice")).is_ok());
        // A proof for another account, by another key, or not a signature.
        let other = SecretKey::generate().unwrap();
        for bad in [
            proof(&secret, "mallory"),
            proof(&other, "alice"),
            "AAAA".into(),
            "%%".into(),
        ] {
            let err = check_key_and_proof("alice", &pem, &bad).unwrap_err();
            let ServiceError::Validation(fields) = err else {
                panic!("{err:?}")
            };
            assert_eq!(fields[0].field, "proof");
            assert!(
                fields[0]
                    .message
                    .contains("agentlang-key-registration:alice:")
            );
        }
    }
}
