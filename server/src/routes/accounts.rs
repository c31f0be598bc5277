//! Accounts: registration, the caller's account, password changes and the
//! audit list.

use actix_web::{HttpResponse, get, post, web};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use app::{FieldError, ServiceError};

use crate::{auth::Caller, error::ApiError, rate_limit::Client, state::AppState};
use agentlang_core::Username;
use app::{
    accounts::{self, AccountRecord, PasswordChange},
    audit,
    credentials::Password,
    time::rfc3339,
};

/// Fields are optional in the wire type so that a missing one is reported
/// with the others, not as a bare deserialization error.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateAccountRequest {
    /// 1 to 39 ASCII letters, digits, `-`, `_`; starts with a letter.
    #[schema(value_type = String, required = true, example = "alice")]
    pub username: Option<String>,
    /// 8 to 1024 bytes.
    #[schema(value_type = String, required = true, example = "correct horse battery")]
    pub password: Option<String>,
}

/// The checked form of [`CreateAccountRequest`].
#[derive(Debug)]
pub struct NewAccount {
    pub username: Username,
    pub password: Password,
}

impl TryFrom<CreateAccountRequest> for NewAccount {
    type Error = Vec<FieldError>;
    fn try_from(req: CreateAccountRequest) -> Result<Self, Self::Error> {
        let mut errors = Vec::new();
        let username = match req.username.as_deref().map(Username::parse) {
            None => {
                errors.push(FieldError::new("username", "is required"));
                None
            }
            Some(Err(m)) => {
                errors.push(FieldError::new("username", m));
                None
            }
            Some(Ok(u)) => Some(u),
        };
        let password = match req.password.as_deref().map(Password::parse) {
            None => {
                errors.push(FieldError::new("password", "is required"));
                None
            }
            Some(Err(m)) => {
                errors.push(FieldError::new("password", m));
                None
            }
            Some(Ok(p)) => Some(p),
        };
        match (username, password) {
            (Some(username), Some(password)) if errors.is_empty() => {
                Ok(Self { username, password })
            }
            _ => Err(errors),
        }
    }
}

#[derive(Debug, Serialize, ToSchema)]
pub struct AccountResponse {
    #[schema(value_type = String)]
    pub username: Username,
    /// Admins may edit the models catalog.
    pub is_admin: bool,
    /// RFC 3339.
    pub created_at: String,
}

impl From<AccountRecord> for AccountResponse {
    fn from(account: AccountRecord) -> Self {
        Self {
            username: account.username,
            is_admin: account.is_admin,
            created_at: rfc3339(account.created_at),
        }
    }
}

/// Creates an account while registration is open. No account becomes an
/// admin by registering: the operator names admins
/// (`AGENTLANG_REGISTRY_ADMINS`, `agentlang-registry admin grant`).
#[utoipa::path(
    tag = "accounts",
    request_body = CreateAccountRequest,
    responses(
        (status = 201, body = AccountResponse, description = "The new account"),
        (status = 403, description = "Registration is closed", body = crate::error::Problem, content_type = "application/problem+json"),
        (status = 409, description = "The username (or a look-alike) is taken", body = crate::error::Problem, content_type = "application/problem+json"),
        (status = 422, description = "Invalid fields, every one listed", body = crate::error::Problem, content_type = "application/problem+json"),
        (status = 429, description = "Too many requests", body = crate::error::Problem, content_type = "application/problem+json"),
    )
)]
#[post("/api/v1/accounts")]
pub async fn create_account(
    state: web::Data<AppState>,
    Client(client): Client,
    body: web::Json<CreateAccountRequest>,
) -> Result<HttpResponse, ApiError> {
    let new = NewAccount::try_from(body.into_inner()).map_err(ServiceError::Validation)?;
    let account = accounts::register(&state, &client, &new.username, new.password).await?;
    Ok(HttpResponse::Created().json(AccountResponse::from(account)))
}

/// The account the token belongs to.
#[utoipa::path(
    tag = "accounts",
    security(("bearer" = [])),
    responses(
        (status = 200, body = AccountResponse, description = "The caller's account"),
        (status = 401, description = "Missing or invalid token", body = crate::error::Problem, content_type = "application/problem+json"),
    )
)]
#[get("/api/v1/account")]
pub async fn get_account(
    state: web::Data<AppState>,
    auth: Caller,
) -> Result<HttpResponse, ApiError> {
    let account = accounts::account(&state, auth.account_id).await?;
    Ok(HttpResponse::Ok().json(AccountResponse::from(account)))
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ChangePasswordRequest {
    #[schema(example = "alice")]
    pub username: String,
    /// The current password.
    pub password: String,
    /// 8 to 1024 bytes.
    pub new_password: String,
    /// Also revoke every token of the account (default false). Catalog
    /// sessions always end.
    #[serde(default)]
    pub revoke_tokens: bool,
}

/// Changes an account's password, given the current one. Every catalog
/// session of the account ends; with `revoke_tokens`, every token too.
#[utoipa::path(
    tag = "accounts",
    request_body = ChangePasswordRequest,
    responses(
        (status = 200, body = AccountResponse, description = "Changed"),
        (status = 401, description = "Wrong username or password", body = crate::error::Problem, content_type = "application/problem+json"),
        (status = 422, description = "The new password is not acceptable", body = crate::error::Problem, content_type = "application/problem+json"),
        (status = 429, description = "Too many requests", body = crate::error::Problem, content_type = "application/problem+json"),
    )
)]
#[post("/api/v1/account/password")]
pub async fn change_password(
    state: web::Data<AppState>,
    Client(client): Client,
    body: web::Json<ChangePasswordRequest>,
) -> Result<HttpResponse, ApiError> {
    let new = Password::parse(&body.new_password)
        .map_err(|m| ServiceError::Validation(vec![FieldError::new("new_password", m)]))?;
    let account = accounts::change_password(
        &state,
        &client,
        &body.username,
        &body.password,
        new,
        PasswordChange {
            keep_session: None,
            revoke_tokens: body.revoke_tokens,
        },
    )
    .await?;
    Ok(HttpResponse::Ok().json(AccountResponse::from(account)))
}

#[derive(Debug, Serialize, ToSchema)]
pub struct AuditEvent {
    /// RFC 3339.
    pub at: String,
    /// `signed_in`, `password_changed`, `token_created`, `token_revoked`,
    /// `key_registered`, `key_revoked`, `owner_invited`, `invited`,
    /// `owner_added`, `owner_removed`, ...
    #[schema(example = "token_created")]
    pub action: String,
    pub detail: String,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct AuditList {
    /// The latest 100, newest first.
    pub events: Vec<AuditEvent>,
}

/// What happened to the caller's account: sign-ins, password changes,
/// tokens, keys, ownership.
#[utoipa::path(
    tag = "accounts",
    security(("bearer" = [])),
    responses(
        (status = 200, body = AuditList, description = "The latest events, newest first"),
        (status = 401, description = "Missing or invalid token", body = crate::error::Problem, content_type = "application/problem+json"),
    )
)]
#[get("/api/v1/account/audit")]
pub async fn list_audit_events(
    state: web::Data<AppState>,
    auth: Caller,
) -> Result<HttpResponse, ApiError> {
    let events = audit::list(&state, auth.account_id)
        .await?
        .into_iter()
        .map(|e| AuditEvent {
            at: rfc3339(e.at),
            action: e.action,
            detail: e.detail,
        })
        .collect();
    Ok(HttpResponse::Ok().json(AuditList { events }))
}
