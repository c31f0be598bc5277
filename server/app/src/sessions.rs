//! Catalog sessions: sign-in, sign-out (here or everywhere) and the flash
//! that shows a new token once.
//!
//! The cookie holds 32 random bytes; the database keeps only their SHA-256
//! with the account, a per-session CSRF token and the expiry, so every
//! replica serves every session and a leaked row signs nobody in. A token
//! created on the account page is flashed to the next page view encrypted
//! (AES-256-GCM) under a key derived from the cookie secret, which is not
//! stored: at rest it is unreadable.

use aes_gcm::{
    Aes256Gcm, KeyInit,
    aead::{AeadInOut, Nonce, Tag},
};
use sha2::{Digest, Sha256};

use crate::{
    Registry, ServiceError,
    accounts::Actor,
    audit, credentials,
    rate_limits::ClientAddr,
    secrets::{random_hex, secret_hash},
};
use agentlang_core::Username;
use store::now;

/// Sessions end this long after sign-in, used or not.
pub const SESSION_LIFETIME_SECS: i64 = 7 * 24 * 3600;
const NONCE_LEN: usize = 12;
const TAG_LEN: usize = 16;

/// A signed-in session, loaded from its cookie.
#[derive(Clone)]
pub struct Session {
    pub id_hash: String,
    pub account_id: i64,
    pub username: Username,
    pub is_admin: bool,
    pub csrf_token: String,
    /// Derived from the cookie secret; never stored.
    flash_key: [u8; 32],
}

impl std::fmt::Debug for Session {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session")
            .field("account_id", &self.account_id)
            .field("username", &self.username)
            .finish_non_exhaustive()
    }
}

impl Session {
    pub fn actor(&self) -> Actor<'_> {
        Actor {
            account_id: self.account_id,
            username: &self.username,
            is_admin: self.is_admin,
        }
    }
}

/// A session just created: the cookie's secret (shown to the browser only).
#[derive(Debug)]
pub struct NewSession {
    pub cookie_secret: String,
    pub username: Username,
}

fn internal(e: impl std::fmt::Display) -> ServiceError {
    ServiceError::internal(anyhow::anyhow!("{e}"))
}

fn flash_key(cookie_secret: &str) -> [u8; 32] {
    let mut hasher = Sha256::new();
    hasher.update(b"agentlang-session-flash\0");
    hasher.update(cookie_secret.as_bytes());
    hasher.finalize().into()
}

/// Second factor: what a password sign-in leads to. An account with a
/// second factor gets a pending sign-in instead of a session: a short-lived
/// signed record of who passed the password (never the password), which
/// [`finish_sign_in`] turns into a session with a code.
#[derive(Debug)]
pub enum SignIn {
    Done(NewSession),
    CodeNeeded { pending: String },
}

/// Signs in with a password (sign-in limits apply): a session, or for an
/// account with a second factor the pending sign-in its code finishes
/// (docs/two-factor.md).
pub async fn begin_sign_in(
    registry: &Registry,
    client: &ClientAddr,
    username: &str,
    password: &str,
) -> Result<SignIn, ServiceError> {
    let account = credentials::check_password(registry, client, username, password).await?;
    if crate::two_factor::is_enrolled(registry, account.id).await? {
        return Ok(SignIn::CodeNeeded {
            pending: crate::two_factor::pending_sign_in(registry, account.id),
        });
    }
    Ok(SignIn::Done(
        start_session(registry, client, account).await?,
    ))
}

/// The code step: the pending record from [`begin_sign_in`] (401
/// `unauthenticated` when forged or older than five minutes) and a code.
pub async fn finish_sign_in(
    registry: &Registry,
    client: &ClientAddr,
    pending: &str,
    code: &str,
) -> Result<NewSession, ServiceError> {
    let account_id =
        crate::two_factor::open_pending_sign_in(registry, pending).ok_or_else(|| {
            ServiceError::Unauthenticated(
                "the sign-in expired: enter the password again".to_owned(),
            )
        })?;
    crate::two_factor::step_up(registry, account_id, None, Some(code)).await?;
    let account = registry
        .db
        .find_account_by_id(account_id)
        .await?
        .ok_or_else(|| ServiceError::Unauthenticated("the account is gone".to_owned()))?;
    start_session(registry, client, account).await
}

