//! Signing keys: publishers register the public halves of their Ed25519
//! keys with proof that they hold the private half (token scope `keys`);
//! anyone can look a key up by id. A key is
//! revoked, never deleted: versions signed before the revocation stay valid
//! and show the key as revoked; later uploads signed with it are refused.

use actix_web::{HttpResponse, delete, get, post, web};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use agentlang_core::{Username, signing::KeyId};
use app::{
    keys::{self, SigningKeyRecord},
    time::rfc3339,
    tokens::Scope,
};

use crate::{auth::Caller, error::ApiError, state::AppState};

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateKeyRequest {
    /// An Ed25519 public key as SPKI PEM (`BEGIN PUBLIC KEY`).
    #[schema(
        example = "-----BEGIN PUBLIC KEY-----\nMCowBQYDK2VwAyEA...\n-----END PUBLIC KEY-----\n"
    )]
    pub public_key_pem: String,
    /// Proof of possession: the base64 Ed25519 signature, by the private
    /// key, of the UTF-8 text
    /// `agentlang-key-registration:<origin>:<username>:<key id>` (this
    /// registry's origin, `scheme://host[:port]` of its public URL; the
    /// caller's username; the key's id). A proof for another registry, or
    /// of the older text without the origin, is refused.
    #[schema(example = "q8Xb...==")]
    pub proof: String,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct CreatedKey {
    /// Lowercase hex SHA-256 of the raw 32-byte public key.
    #[schema(value_type = String)]
    pub key_id: KeyId,
    pub public_key_pem: String,
    /// RFC 3339.
    pub created_at: String,
}

/// A key as its owner lists it.
#[derive(Debug, Serialize, ToSchema)]
pub struct KeySummary {
    #[schema(value_type = String)]
    pub key_id: KeyId,
    /// RFC 3339.
    pub created_at: String,
    /// RFC 3339; `null` while the key is in force.
    pub revoked_at: Option<String>,
}

impl From<SigningKeyRecord> for KeySummary {
    fn from(k: SigningKeyRecord) -> Self {
        Self {
            key_id: k.key_id,
            created_at: rfc3339(k.created_at),
            revoked_at: k.revoked_at.map(rfc3339),
        }
    }
}

#[derive(Debug, Serialize, ToSchema)]
pub struct KeyList {
    pub keys: Vec<KeySummary>,
}

/// A key as anyone can see it.
#[derive(Debug, Serialize, ToSchema)]
pub struct KeyDetails {
    #[schema(value_type = String)]
    pub key_id: KeyId,
    pub public_key_pem: String,
    /// Username of the account that registered it.
    #[schema(value_type = String)]
    pub owner: Username,
    /// RFC 3339.
    pub created_at: String,
    /// RFC 3339; `null` while the key is in force.
    pub revoked_at: Option<String>,
}

/// Registers a signing key to the caller (token scope `keys`), with proof
/// that the caller holds its private half. The PEM is stored as re-encoded
/// from the parsed key.
#[utoipa::path(
    tag = "keys",
    request_body = CreateKeyRequest,
    security(("bearer" = ["keys"])),
    responses(
        (status = 201, description = "Registered", body = CreatedKey),
        (status = 401, description = "Missing or invalid token", body = crate::error::Problem, content_type = "application/problem+json"),
        (status = 403, description = "The token lacks the `keys` scope (`missing-scope`)", body = crate::error::Problem, content_type = "application/problem+json"),
        (status = 409, description = "The key is already registered (to any account)", body = crate::error::Problem, content_type = "application/problem+json"),
        (status = 422, description = "Not an Ed25519 SPKI PEM key, a weak key, or a proof that does not verify (for this account, key and registry origin)", body = crate::error::Problem, content_type = "application/problem+json"),
    )
)]
#[post("/api/v1/keys")]
pub async fn create_key(
    state: web::Data<AppState>,
    auth: Caller,
    body: web::Json<CreateKeyRequest>,
) -> Result<HttpResponse, ApiError> {
    auth.require(Scope::Keys)?;
    let record = keys::register_key(
        &state,
        auth.account_id,
        &auth.username,
        &body.public_key_pem,
        &body.proof,
    )
    .await?;
    Ok(HttpResponse::Created().json(CreatedKey {
        key_id: record.key_id,
        public_key_pem: record.public_key_pem,
        created_at: rfc3339(record.created_at),
    }))
}

/// Lists the caller's keys, revoked ones included.
#[utoipa::path(
    tag = "keys",
    security(("bearer" = [])),
    responses(
        (status = 200, body = KeyList, description = "The caller's keys"),
        (status = 401, description = "Missing or invalid token", body = crate::error::Problem, content_type = "application/problem+json"),
    )
)]
#[get("/api/v1/keys")]
pub async fn list_keys(state: web::Data<AppState>, auth: Caller) -> Result<HttpResponse, ApiError> {
    let keys = keys::list_keys(&state, auth.account_id)
        .await?
        .into_iter()
        .map(KeySummary::from)
        .collect();
    Ok(HttpResponse::Ok().json(KeyList { keys }))
}

/// One key, with its owner (public).
#[utoipa::path(
    tag = "keys",
    params(("key_id" = String, Path, description = "Lowercase hex SHA-256 of the raw public key")),
    responses(
        (status = 200, body = KeyDetails, description = "The key and its owner"),
        (status = 404, description = "No such key", body = crate::error::Problem, content_type = "application/problem+json"),
    )
)]
#[get("/api/v1/keys/{key_id}")]
pub async fn get_key(
    state: web::Data<AppState>,
    key_id: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let key = keys::find_key(&state, &key_id).await?;
    Ok(HttpResponse::Ok().json(KeyDetails {
        key_id: key.key_id,
        public_key_pem: key.public_key_pem,
        owner: key.owner,
        created_at: rfc3339(key.created_at),
        revoked_at: key.revoked_at.map(rfc3339),
    }))
}

/// Revokes one of the caller's keys (token scope `keys`). Revoking a revoked
/// key keeps its first revocation time.
#[utoipa::path(
    tag = "keys",
    params(("key_id" = String, Path, description = "Lowercase hex SHA-256 of the raw public key")),
    security(("bearer" = ["keys"])),
    responses(
        (status = 200, description = "The key, revoked", body = KeySummary),
        (status = 401, description = "Missing or invalid token", body = crate::error::Problem, content_type = "application/problem+json"),
        (status = 403, description = "The token lacks the `keys` scope (`missing-scope`)", body = crate::error::Problem, content_type = "application/problem+json"),
        (status = 404, description = "The caller has no such key", body = crate::error::Problem, content_type = "application/problem+json"),
    )
)]
#[delete("/api/v1/keys/{key_id}")]
pub async fn revoke_key(
    state: web::Data<AppState>,
    auth: Caller,
    key_id: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    auth.require(Scope::Keys)?;
    let key = keys::revoke_key(&state, auth.account_id, &auth.username, &key_id).await?;
    Ok(HttpResponse::Ok().json(KeySummary::from(key)))
}
