//! Signing keys: registered only with proof that the registrant holds the
//! private half, revoked (never deleted) by their holder.
//!
//! The proof is an Ed25519 signature over
//! `agentlang-key-registration:<username>:<key id>`: it names the account,
//! so a proof made for one account cannot register the key to another, and
//! someone who only saw the public key cannot claim it (and then publish
//! its holder's signed containers as their own).

use std::{
    collections::HashMap,
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

use agentlang_core::{
    signing::{KeyId, PublicKey, SigningError},
    tlog::LogOp,
};
use base64::Engine;

use crate::{
    db::keys::{InsertKeyError, SigningKeyRecord, SigningKeyWithOwner},
    error::{ApiError, FieldError},
    service::{audit, tlog},
    state::AppState,
};

/// How long a publish may use an account's keys as read before.
const KEYS_KEPT: Duration = Duration::from_secs(30);

/// Accounts whose keys are kept; past it the map is cleared.
const KEYS_ACCOUNTS: usize = 10_000;

/// Accounts' signing keys as publishes check them, kept for
/// [`KEYS_KEPT`]: a burst of publishes by one account reads them once, not
/// once each. A kept list can be stale in two ways, and neither lets a
/// revoked key publish: a key registered since (on another replica) is
/// missing, so a publish signed with it reads the list again
/// ([`publishing_keys`]); a key revoked since on another replica still
/// looks usable, and the publish's transaction, which reads the key again,
/// refuses it. A change on this replica forgets the account's list at once.
#[derive(Debug, Default)]
pub struct PublishingKeys {
    accounts: Mutex<HashMap<i64, KeptKeys>>,
}

/// When an account's keys were read, and what they were.
type KeptKeys = (Instant, Arc<Vec<SigningKeyRecord>>);

impl PublishingKeys {
    fn accounts(&self) -> std::sync::MutexGuard<'_, HashMap<i64, KeptKeys>> {
        self.accounts
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn kept(&self, account_id: i64) -> Option<Arc<Vec<SigningKeyRecord>>> {
        let accounts = self.accounts();
        let (read, keys) = accounts.get(&account_id)?;
        (read.elapsed() < KEYS_KEPT).then(|| Arc::clone(keys))
    }

    fn keep(&self, account_id: i64, read: Instant, keys: Arc<Vec<SigningKeyRecord>>) {
        let mut accounts = self.accounts();
        if accounts.len() >= KEYS_ACCOUNTS {
            accounts.clear();
        }
        accounts.insert(account_id, (read, keys));
    }

    fn forget(&self, account_id: i64) {
        self.accounts().remove(&account_id);
    }
}

/// The account's keys, revoked ones included, for a publish's checks, and
/// whether they were kept from an earlier read ([`PublishingKeys`]);
/// `fresh` reads them from the database whatever is kept.
pub async fn publishing_keys(
    state: &AppState,
    account_id: i64,
    fresh: bool,
) -> Result<(Arc<Vec<SigningKeyRecord>>, bool), ApiError> {
    if !fresh && let Some(keys) = state.publishing_keys.kept(account_id) {
        return Ok((keys, true));
    }
    let read = Instant::now();
    let keys = Arc::new(state.db.list_signing_keys(account_id).await?);
    state
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
) -> Result<PublicKey, ApiError> {
    let key = PublicKey::from_spki_pem(public_key_pem.trim()).map_err(|e| {
        let message = match e {
            SigningError::WeakKey => "the key is weak (a small-order point) and is refused".into(),
            other => other.to_string(),
        };
        ApiError::Validation(vec![FieldError::new("public_key_pem", message)])
    })?;
    let refused = |why: &str| {
        ApiError::Validation(vec![FieldError::new(
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
    state: &AppState,
    account_id: i64,
    username: &str,
    public_key_pem: &str,
    proof: &str,
) -> Result<SigningKeyRecord, ApiError> {
    let key = check_key_and_proof(username, public_key_pem, proof)?;
    let key_id = key.key_id();
    let record = state
        .db
        .insert_signing_key(
            &key_id,
            account_id,
            &key.to_spki_pem(),
            &tlog::key_entry(LogOp::KeyAdd, &key_id, username),
        )
        .await
        .map_err(|e| match e {
            InsertKeyError::AlreadyRegistered => {
                ApiError::Conflict(format!("the key {key_id} is already registered"))
            }
            InsertKeyError::Db(e) => e.into(),
        })?;
    state.publishing_keys.forget(account_id);
    state.tlog.appended();
    audit::record(state, account_id, "key_registered", key_id.as_str()).await;
    tracing::info!(key_id = %key_id, by = %username, "signing key registered");
    Ok(record)
}

/// Revokes one of the account's keys; 404 when it has no such key.
pub async fn revoke_key(
    state: &AppState,
    account_id: i64,
    username: &str,
    key_id: &str,
) -> Result<SigningKeyRecord, ApiError> {
    let not_found = || ApiError::NotFound(format!("key {key_id}"));
    let key_id = KeyId::new(key_id).map_err(|_| not_found())?;
    let key = state
        .db
        .revoke_signing_key(
            account_id,
            &key_id,
            &tlog::key_entry(LogOp::KeyRevoke, &key_id, username),
        )
        .await?
        .ok_or_else(not_found)?;
    state.publishing_keys.forget(account_id);
    state.tlog.appended();
    audit::record(state, account_id, "key_revoked", key_id.as_str()).await;
    tracing::info!(key_id = %key_id, by = %username, "signing key revoked");
    Ok(key)
}

/// The account's keys, oldest first, revoked ones included.
pub async fn list_keys(
    state: &AppState,
    account_id: i64,
) -> Result<Vec<SigningKeyRecord>, ApiError> {
    Ok(state.db.list_signing_keys(account_id).await?)
}

/// A key and who holds it; 404 for an id that is not a key's.
pub async fn find_key(state: &AppState, key_id: &str) -> Result<SigningKeyWithOwner, ApiError> {
    let not_found = || ApiError::NotFound(format!("key {key_id}"));
    let id = KeyId::new(key_id).map_err(|_| not_found())?;
    state
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
            let ApiError::Validation(fields) = err else {
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
