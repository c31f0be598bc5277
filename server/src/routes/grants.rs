//! Prompt recipients and prompt-key grants (docs/prompt-grants.md): an
//! account registers the age recipients it holds the identities of; an
//! owner of a sealed agent grants its prompt key, wrapped to a grantee's
//! recipients; the grantee fetches it per version. Every route needs the
//! token scope `grants`. The rules are [`app::grants`]'.

use actix_web::{HttpResponse, delete, get, http::header, post, put, web};
use agentlang_core::{PackageName, Username, Version};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use crate::{auth::Caller, error::ApiError, state::AppState};
use app::{
    ServiceError,
    grants::{self, GrantRequest, GrantView, RecipientView},
};

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ChallengeRequest {
    /// An age X25519 recipient (`age1…`, lowercase).
    #[schema(example = "age1ql3z7hjy54pw3hyww5ayyfg7zqgvc7w3j2elw8zmrj2kg5sfn9aqmcac8p")]
    pub recipient: String,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct Challenge {
    /// An armored age file to the recipient. Its plaintext,
    /// `agentlang-recipient-proof:<origin>:<username>:<recipient>:<expires>:<mac>`,
    /// is the proof `POST /api/v1/account/prompt-recipients` takes, for
    /// ten minutes.
    #[schema(
        example = "-----BEGIN AGE ENCRYPTED FILE-----\n...\n-----END AGE ENCRYPTED FILE-----\n"
    )]
    pub challenge: String,
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RecipientRequest {
    /// An age X25519 recipient (`age1…`, lowercase).
    #[schema(example = "age1ql3z7hjy54pw3hyww5ayyfg7zqgvc7w3j2elw8zmrj2kg5sfn9aqmcac8p")]
    pub recipient: String,
    /// The plaintext of the challenge the registry answered for this
    /// recipient.
    #[schema(
        example = "agentlang-recipient-proof:https://registry.example:alice:age1…:1767225600:…"
    )]
    pub proof: String,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct RecipientList {
    /// Oldest first; at most 8.
    pub recipients: Vec<RecipientView>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct AccountRecipients {
    #[schema(value_type = String)]
    pub username: Username,
    /// Oldest first; at most 8. Wrap a key to all of them.
    pub recipients: Vec<RecipientView>,
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct GrantBody {
    /// The id of the prompt key wrapped (16 lowercase hex digits).
    #[schema(example = "0123456789abcdef")]
    pub key_id: String,
    /// A SemVer range limiting the grant (at most 256 bytes); `null` or
    /// absent: every version the key seals. Versions built before key ids
    /// were recorded are covered only by a range.
    #[serde(default)]
    #[schema(example = "^1")]
    pub versions: Option<String>,
    /// The prompt key file's content, wrapped to every recipient of the
    /// grantee as one armored age file (at most 8 KiB).
    #[schema(
        example = "-----BEGIN AGE ENCRYPTED FILE-----\n...\n-----END AGE ENCRYPTED FILE-----\n"
    )]
    pub wrapped: String,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct GrantList {
    pub grants: Vec<GrantView>,
}

/// `/agents/{name}/grants/{username}` as it appears in a URL.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Path)]
pub struct GrantPath {
    /// The agent's name (any spelling: case and `-`/`_` are folded).
    pub name: String,
    /// The grantee's username.
    pub username: String,
}

/// `/agents/{name}/{version}` as it appears in a URL.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Path)]
pub struct AgentVersionPath {
    /// The agent's name (any spelling: case and `-`/`_` are folded).
    pub name: String,
    /// A SemVer version.
    pub version: String,
}

/// What cannot name an agent is a 404, like an agent that does not exist.
fn agent_name(raw: &str) -> Result<PackageName, ApiError> {
    PackageName::new(raw).map_err(|_| ServiceError::NotFound(format!("agent {raw:?}")).into())
}

/// A challenge for registering a prompt recipient: an age file to it whose
/// plaintext proves, sent back, that the caller holds its identity.
#[utoipa::path(
    tag = "grants",
    request_body = ChallengeRequest,
    security(("bearer" = ["grants"])),
    responses(
        (status = 200, description = "The challenge", body = Challenge),
        (status = 403, description = "The token lacks the `grants` scope (`missing-scope`)", body = crate::error::Problem, content_type = "application/problem+json"),
        (status = 422, description = "Not an age X25519 recipient (`validation-failed`)", body = crate::error::Problem, content_type = "application/problem+json"),
    )
)]
#[post("/api/v1/account/prompt-recipients/challenge")]
pub async fn create_recipient_challenge(
    state: web::Data<AppState>,
    auth: Caller,
    body: web::Json<ChallengeRequest>,
) -> Result<HttpResponse, ApiError> {
    let challenge = grants::recipient_challenge(&state, &auth, &body.recipient)?;
    Ok(HttpResponse::Ok()
        .insert_header((header::CACHE_CONTROL, "private, no-store"))
        .json(Challenge { challenge }))
}