async fn start_session(
    registry: &Registry,
    client: &ClientAddr,
    account: store::accounts::AccountRecord,
) -> Result<NewSession, ServiceError> {
    let cookie_secret = random_hex().map_err(internal)?;
    let csrf_token = random_hex().map_err(internal)?;
    registry
        .db
        .create_web_session(
            &secret_hash(&cookie_secret),
            account.id,
            &csrf_token,
            now() + SESSION_LIFETIME_SECS,
        )
        .await?;
    audit::record(
        registry,
        account.id,
        "signed_in",
        &format!("from {}", client.as_str()),
    )
    .await;
    tracing::info!(username = %account.username, "signed in to the catalog");
    Ok(NewSession {
        cookie_secret,
        username: account.username,
    })
}

/// The live session a cookie holds, if any.
pub async fn load(
    registry: &Registry,
    cookie_secret: &str,
) -> Result<Option<Session>, ServiceError> {
    let id_hash = secret_hash(cookie_secret);
    let record = registry.db.find_web_session(&id_hash).await?;
    Ok(record.map(|r| Session {
        id_hash,
        account_id: r.account_id,
        username: r.username,
        is_admin: r.is_admin,
        csrf_token: r.csrf_token,
        flash_key: flash_key(cookie_secret),
    }))
}

/// Ends this session.
pub async fn sign_out(registry: &Registry, session: &Session) -> Result<(), ServiceError> {
    Ok(registry.db.delete_web_session(&session.id_hash).await?)
}

/// Ends every session of the account, this one included.
pub async fn sign_out_everywhere(
    registry: &Registry,
    session: &Session,
) -> Result<u64, ServiceError> {
    let ended = registry
        .db
        .delete_account_sessions(session.account_id, None)
        .await?;
    audit::record(
        registry,
        session.account_id,
        "signed_out_everywhere",
        &format!("{ended} sessions ended"),
    )
    .await;
    Ok(ended)
}

/// Keeps a new token for the session's next page view, encrypted.
pub async fn flash_token(
    registry: &Registry,
    session: &Session,
    name: &str,
    token: &str,
) -> Result<(), ServiceError> {
    let mut nonce = [0u8; NONCE_LEN];
    getrandom::fill(&mut nonce).map_err(internal)?;
    let mut sealed = token.as_bytes().to_vec();
    let tag = Aes256Gcm::new(&session.flash_key.into())
        .encrypt_inout_detached(
            &Nonce::<Aes256Gcm>::from(nonce),
            session.id_hash.as_bytes(),
            sealed.as_mut_slice().into(),
        )
        .map_err(internal)?;
    let mut stored = nonce.to_vec();
    stored.extend_from_slice(&sealed);
    stored.extend_from_slice(&tag);
    Ok(registry
        .db
        .set_session_flash(&session.id_hash, name, &hex::encode(stored))
        .await?)
}

/// The flashed token (name, token), taken: a second view shows nothing.
pub async fn take_flash(
    registry: &Registry,
    session: &Session,
) -> Result<Option<(String, String)>, ServiceError> {
    let Some((name, stored)) = registry.db.take_session_flash(&session.id_hash).await? else {
        return Ok(None);
    };
    let opened = hex::decode(stored)
        .ok()
        .filter(|b| b.len() >= NONCE_LEN + TAG_LEN)
        .and_then(|bytes| {
            let (nonce, rest) = bytes.split_at(NONCE_LEN);
            let (body, tag) = rest.split_at(rest.len() - TAG_LEN);
            let nonce: [u8; NONCE_LEN] = nonce.try_into().ok()?;
            let tag: [u8; TAG_LEN] = tag.try_into().ok()?;
            let mut body = body.to_vec();
            Aes256Gcm::new(&session.flash_key.into())
                .decrypt_inout_detached(
                    &Nonce::<Aes256Gcm>::from(nonce),
                    session.id_hash.as_bytes(),
                    body.as_mut_slice().into(),
                    &Tag::<Aes256Gcm>::from(tag),
                )
                .ok()?;
            String::from_utf8(body).ok()
        });
    Ok(opened.map(|token| (name, token)))
}
