//! API tokens: created with a username and password, listed and revoked
//! with a token.

use actix_web::{HttpResponse, delete, get, post, web};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::{auth::Caller, error::ApiError, rate_limit::Client, state::AppState};
use app::{FieldError, ServiceError};
use app::{
    accounts::Actor,
    credentials::check_password,
    time::rfc3339,
    tokens::{self, NamePattern, Scope, TokenRecord, TokenSpec},
};

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateTokenRequest {
    #[schema(value_type = String, required = true, example = "alice")]
    pub username: Option<String>,
    #[schema(value_type = String, required = true)]
    pub password: Option<String>,
    /// A label for listing, 1 to 64 characters.
    #[schema(example = "laptop")]
    pub name: Option<String>,
    /// Any of `publish`, `yank`, `keys`, `owners`, `tokens`, `admin`
    /// (admins only); empty for a read-only token. At most 16 entries.
    #[schema(example = json!(["publish", "yank"]), max_items = 16)]
    pub scopes: Option<Vec<String>>,
    /// 1 to 365; 90 when absent.
    pub expires_in_days: Option<i64>,
    /// Restricts the token to packages matching these patterns (`*`
    /// wildcards). 1 to 32 entries.
    #[schema(example = json!(["acme-*"]), max_items = 32)]
    pub packages: Option<Vec<String>>,
    /// Second factor: a current TOTP code (or a recovery code), required
    /// when the account has enabled one; the token then records it.
    #[schema(example = "123456")]
    pub otp: Option<String>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct CreatedToken {
    /// The bearer token. Shown once; the registry keeps only a hash of its
    /// secret.
    pub token: String,
    /// The token's id, for listing and revocation (not a credential).
    pub id: String,
    pub name: String,
    pub scopes: Vec<Scope>,
    pub packages: Option<Vec<NamePattern>>,
    /// RFC 3339.
    pub expires_at: String,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct TokenInfo {
    pub id: String,
    pub name: String,
    pub scopes: Vec<Scope>,
    pub packages: Option<Vec<NamePattern>>,
    pub created_at: String,
    pub expires_at: String,
    pub revoked_at: Option<String>,
    pub last_used_at: Option<String>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct TokenList {
    pub tokens: Vec<TokenInfo>,
}

impl From<TokenRecord> for TokenInfo {
    fn from(t: TokenRecord) -> Self {
        Self {
            id: t.jti,
            name: t.name,
            scopes: t.scopes.0,
            packages: t.packages.map(|p| p.0),
            created_at: rfc3339(t.created_at),
            expires_at: rfc3339(t.expires_at),
            revoked_at: t.revoked_at.map(rfc3339),
            last_used_at: t.last_used_at.map(rfc3339),
        }
    }
}

/// Creates an API token from a username and password.
///
/// The token is an HS256 JWT with `iss` (the registry's public URL),
/// `aud` (`agentlang-registry`), `sub`, `exp`, `jti` (the token's public id)
/// and `sec` (its random secret, of which the registry keeps only a hash).
/// Only an admin's token may carry the `admin` scope.
#[utoipa::path(
    tag = "tokens",
    request_body = CreateTokenRequest,
    responses(
        (status = 201, body = CreatedToken, description = "The new token; its secret is shown only here"),
        (status = 401, description = "Wrong username or password (`invalid-credentials`); the account has a second factor and `otp` is missing (`two-factor-code-required`) or wrong, expired or used (`two-factor-code-invalid`)", body = crate::error::Problem, content_type = "application/problem+json"),
        (status = 422, description = "Invalid fields, every one listed", body = crate::error::Problem, content_type = "application/problem+json"),
        (status = 429, description = "Too many requests", body = crate::error::Problem, content_type = "application/problem+json"),
    )
)]
#[post("/api/v1/tokens")]
pub async fn create_token(
    state: web::Data<AppState>,
    Client(client): Client,
    body: web::Json<CreateTokenRequest>,
) -> Result<HttpResponse, ApiError> {
    let body = body.into_inner();
    let mut errors = Vec::new();
    let username = body.username.unwrap_or_default();
    if username.is_empty() {
        errors.push(FieldError::new("username", "is required"));
    }
    let password = body.password.unwrap_or_default();
    if password.is_empty() {
        errors.push(FieldError::new("password", "is required"));
    }
    let spec = TokenSpec::parse(
        body.name.as_deref().unwrap_or_default(),
        body.scopes.as_deref(),
        body.expires_in_days,
        body.packages.as_deref(),
    );
    let mut spec = match spec {
        Ok(spec) if errors.is_empty() => spec,
        Ok(_) => return Err(ServiceError::Validation(errors).into()),
        Err(more) => {
            errors.extend(more);
            return Err(ServiceError::Validation(errors).into());
        }
    };
    let account = check_password(&state, &client, &username, &password).await?;
    spec.second_factor =
        tokens::second_factor_for_minting(&state, account.id, body.otp.as_deref()).await?;
    let created = tokens::create_token(
        &state,
        Actor {
            account_id: account.id,
            username: &account.username,
            is_admin: account.is_admin,
        },
        spec,
    )
    .await?;
    let record = created.record;
    Ok(HttpResponse::Created().json(CreatedToken {
        token: created.token,
        id: record.jti,
        name: record.name,
        scopes: record.scopes.0,
        packages: record.packages.map(|p| p.0),
        expires_at: rfc3339(record.expires_at),
    }))
}

/// Lists the caller's tokens, revoked ones included; never anything that
/// authenticates (token scope `tokens`).
#[utoipa::path(
    tag = "tokens",
    security(("bearer" = ["tokens"])),
    responses(
        (status = 200, body = TokenList, description = "The caller's tokens, never their secrets"),
        (status = 401, description = "Missing, invalid, expired or revoked token", body = crate::error::Problem, content_type = "application/problem+json"),
        (status = 403, description = "The token lacks the `tokens` scope (`missing-scope`)", body = crate::error::Problem, content_type = "application/problem+json"),
    )
)]
#[get("/api/v1/tokens")]
pub async fn list_tokens(
    state: web::Data<AppState>,
    auth: Caller,
) -> Result<HttpResponse, ApiError> {
    auth.require(Scope::Tokens)?;
    let tokens = tokens::list_tokens(&state, auth.account_id)
        .await?
        .into_iter()
        .map(TokenInfo::from)
        .collect();
    Ok(HttpResponse::Ok().json(TokenList { tokens }))
}

/// Revokes one of the caller's tokens (token scope `tokens`), or the token
/// in use with any scope: giving up one's own credential (a logout).
#[utoipa::path(
    tag = "tokens",
    security(("bearer" = ["tokens"])),
    params(("id" = String, Path, description = "The token's id")),
    responses(
        (status = 204, description = "Revoked (or already revoked)"),
        (status = 401, description = "Missing, invalid, expired or revoked token", body = crate::error::Problem, content_type = "application/problem+json"),
        (status = 403, description = "Another token, and this one lacks the `tokens` scope (`missing-scope`)", body = crate::error::Problem, content_type = "application/problem+json"),
        (status = 404, description = "The caller has no such token", body = crate::error::Problem, content_type = "application/problem+json"),
    )
)]
#[delete("/api/v1/tokens/{id}")]
pub async fn revoke_token(
    state: web::Data<AppState>,
    auth: Caller,
    id: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    // A token may always give itself up: `agentlang logout` revokes what
    // `login` minted, which carries no `tokens` scope.
    if *id != auth.token_id {
        auth.require(Scope::Tokens)?;
    }
    tokens::revoke_token(&state, auth.account_id, &auth.username, &id).await?;
    Ok(HttpResponse::NoContent().finish())
}