/// Registers a prompt recipient to the caller with the proof its challenge
/// held. Registering one again answers 200.
#[utoipa::path(
    tag = "grants",
    request_body = RecipientRequest,
    security(("bearer" = ["grants"])),
    responses(
        (status = 201, description = "Registered", body = RecipientView),
        (status = 200, description = "The caller had registered it already", body = RecipientView),
        (status = 403, description = "The token lacks the `grants` scope (`missing-scope`)", body = crate::error::Problem, content_type = "application/problem+json"),
        (status = 409, description = "The caller holds 8 recipients, the most an account may (`too-many-recipients`)", body = crate::error::Problem, content_type = "application/problem+json"),
        (status = 422, description = "Not an age X25519 recipient (`validation-failed`), or a proof for another account, recipient or registry, altered or expired (`proof-invalid`)", body = crate::error::Problem, content_type = "application/problem+json"),
    )
)]
#[post("/api/v1/account/prompt-recipients")]
pub async fn create_prompt_recipient(
    state: web::Data<AppState>,
    auth: Caller,
    body: web::Json<RecipientRequest>,
) -> Result<HttpResponse, ApiError> {
    let (recipient, created) =
        grants::register_recipient(&state, &auth, &body.recipient, &body.proof).await?;
    Ok(if created {
        HttpResponse::Created().json(recipient)
    } else {
        HttpResponse::Ok().json(recipient)
    })
}

/// The caller's prompt recipients.
#[utoipa::path(
    tag = "grants",
    security(("bearer" = ["grants"])),
    responses(
        (status = 200, description = "The caller's recipients", body = RecipientList),
        (status = 403, description = "The token lacks the `grants` scope (`missing-scope`)", body = crate::error::Problem, content_type = "application/problem+json"),
    )
)]
#[get("/api/v1/account/prompt-recipients")]
pub async fn list_prompt_recipients(
    state: web::Data<AppState>,
    auth: Caller,
) -> Result<HttpResponse, ApiError> {
    let recipients = grants::own_recipients(&state, &auth).await?;
    Ok(HttpResponse::Ok().json(RecipientList { recipients }))
}

/// Removes one of the caller's prompt recipients. Grants already wrapped to
/// it stay openable by its identity.
#[utoipa::path(
    tag = "grants",
    params(("recipient" = String, Path, description = "The recipient (`age1…`)")),
    security(("bearer" = ["grants"])),
    responses(
        (status = 204, description = "Removed"),
        (status = 403, description = "The token lacks the `grants` scope (`missing-scope`)", body = crate::error::Problem, content_type = "application/problem+json"),
        (status = 404, description = "The caller has no such recipient", body = crate::error::Problem, content_type = "application/problem+json"),
    )
)]
#[delete("/api/v1/account/prompt-recipients/{recipient}")]
pub async fn delete_prompt_recipient(
    state: web::Data<AppState>,
    auth: Caller,
    recipient: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    grants::remove_recipient(&state, &auth, &recipient).await?;
    Ok(HttpResponse::NoContent().finish())
}

