//! Passwords: the one place a password is checked or hashed, for the API
//! and the catalog alike.
//!
//! argon2id is deliberately slow, so it runs on threads of its own, one per
//! core ([`PasswordWork`](crate::passwords::PasswordWork)), behind a queue
//! in which each client address has a small share: a spray of wrong
//! passwords from many addresses delays an innocent sign-in by its turn,
//! never refuses it, and a client past its share is answered 429 at once.
//!
//! A check is counted per client address, and per client address and
//! username tried (whether that account exists or not): never per username
//! alone, so nobody can lock another person out of their account by
//! failing to sign in as them; guessing one password from many addresses
//! is bounded by each address's budgets and by the hashing rate. An
//! unknown username is checked against a decoy hash and refused exactly as
//! a wrong password is (same problem, same cost), so neither the answer nor
//! its timing says which usernames exist.

use agentlang_core::{Username, names::normalize};
use store::accounts::AccountRecord;

pub use crate::passwords::Password;
use crate::{
    Registry, ServiceError,
    passwords::{MAX_PASSWORD_LEN, decoy_hash, hash_password, verify_password},
    rate_limits::{Bucket, ClientAddr},
};

/// The longest username prefix a rate-limit key keeps: no real username is
/// longer, so a longer guess cannot make keys (and memory) grow.
const MAX_KEYED_USERNAME: usize = 64;

/// The rate-limit key of a username tried at sign-in from `client`: the
/// pair, so one address's failures spend nobody else's attempts.
fn username_key(client: &ClientAddr, username: &str) -> String {
    let prefix: String = username.chars().take(MAX_KEYED_USERNAME).collect();
    format!("{} user:{}", client.as_str(), normalize(&prefix))
}

/// The account `username` names, when `password` is its password; else
/// `InvalidCredentials` (429 past the limits, 503 when overloaded).
pub async fn check_password(
    registry: &Registry,
    client: &ClientAddr,
    username: &str,
    password: &str,
) -> Result<AccountRecord, ServiceError> {
    registry
        .rate_limits
        .check(Bucket::Credentials, client.as_str())?;
    registry
        .rate_limits
        .check(Bucket::LoginsPerUsername, &username_key(client, username))?;
    // A name that cannot be a username names no account, and no account
    // has a password longer than any password may be: the decoy is checked
    // all the same (never the long text itself).
    let too_long = password.len() > MAX_PASSWORD_LEN;
    let account = match Username::parse(username) {
        Ok(username) if !too_long => registry.db.find_account(&username).await?,
        _ => None,
    };
    let stored = account
        .as_ref()
        .map_or_else(|| decoy_hash().to_owned(), |a| a.password_hash.clone());
    let password = if too_long {
        String::new()
    } else {
        password.to_owned()
    };
    let verified = registry
        .passwords
        .run(client.as_str(), move || verify_password(&password, &stored))
        .await?;
    match account {
        Some(account) if verified => Ok(account),
        _ => Err(ServiceError::InvalidCredentials),
    }
}

/// The argon2id hash of a new password (an account being created), in a
/// password slot. Counted against the client's credentials budget.
pub async fn hash_new_password(
    registry: &Registry,
    client: &ClientAddr,
    password: Password,
) -> Result<String, ServiceError> {
    registry
        .rate_limits
        .check(Bucket::Credentials, client.as_str())?;
    registry
        .passwords
        .run(client.as_str(), move || hash_password(&password))
        .await?
        .map_err(ServiceError::internal)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn username_keys_are_per_address_fold_spelling_and_stay_short() {
        let here = ClientAddr::of([192, 0, 2, 1].into());
        let there = ClientAddr::of([192, 0, 2, 2].into());
        assert_eq!(
            username_key(&here, "Alice-B"),
            username_key(&here, "alice_b")
        );
        assert_ne!(username_key(&here, "alice"), username_key(&there, "alice"));
        assert_eq!(
            username_key(&here, &"x".repeat(10_000)).len(),
            username_key(&here, "").len() + MAX_KEYED_USERNAME
        );
    }
}
