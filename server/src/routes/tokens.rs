//! API tokens: created with a username and password, listed and revoked
//! with a token.

use std::collections::BTreeSet;

use actix_web::{HttpResponse, delete, get, post, web};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::{
    auth::{Authenticated, NamePattern, Scope},
    db::{now, tokens::NewToken},
    error::{ApiError, FieldError},
    rate_limit::ClientAddr,
    routes::rfc3339,
    service::credentials::check_password,
    state::AppState,
};

pub const DEFAULT_TOKEN_DAYS: i64 = 90;
pub const MAX_TOKEN_DAYS: i64 = 365;
pub const MAX_TOKEN_NAME_LEN: usize = 64;
/// Scopes a request may list (repeats included); there are four.
pub const MAX_LISTED_SCOPES: usize = 16;
/// Package patterns one token may carry.
pub const MAX_TOKEN_PATTERNS: usize = 32;
const SECONDS_PER_DAY: i64 = 86_400;

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateTokenRequest {
    #[schema(example = "alice")]
    pub username: Option<String>,
    pub password: Option<String>,
    /// A label for listing, 1 to 64 characters.
    #[schema(example = "laptop")]
    pub name: Option<String>,
    /// Any of `publish`, `yank`, `keys`, `owners`; empty for a read-only
    /// token. At most 16 entries.
    #[schema(example = json!(["publish", "yank"]), max_items = 16)]
    pub scopes: Option<Vec<String>>,
    /// 1 to 365; 90 when absent.
    pub expires_in_days: Option<i64>,
    /// Restricts the token to packages matching these patterns (`*`
    /// wildcards). 1 to 32 entries.
    #[schema(example = json!(["acme-*"]), max_items = 32)]
    pub packages: Option<Vec<String>>,
}

/// The checked form of [`CreateTokenRequest`].
#[derive(Debug)]
pub struct NewTokenRequest {
    pub username: String,
    pub password: String,
    pub name: String,
    pub scopes: Vec<Scope>,
    pub expires_in_days: i64,
    pub packages: Option<Vec<NamePattern>>,
}

impl TryFrom<CreateTokenRequest> for NewTokenRequest {
    type Error = Vec<FieldError>;
    fn try_from(req: CreateTokenRequest) -> Result<Self, Self::Error> {
        let mut errors = Vec::new();
        let username = req.username.unwrap_or_default();
        if username.is_empty() {
            errors.push(FieldError::new("username", "is required"));
        }
        let password = req.password.unwrap_or_default();
        if password.is_empty() {
            errors.push(FieldError::new("password", "is required"));
        }
        let name = req.name.unwrap_or_default();
        if name.trim().is_empty() {
            errors.push(FieldError::new("name", "is required"));
        } else if name.chars().count() > MAX_TOKEN_NAME_LEN {
            errors.push(FieldError::new(
                "name",
                format!("must be at most {MAX_TOKEN_NAME_LEN} characters"),
            ));
        } else if name.chars().any(char::is_control) {
            errors.push(FieldError::new(
                "name",
                "must not contain control characters",
            ));
        }
        // Counted before each item is checked: a list of thousands costs one
        // comparison, not thousands of field errors.
        if req
            .scopes
            .as_ref()
            .is_some_and(|s| s.len() > MAX_LISTED_SCOPES)
        {
            return Err(vec![FieldError::new(
                "scopes",
                format!("at most {MAX_LISTED_SCOPES} entries are allowed"),
            )]);
        }
        if req
            .packages
            .as_ref()
            .is_some_and(|p| p.len() > MAX_TOKEN_PATTERNS)
        {
            return Err(vec![FieldError::new(
                "packages",
                format!("at most {MAX_TOKEN_PATTERNS} entries are allowed"),
            )]);
        }
        let mut scopes = BTreeSet::new();
        match req.scopes {
            None => errors.push(FieldError::new(
                "scopes",
                "is required (an empty list makes a read-only token)",
            )),
            Some(raw) => {
                for (i, s) in raw.iter().enumerate() {
                    match s.parse::<Scope>() {
                        Ok(scope) => {
                            scopes.insert(scope);
                        }
                        Err(m) => errors.push(FieldError::new(format!("scopes[{i}]"), m)),
                    }
                }
            }
        }
        let expires_in_days = req.expires_in_days.unwrap_or(DEFAULT_TOKEN_DAYS);
        if !(1..=MAX_TOKEN_DAYS).contains(&expires_in_days) {
            errors.push(FieldError::new(
                "expires_in_days",
                format!("must be between 1 and {MAX_TOKEN_DAYS}"),
            ));
        }
        let packages = match req.packages {
            None => None,
            Some(raw) if raw.is_empty() => {
                errors.push(FieldError::new(
                    "packages",
                    "must name at least one pattern when present",
                ));
                None
            }
            Some(raw) => {
                let mut patterns = Vec::new();
                for (i, p) in raw.iter().enumerate() {
                    match NamePattern::parse(p) {
                        Ok(pattern) => patterns.push(pattern),
                        Err(m) => errors.push(FieldError::new(format!("packages[{i}]"), m)),
                    }
                }
                Some(patterns)
            }
        };
        if !errors.is_empty() {
            return Err(errors);
        }
        Ok(Self {
            username,
            password,
            name,
            scopes: scopes.into_iter().collect(),
            expires_in_days,
            packages,
        })
    }
}