/// An account's prompt recipients (public keys), to wrap a grant to.
#[utoipa::path(
    tag = "grants",
    params(("username" = String, Path, description = "The account's username")),
    security(("bearer" = ["grants"])),
    responses(
        (status = 200, description = "The account's recipients", body = AccountRecipients),
        (status = 403, description = "The token lacks the `grants` scope (`missing-scope`)", body = crate::error::Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such account", body = crate::error::Problem, content_type = "application/problem+json"),
    )
)]
#[get("/api/v1/accounts/{username}/prompt-recipients")]
pub async fn list_account_prompt_recipients(
    state: web::Data<AppState>,
    auth: Caller,
    username: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let (username, recipients) = grants::recipients_of(&state, &auth, &username).await?;
    Ok(HttpResponse::Ok().json(AccountRecipients {
        username,
        recipients,
    }))
}

/// Grants a sealed agent's prompt key to an account (owners only): the key
/// file's content, wrapped by the owner to the account's recipients. A live
/// grant of the same key to the account is replaced. Logged as `grant_add`
/// (and `grant_revoke` of the one replaced) with a commitment in place of
/// the grantee.
#[utoipa::path(
    tag = "grants",
    params(GrantPath),
    request_body = GrantBody,
    security(("bearer" = ["grants"])),
    responses(
        (status = 201, description = "Granted", body = GrantView),
        (status = 200, description = "The grant of that key to that account, replaced", body = GrantView),
        (status = 403, description = "The token lacks the `grants` scope (`missing-scope`) or is not for this package (`token-not-for-package`), or the caller does not own the agent (`not-owner`)", body = crate::error::Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such agent or account", body = crate::error::Problem, content_type = "application/problem+json"),
        (status = 409, description = "The agent has no sealed version (`agent-open`), holds 1,000 live grants (`too-many-grants`), or the grant changed meanwhile (`conflict`)", body = crate::error::Problem, content_type = "application/problem+json"),
        (status = 422, description = "A bad key id, range or wrapped key (`validation-failed`), or an account without prompt recipients (`no-recipients`)", body = crate::error::Problem, content_type = "application/problem+json"),
    )
)]
#[put("/api/v1/agents/{name}/grants/{username}")]
pub async fn put_grant(
    state: web::Data<AppState>,
    auth: Caller,
    path: web::Path<GrantPath>,
    body: web::Json<GrantBody>,
) -> Result<HttpResponse, ApiError> {
    let name = agent_name(&path.name)?;
    let (grant, created) = grants::put_grant(
        &state,
        &auth,
        &name,
        &path.username,
        GrantRequest {
            key_id: &body.key_id,
            versions: body.versions.as_deref(),
            wrapped: &body.wrapped,
        },
    )
    .await?;
    Ok(if created {
        HttpResponse::Created().json(grant)
    } else {
        HttpResponse::Ok().json(grant)
    })
}

/// Revokes the account's grants of the agent (owners only), each logged as
/// `grant_revoke`. A key the grantee fetched before stays theirs.
#[utoipa::path(
    tag = "grants",
    params(GrantPath),
    security(("bearer" = ["grants"])),
    responses(
        (status = 204, description = "Revoked"),
        (status = 403, description = "The token lacks the `grants` scope (`missing-scope`) or is not for this package (`token-not-for-package`), or the caller does not own the agent (`not-owner`)", body = crate::error::Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such agent or account, or the account holds no grant of it", body = crate::error::Problem, content_type = "application/problem+json"),
    )
)]
#[delete("/api/v1/agents/{name}/grants/{username}")]
pub async fn revoke_grant(
    state: web::Data<AppState>,
    auth: Caller,
    path: web::Path<GrantPath>,
) -> Result<HttpResponse, ApiError> {
    let name = agent_name(&path.name)?;
    grants::revoke_grants(&state, &auth, &name, &path.username).await?;
    Ok(HttpResponse::NoContent().finish())
}

