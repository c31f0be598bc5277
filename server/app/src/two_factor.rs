//! A second factor: TOTP (RFC 6238; SHA-1, 6 digits, 30 s steps, one step
//! of skew either way), the one place a code is checked and the step-up
//! rule every sensitive act calls.
//!
//! The shared secret is kept sealed (AES-256-GCM under a key derived from
//! the registry's signing secret, bound to the account), so a read of the
//! database alone makes no codes. A code is accepted once: the time-step it
//! matched is spent, and a code of that step or an earlier one is refused.
//! Recovery codes are random, kept as SHA-256, and each works once. Every
//! code checked spends the account's budget of attempts, so the 10^6 codes
//! cannot be tried.

use serde::Serialize;
use totp_rs::{Algorithm, Builder, Secret, Totp};

use crate::{
    Registry, ServiceError, audit, credentials,
    rate_limits::{Bucket, ClientAddr},
    secrets::secret_hash,
};
use store::publishing_policy::PublishingPolicy;

/// The issuer an authenticator app shows beside the account.
const ISSUER: &str = "AgentLang";
const SECRET_LEN: usize = 20;
pub const RECOVERY_CODES: usize = 10;
/// The longest code text looked at: a recovery code with its dashes.
const MAX_CODE_LEN: usize = 64;

/// How long a catalog sign-in waits for its code.
const PENDING_SIGN_IN_SECS: i64 = 300;

/// A pending catalog sign-in: `account_id.expires_at.mac`, signed, so no
/// row (and never the password) is kept between the password step and the
/// code step.
pub fn pending_sign_in(registry: &Registry, account_id: i64) -> String {
    let text = format!("{account_id}.{}", store::now() + PENDING_SIGN_IN_SECS);
    let mac = registry.two_factor_key.pending_mac(&text);
    format!("{text}.{mac}")
}

/// The account of a pending sign-in, when it is this registry's and not
/// expired.
pub fn open_pending_sign_in(registry: &Registry, pending: &str) -> Option<i64> {
    let (text, mac) = pending.rsplit_once('.')?;
    if !crate::secrets::constant_time_eq(&registry.two_factor_key.pending_mac(text), mac) {
        return None;
    }
    let (account_id, expires_at) = text.split_once('.')?;
    let expires_at: i64 = expires_at.parse().ok()?;
    (expires_at > store::now()).then_some(())?;
    account_id.parse().ok()
}

fn seal(registry: &Registry, account_id: i64, plain: &[u8]) -> Result<String, ServiceError> {
    registry
        .two_factor_key
        .seal(account_id, plain)
        .map_err(|e| ServiceError::internal(anyhow::anyhow!("sealing a TOTP secret: {e}")))
}

fn open(registry: &Registry, account_id: i64, sealed: &str) -> Result<Vec<u8>, ServiceError> {
    registry
        .two_factor_key
        .open(account_id, sealed)
        .ok_or_else(|| {
            ServiceError::internal(anyhow::anyhow!(
                "the second factor of account {account_id} does not open with this registry's key"
            ))
        })
}

/// `username` names the account in an otpauth URI only; checking a code
/// does not need it.
fn totp(secret: Vec<u8>, username: &str) -> Result<Totp, ServiceError> {
    Builder::new()
        .with_algorithm(Algorithm::SHA1)
        .with_digits(6)
        .with_step_duration(30)
        .with_skew(1)
        .with_secret(Secret::from(secret))
        .with_account_name(username)
        .with_issuer(Some(ISSUER))
        .build()
        .map_err(|e| ServiceError::internal(anyhow::anyhow!("TOTP: {e}")))
}

/// A pending enrolment, shown once: the secret for an authenticator app.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Enrolment {
    /// The shared secret, base32 (RFC 4648, unpadded).
    pub secret: String,
    /// The `otpauth://totp/...` URI an authenticator app reads.
    pub otpauth_uri: String,
}

/// The account's second factor as shown to it.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct TwoFactorStatus {
    /// A confirmed enrolment: sensitive acts ask for a code.
    pub enrolled: bool,
    /// An enrolment waits for its first code.
    pub pending: bool,
    pub recovery_codes_left: i64,
}