#[derive(Debug, Serialize, ToSchema)]
pub struct CreatedToken {
    /// The bearer token. Shown once; the registry keeps only its id.
    pub token: String,
    /// The token's id, for listing and revocation.
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

/// Creates an API token from a username and password.
///
/// The token is an HS256 JWT with `iss` (the registry's public URL),
/// `aud` (`agentlang-registry`), `sub`, `exp` and `jti`.
#[utoipa::path(
    tag = "tokens",
    request_body = CreateTokenRequest,
    responses(
        (status = 201, body = CreatedToken, description = "The new token; its secret is shown only here"),
        (status = 401, description = "Wrong username or password", body = crate::error::Problem, content_type = "application/problem+json"),
        (status = 422, description = "Invalid fields, every one listed", body = crate::error::Problem, content_type = "application/problem+json"),
        (status = 429, description = "Too many requests", body = crate::error::Problem, content_type = "application/problem+json"),
    )
)]
#[post("/api/v1/tokens")]
pub async fn create_token(
    state: web::Data<AppState>,
    client: ClientAddr,
    body: web::Json<CreateTokenRequest>,
) -> Result<HttpResponse, ApiError> {
    let new = NewTokenRequest::try_from(body.into_inner()).map_err(ApiError::Validation)?;
    let account = check_password(&state, &client, &new.username, &new.password).await?;
    let jti = uuid::Uuid::now_v7().to_string();
    let created_at = now();
    let expires_at = created_at + new.expires_in_days * SECONDS_PER_DAY;
    state
        .db
        .insert_token(&NewToken {
            jti: &jti,
            account_id: account.id,
            name: &new.name,
            scopes: &new.scopes,
            packages: new.packages.as_deref(),
            created_at,
            expires_at,
        })
        .await?;
    let token = state
        .tokens
        .issue(account.id, &jti, created_at, expires_at)
        .map_err(ApiError::internal)?;
    tracing::info!(username = %account.username, token_id = %jti, "token created");
    Ok(HttpResponse::Created().json(CreatedToken {
        token,
        id: jti,
        name: new.name,
        scopes: new.scopes,
        packages: new.packages,
        expires_at: rfc3339(expires_at),
    }))
}

/// Lists the caller's tokens, revoked ones included; never the secrets.
#[utoipa::path(
    tag = "tokens",
    security(("bearer" = [])),
    responses(
        (status = 200, body = TokenList, description = "The caller's tokens, never their secrets"),
        (status = 401, description = "Missing, invalid, expired or revoked token", body = crate::error::Problem, content_type = "application/problem+json"),
    )
)]
#[get("/api/v1/tokens")]
pub async fn list_tokens(
    state: web::Data<AppState>,
    auth: Authenticated,
) -> Result<HttpResponse, ApiError> {
    let tokens = state
        .db
        .list_tokens(auth.account_id)
        .await?
        .into_iter()
        .map(|t| TokenInfo {
            id: t.jti,
            name: t.name,
            scopes: t.scopes.0,
            packages: t.packages.map(|p| p.0),
            created_at: rfc3339(t.created_at),
            expires_at: rfc3339(t.expires_at),
            revoked_at: t.revoked_at.map(rfc3339),
            last_used_at: t.last_used_at.map(rfc3339),
        })
        .collect();
    Ok(HttpResponse::Ok().json(TokenList { tokens }))
}

/// Revokes one of the caller's tokens (possibly the one in use).
#[utoipa::path(
    tag = "tokens",
    security(("bearer" = [])),
    params(("id" = String, Path, description = "The token's id")),
    responses(
        (status = 204, description = "Revoked (or already revoked)"),
        (status = 401, description = "Missing, invalid, expired or revoked token", body = crate::error::Problem, content_type = "application/problem+json"),
        (status = 404, description = "The caller has no such token", body = crate::error::Problem, content_type = "application/problem+json"),
    )
)]
#[delete("/api/v1/tokens/{id}")]
pub async fn revoke_token(
    state: web::Data<AppState>,
    auth: Authenticated,
    id: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    if state.db.revoke_token(auth.account_id, &id).await? {
        tracing::info!(username = %auth.username, token_id = %id, "token revoked");
        Ok(HttpResponse::NoContent().finish())
    } else {
        Err(ApiError::NotFound(format!("token {id}")))
    }
}
