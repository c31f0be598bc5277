//! Passwords: the one place a password is checked or hashed, for the API
//! and the catalog alike.
//!
//! argon2id is deliberately slow, so it runs on threads of its own, one per
//! core ([`PasswordWork`]); past a short queue the answer is 429 at once
//! (checks are at their rate, whoever sends them) instead of a pile of
//! waiting requests. A check is counted per
//! client address and per username tried, whether that account exists or
//! not, and an unknown username is checked against a decoy hash, so it costs
//! what a known one costs and reveals nothing by its timing.

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

/// The rate-limit key of a username tried at sign-in.
fn username_key(username: &str) -> String {
    let prefix: String = username.chars().take(MAX_KEYED_USERNAME).collect();
    format!("user:{}", normalize(&prefix))
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
        .check(Bucket::LoginsPerUsername, &username_key(username))?;
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
        .run(move || verify_password(&password, &stored))
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
        .run(move || hash_password(&password))
        .await?
        .map_err(ServiceError::internal)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn username_keys_fold_spelling_and_stay_short() {
        assert_eq!(username_key("Alice-B"), username_key("alice_b"));
        assert_eq!(
            username_key(&"x".repeat(10_000)).len(),
            5 + MAX_KEYED_USERNAME
        );
    }
}