/// The recovery codes of a confirmed enrolment, shown once.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct RecoveryCodes {
    pub recovery_codes: Vec<String>,
}

/// Whether the account has a confirmed second factor.
pub async fn is_enrolled(registry: &Registry, account_id: i64) -> Result<bool, ServiceError> {
    Ok(registry
        .db
        .two_factor(account_id)
        .await?
        .is_some_and(|row| row.confirmed_at.is_some()))
}

pub async fn status(registry: &Registry, account_id: i64) -> Result<TwoFactorStatus, ServiceError> {
    let row = registry.db.two_factor(account_id).await?;
    let enrolled = row.as_ref().is_some_and(|r| r.confirmed_at.is_some());
    Ok(TwoFactorStatus {
        enrolled,
        pending: row.is_some() && !enrolled,
        recovery_codes_left: if enrolled {
            registry.db.recovery_codes_left(account_id).await?
        } else {
            0
        },
    })
}

/// Starts an enrolment, the password re-entered (a stolen token alone
/// cannot bind a second factor to the account). 409 when one is confirmed.
pub async fn enrol(
    registry: &Registry,
    client: &ClientAddr,
    account_id: i64,
    username: &str,
    password: &str,
) -> Result<Enrolment, ServiceError> {
    let account = credentials::check_password(registry, client, username, password).await?;
    if account.id != account_id {
        return Err(ServiceError::InvalidCredentials);
    }
    let mut secret = vec![0u8; SECRET_LEN];
    getrandom::fill(&mut secret).map_err(|e| ServiceError::internal(anyhow::anyhow!("{e}")))?;
    let sealed = seal(registry, account_id, &secret)?;
    if !registry.db.begin_two_factor(account_id, &sealed).await? {
        return Err(ServiceError::Conflict(
            "the account has a second factor already; disable it first".to_owned(),
        ));
    }
    let totp = totp(secret, username)?;
    audit::record(registry, account_id, "two_factor_enrolment_started", "").await;
    Ok(Enrolment {
        secret: totp.secret().to_base32(),
        otpauth_uri: totp
            .to_url()
            .map_err(|e| ServiceError::internal(anyhow::anyhow!("TOTP: {e}")))?,
    })
}

/// Confirms a pending enrolment with its first code; answers the recovery
/// codes, shown this once.
pub async fn confirm(
    registry: &Registry,
    account_id: i64,
    username: &str,
    code: &str,
) -> Result<RecoveryCodes, ServiceError> {
    let row = registry
        .db
        .two_factor(account_id)
        .await?
        .ok_or_else(|| ServiceError::NotFound("a pending second factor".to_owned()))?;
    if row.confirmed_at.is_some() {
        return Err(ServiceError::Conflict(
            "the second factor is confirmed already".to_owned(),
        ));
    }
    check_totp(registry, account_id, &row.secret_box, code).await?;
    let mut codes = Vec::with_capacity(RECOVERY_CODES);
    for _ in 0..RECOVERY_CODES {
        codes.push(new_recovery_code()?);
    }
    let hashes: Vec<String> = codes
        .iter()
        .map(|c| secret_hash(&normalize_recovery(c)))
        .collect();
    if !registry.db.confirm_two_factor(account_id, &hashes).await? {
        return Err(ServiceError::Conflict(
            "the second factor is confirmed already".to_owned(),
        ));
    }
    audit::record(registry, account_id, "two_factor_enabled", "").await;
    tracing::info!(%username, "second factor enabled");
    Ok(RecoveryCodes {
        recovery_codes: codes,
    })
}

/// Removes the second factor, with a code (or a recovery code).
pub async fn disable(
    registry: &Registry,
    account_id: i64,
    username: &str,
    otp: Option<&str>,
) -> Result<(), ServiceError> {
    if !is_enrolled(registry, account_id).await? {
        return Err(ServiceError::NotFound("a second factor".to_owned()));
    }
    step_up(registry, account_id, None, otp).await?;
    registry.db.delete_two_factor(account_id).await?;
    audit::record(registry, account_id, "two_factor_disabled", "").await;
    tracing::info!(%username, "second factor disabled");
    Ok(())
}

