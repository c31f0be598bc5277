//! Accounts: registration, admins, password changes. Nobody becomes an
//! admin by registering: admins are named by the operator, with
//! `agentlang-registry admin grant USER` or `AGENTLANG_REGISTRY_ADMINS`.
//! A name in that list binds, the first time a registry starts with it, to
//! the account holding the name then (and to no account if none does), so
//! whoever registers a configured name later gains nothing by it.

use crate::{
    Registry, ServiceError, audit, credentials, credentials::Password, rate_limits::ClientAddr,
    settings::RegistrationMode,
};
use agentlang_core::Username;
use store::accounts::CreateAccountError;

pub use store::accounts::AccountRecord;

/// Who acts: the account behind a token or a catalog session.
#[derive(Debug, Clone, Copy)]
pub struct Actor<'a> {
    pub account_id: i64,
    pub username: &'a Username,
    /// Acts with an admin's rights: an admin's catalog session (signed in
    /// with the password), or an admin's token carrying the `admin` scope.
    pub is_admin: bool,
}

/// Creates an account while registration is open.
pub async fn register(
    registry: &Registry,
    client: &ClientAddr,
    username: &Username,
    password: Password,
) -> Result<AccountRecord, ServiceError> {
    if registry.settings.registration == RegistrationMode::Closed {
        return Err(ServiceError::RegistrationClosed);
    }
    let hash = credentials::hash_new_password(registry, client, password).await?;
    let account = registry
        .db
        .create_account(username, &hash, false)
        .await
        .map_err(|e| match e {
            CreateAccountError::UsernameTaken => ServiceError::Conflict(format!(
                "the username {username} (or one differing only in case or -/_) is taken"
            )),
            CreateAccountError::Db(e) => e.into(),
        })?;
    audit::record(registry, account.id, "account_created", "").await;
    tracing::info!(username = %account.username, is_admin = account.is_admin, "account created");
    Ok(account)
}

/// Makes the configured admins admins (at start-up): each name binds to
/// the account that held it when a registry first started with it, or to
/// none (said in the log, with what to do); says how to make one when
/// there is no admin.
pub async fn apply_configured_admins(registry: &Registry) -> Result<(), ServiceError> {
    for name in &registry.settings.admins {
        let Ok(username) = Username::parse(name) else {
            tracing::warn!(
                name,
                "AGENTLANG_REGISTRY_ADMINS names something that cannot be a username"
            );
            continue;
        };
        match registry.db.bind_configured_admin(&username).await? {
            Some(account) => {
                tracing::info!(username = %account.username, "admin (AGENTLANG_REGISTRY_ADMINS)");
            }
            None => tracing::warn!(
                %username,
                "AGENTLANG_REGISTRY_ADMINS named {username} when no account held the name, so \
                 no account registered under it later becomes an admin by it: once you know \
                 the account is yours, run `agentlang-registry admin grant {username}`"
            ),
        }
    }
    if !registry.db.any_admin().await? {
        tracing::info!(
            "no account is an admin: run `agentlang-registry admin grant USER`, or name \
             existing accounts with AGENTLANG_REGISTRY_ADMINS=alice,bob"
        );
    }
    Ok(())
}

/// Grants or withdraws admin rights (the operator's command); 404 for an
/// unknown account.
pub async fn set_admin(
    db: &store::Db,
    username: &Username,
    is_admin: bool,
) -> Result<AccountRecord, ServiceError> {
    let account = db
        .set_admin(username, is_admin)
        .await?
        .ok_or_else(|| ServiceError::NotFound(format!("account {username}")))?;
    let action = if is_admin {
        "admin_granted"
    } else {
        "admin_revoked"
    };
    if let Err(e) = db.record_audit(account.id, action, "by the operator").await {
        tracing::warn!(error = %e, "cannot record an audit event");
    }
    Ok(account)
}

/// What a password change also ends.
#[derive(Debug, Clone, Copy)]
pub struct PasswordChange<'a> {
    /// The catalog session that asked, kept signed in; every other session
    /// of the account ends.
    pub keep_session: Option<&'a str>,
    /// Revoke every token of the account too.
    pub revoke_tokens: bool,
}

/// Changes a password after checking the current one (same limits as a
/// sign-in); ends the account's other sessions and, on request, revokes
/// its tokens. Returns the account.
pub async fn change_password(
    registry: &Registry,
    client: &ClientAddr,
    username: &str,
    current: &str,
    new: Password,
    change: PasswordChange<'_>,
) -> Result<AccountRecord, ServiceError> {
    let account = credentials::check_password(registry, client, username, current).await?;
    let hash = credentials::hash_new_password(registry, client, new).await?;
    registry.db.set_password_hash(account.id, &hash).await?;
    let sessions = registry
        .db
        .delete_account_sessions(account.id, change.keep_session)
        .await?;
    let tokens = if change.revoke_tokens {
        registry.db.revoke_all_tokens(account.id).await?
    } else {
        0
    };
    audit::record(
        registry,
        account.id,
        "password_changed",
        &format!("{sessions} other sessions ended, {tokens} tokens revoked"),
    )
    .await;
    tracing::info!(username = %account.username, sessions, tokens, "password changed");
    Ok(account)
}

/// The account a token or session belongs to.
pub async fn account(registry: &Registry, account_id: i64) -> Result<AccountRecord, ServiceError> {
    registry
        .db
        .find_account_by_id(account_id)
        .await?
        .ok_or_else(|| ServiceError::NotFound("the token's account".to_owned()))
}
