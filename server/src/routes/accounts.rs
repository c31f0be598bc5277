//! Accounts: registration.

use actix_web::{HttpResponse, post, web};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::{
    auth::{Password, Username},
    config::RegistrationMode,
    db::accounts::{AdminRule, CreateAccountError},
    error::{ApiError, FieldError},
    rate_limit::ClientAddr,
    routes::rfc3339,
    service::credentials::hash_new_password,
    state::AppState,
};

/// Fields are optional in the wire type so that a missing one is reported
/// with the others, not as a bare deserialization error.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateAccountRequest {
    /// 1 to 39 ASCII letters, digits, `-`, `_`; starts with a letter.
    #[schema(example = "alice")]
    pub username: Option<String>,
    /// 8 to 1024 bytes.
    #[schema(example = "correct horse battery")]
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
    pub username: String,
    /// Admins may edit the models catalog.
    pub is_admin: bool,
    /// RFC 3339.
    pub created_at: String,
}

/// Creates an account while registration is open.
///
/// The first admin is the account named by `AGENTLANG_REGISTRY_ADMIN`, or,
/// when that is not set, the first account ever created.
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
    client: ClientAddr,
    body: web::Json<CreateAccountRequest>,
) -> Result<HttpResponse, ApiError> {
    if state.config.registration == RegistrationMode::Closed {
        return Err(ApiError::RegistrationClosed);
    }
    let new = NewAccount::try_from(body.into_inner()).map_err(ApiError::Validation)?;
    let hash = hash_new_password(&state, &client, new.password).await?;
    let admin = match state.config.admin.as_deref() {
        Some(name) => AdminRule::Named(name),
        None => AdminRule::FirstAccount,
    };
    let account = state
        .db
        .create_account(&new.username, &hash, admin)
        .await
        .map_err(|e| match e {
            CreateAccountError::UsernameTaken => ApiError::Conflict(format!(
                "the username {} (or one differing only in case or -/_) is taken",
                new.username
            )),
            CreateAccountError::Db(e) => e.into(),
        })?;
    tracing::info!(username = %account.username, is_admin = account.is_admin, "account created");
    Ok(HttpResponse::Created().json(AccountResponse {
        username: account.username,
        is_admin: account.is_admin,
        created_at: rfc3339(account.created_at),
    }))
}