/// The step-up rule (docs/two-factor.md): an account with a second factor
/// must give a valid, unused code (or a recovery code): 401
/// `two-factor-code-required` without one, 401 `two-factor-code-invalid`
/// for a wrong or spent one. An account without one, acting on a package
/// whose policy requires two-factor: 403 `two-factor-enrolment-required`.
pub async fn step_up(
    registry: &Registry,
    account_id: i64,
    policy: Option<&PublishingPolicy>,
    otp: Option<&str>,
) -> Result<(), ServiceError> {
    let row = registry
        .db
        .two_factor(account_id)
        .await?
        .filter(|row| row.confirmed_at.is_some());
    let Some(row) = row else {
        if policy.is_some_and(|p| p.two_factor_required) {
            return Err(ServiceError::TwoFactorEnrolmentRequired(
                "the package's policy requires a second factor: enable one (`agentlang 2fa enable`) first"
                    .to_owned(),
            ));
        }
        return Ok(());
    };
    let Some(code) = otp.map(str::trim).filter(|c| !c.is_empty()) else {
        return Err(ServiceError::TwoFactorCodeRequired(
            "the account has a second factor: send a code in the AgentLang-OTP header (or `otp`)"
                .to_owned(),
        ));
    };
    if code.len() == 6 && code.bytes().all(|b| b.is_ascii_digit()) {
        check_totp(registry, account_id, &row.secret_box, code).await
    } else {
        spend_budget(registry, account_id)?;
        let hash = secret_hash(&normalize_recovery(code));
        if code.len() <= MAX_CODE_LEN && registry.db.spend_recovery_code(account_id, &hash).await? {
            audit::record(registry, account_id, "two_factor_recovery_code_used", "").await;
            Ok(())
        } else {
            Err(invalid())
        }
    }
}

fn invalid() -> ServiceError {
    ServiceError::TwoFactorCodeInvalid("the code is wrong, expired or used already".to_owned())
}

/// Every code checked spends the account's attempts (the per-username
/// sign-in budget, keyed by the account): a wrong guess costs as much as a
/// right one, and a budget spent is 429 for a while.
fn spend_budget(registry: &Registry, account_id: i64) -> Result<(), ServiceError> {
    registry.rate_limits.check(
        Bucket::LoginsPerUsername,
        &format!("two-factor:{account_id}"),
    )
}

async fn check_totp(
    registry: &Registry,
    account_id: i64,
    sealed: &str,
    code: &str,
) -> Result<(), ServiceError> {
    spend_budget(registry, account_id)?;
    let secret = open(registry, account_id, sealed)?;
    let totp = totp(secret, "")?;
    let code = code.trim();
    let Some(step) = totp.check_current(code) else {
        return Err(invalid());
    };
    let step = i64::try_from(step).map_err(|_| invalid())?;
    if !registry.db.spend_two_factor_step(account_id, step).await? {
        return Err(invalid());
    }
    Ok(())
}

/// 10 random bytes as four groups of five hex digits (80 bits).
fn new_recovery_code() -> Result<String, ServiceError> {
    let mut bytes = [0u8; 10];
    getrandom::fill(&mut bytes).map_err(|e| ServiceError::internal(anyhow::anyhow!("{e}")))?;
    let hex = hex::encode(bytes);
    Ok(hex
        .as_bytes()
        .chunks(5)
        .map(|c| std::str::from_utf8(c).unwrap_or_default())
        .collect::<Vec<_>>()
        .join("-"))
}

/// A recovery code as hashed: lowercase hex without separators, so one
/// typed with or without dashes is the same code.
fn normalize_recovery(code: &str) -> String {
    code.chars()
        .filter(|c| c.is_ascii_alphanumeric())
        .map(|c| c.to_ascii_lowercase())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recovery_codes_are_random_and_read_with_or_without_dashes() {
        let code = new_recovery_code().unwrap();
        assert_eq!(code.len(), 23);
        assert_ne!(code, new_recovery_code().unwrap());
        assert_eq!(
            normalize_recovery(&code),
            normalize_recovery(&code.replace('-', "").to_uppercase())
        );
    }
}