/// The agent's live grants (owners only), oldest first.
#[utoipa::path(
    tag = "grants",
    params(("name" = String, Path, description = "The agent's name (any spelling: case and `-`/`_` are folded)")),
    security(("bearer" = ["grants"])),
    responses(
        (status = 200, description = "The agent's live grants", body = GrantList),
        (status = 403, description = "The token lacks the `grants` scope (`missing-scope`) or is not for this package (`token-not-for-package`), or the caller does not own the agent (`not-owner`)", body = crate::error::Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such agent", body = crate::error::Problem, content_type = "application/problem+json"),
    )
)]
#[get("/api/v1/agents/{name}/grants")]
pub async fn list_agent_grants(
    state: web::Data<AppState>,
    auth: Caller,
    name: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let name = agent_name(&name)?;
    let grants = grants::agent_grants(&state, &auth, &name).await?;
    Ok(HttpResponse::Ok()
        .insert_header((header::CACHE_CONTROL, "private, no-store"))
        .json(GrantList { grants }))
}

/// The live grants the caller holds, newest first (at most 1,000).
#[utoipa::path(
    tag = "grants",
    security(("bearer" = ["grants"])),
    responses(
        (status = 200, description = "The caller's grants", body = GrantList),
        (status = 403, description = "The token lacks the `grants` scope (`missing-scope`)", body = crate::error::Problem, content_type = "application/problem+json"),
    )
)]
#[get("/api/v1/account/grants")]
pub async fn list_account_grants(
    state: web::Data<AppState>,
    auth: Caller,
) -> Result<HttpResponse, ApiError> {
    let grants = grants::held_grants(&state, &auth).await?;
    Ok(HttpResponse::Ok()
        .insert_header((header::CACHE_CONTROL, "private, no-store"))
        .json(GrantList { grants }))
}

/// The prompt-key bytes as the document names them: the armored age file
/// the owner sent.
#[derive(utoipa::ToSchema)]
#[schema(value_type = String, format = Binary)]
#[expect(dead_code, reason = "a schema for the document, never built")]
pub struct WrappedKey(Vec<u8>);

/// The caller's wrapped prompt key for one version of a sealed agent: the
/// armored age file its newest live grant covering the version holds. Open
/// it with the identity of one of the recipients it was wrapped to
/// (`age -d -i IDENTITY`): the plaintext is the prompt key file.
#[utoipa::path(
    tag = "grants",
    params(AgentVersionPath),
    security(("bearer" = ["grants"])),
    responses(
        (status = 200, description = "The wrapped key", body = WrappedKey, content_type = "application/octet-stream"),
        (status = 403, description = "The token lacks the `grants` scope (`missing-scope`) or is not for this package (`token-not-for-package`)", body = crate::error::Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such agent or version, or no live grant of the caller covers the version (`no-grant`, naming the owners to ask)", body = crate::error::Problem, content_type = "application/problem+json"),
        (status = 409, description = "The version is open: its prompt needs no key (`agent-open`)", body = crate::error::Problem, content_type = "application/problem+json"),
    )
)]
#[get("/api/v1/agents/{name}/{version:[0-9][^/]*}/prompt-key")]
pub async fn get_prompt_key(
    state: web::Data<AppState>,
    auth: Caller,
    path: web::Path<AgentVersionPath>,
) -> Result<HttpResponse, ApiError> {
    let name = agent_name(&path.name)?;
    let version = Version::parse(&path.version)
        .map_err(|_| ServiceError::NotFound(format!("agent {name} {:?}", path.version)))?;
    let wrapped = grants::prompt_key(&state, &auth, &name, &version).await?;
    Ok(HttpResponse::Ok()
        .content_type("application/octet-stream")
        .insert_header((header::CACHE_CONTROL, "private, no-store"))
        .body(wrapped))
}
