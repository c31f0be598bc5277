//! Package owners and invitations. Anyone may list a package's owners; an
//! owner invites (token scope `owners`) and the invited account accepts or
//! declines; an owner leaves or removes owners who joined after them. The
//! rules are [`app::owners`]'.

use actix_web::{HttpResponse, delete, get, put, web};
use agentlang_core::{Kind, PackageName, Username};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use crate::{
    auth::{Caller, Otp},
    error::ApiError,
    state::AppState,
};
use app::ServiceError;
use app::{
    owners::{self, Owners},
    packages::PackageRecord,
    time::rfc3339,
};

/// The kind as a package URL spells it (the document's name for it; any
/// other segment answers 404 like a package that does not exist).
#[derive(Debug, utoipa::ToSchema)]
#[schema(rename_all = "lowercase")]
pub enum KindSegment {
    Agents,
    Tools,
    Protocols,
    Skills,
}

/// `/{kind}/{name}` as it appears in a URL: `agents/foo`, `tools/bar` or
/// `protocols/baz`.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Path)]
pub struct PackagePath {
    /// `agents`, `tools`, `protocols` or `skills`.
    #[param(value_type = KindSegment)]
    pub kind: String,
    /// The package name (any spelling: case and `-`/`_` are folded).
    pub name: String,
}

impl PackagePath {
    /// An unknown kind or an invalid name cannot name a package: 404.
    pub fn parse(&self) -> Result<(Kind, PackageName), ApiError> {
        let kind = Kind::from_plural(&self.kind)
            .ok_or_else(|| ServiceError::NotFound(format!("route /api/v1/{}", self.kind)))?;
        let name = PackageName::new(self.name.as_str())
            .map_err(|_| ServiceError::NotFound(format!("{kind} {:?}", self.name)))?;
        Ok((kind, name))
    }

    async fn package(&self, state: &AppState) -> Result<PackageRecord, ApiError> {
        let (kind, name) = self.parse()?;
        Ok(owners::find_package(state, kind, name.as_str()).await?)
    }
}

#[derive(Debug, Serialize, ToSchema)]
pub struct Owner {
    #[schema(value_type = String)]
    pub username: Username,
    /// `founder` (published the package first) or `owner`.
    #[schema(example = "owner")]
    pub role: String,
    /// RFC 3339: when they became an owner.
    pub added_at: String,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct Invitation {
    /// `agent`, `tool` or `protocol`.
    #[schema(value_type = String)]
    pub kind: Kind,
    #[schema(value_type = String)]
    pub name: PackageName,
    /// The invited account.
    #[schema(value_type = String)]
    pub username: Username,
    #[schema(value_type = Option<String>)]
    pub invited_by: Option<Username>,
    /// RFC 3339.
    pub created_at: String,
    /// RFC 3339: unanswered invitations lapse.
    pub expires_at: String,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct OwnerList {
    /// In the order they joined: an owner may remove only those after them.
    pub owners: Vec<Owner>,
    /// Invited accounts that have not answered yet (the oldest 100).
    pub invitations: Vec<Invitation>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct InvitationList {
    /// The newest 100.
    pub invitations: Vec<Invitation>,
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct OwnersChange {
    /// Accounts to invite or remove: 1 to 32.
    #[schema(example = json!(["bob"]), min_items = 1, max_items = 32)]
    pub usernames: Vec<String>,
}

fn invitation(i: app::owners::InvitationRecord) -> Invitation {
    Invitation {
        kind: i.kind,
        name: i.name,
        username: i.invitee,
        invited_by: i.invited_by,
        created_at: rfc3339(i.created_at),
        expires_at: rfc3339(i.expires_at),
    }
}

impl From<Owners> for OwnerList {
    fn from(list: Owners) -> Self {
        Self {
            owners: list
                .owners
                .into_iter()
                .map(|o| Owner {
                    role: owners::OwnerRole::of(&o).as_str().to_owned(),
                    username: o.username,
                    added_at: rfc3339(o.added_at),
                })
                .collect(),
            invitations: list.invitations.into_iter().map(invitation).collect(),
        }
    }
}

/// The package whose owners the token may change, or whose invitation it
/// may answer: scope `owners`, and the package among the token's patterns.
async fn package_to_change(
    state: &AppState,
    auth: &Caller,
    path: &PackagePath,
) -> Result<PackageRecord, ApiError> {
    let (kind, name) = path.parse()?;
    Ok(owners::package_for_token(state, auth, kind, &name).await?)
}

async fn owner_list(state: &AppState, package: &PackageRecord) -> Result<HttpResponse, ApiError> {
    let list = owners::list_owners(state, package).await?;
    Ok(HttpResponse::Ok().json(OwnerList::from(list)))
}

/// Lists a package's owners and pending invitations.
#[utoipa::path(
    tag = "owners",
    params(PackagePath),
    responses(
        (status = 200, body = OwnerList, description = "The owners, in the order they joined"),
        (status = 404, description = "No such package", body = crate::error::Problem, content_type = "application/problem+json"),
    )
)]
#[get("/api/v1/{kind}/{name}/owners")]
pub async fn list_owners(
    state: web::Data<AppState>,
    path: web::Path<PackagePath>,
) -> Result<HttpResponse, ApiError> {
    let package = path.package(&state).await?;
    owner_list(&state, &package).await
}

/// Invites accounts to own the package (owners only; token scope `owners`).
/// They become owners when they accept; inviting an owner is not an error.
#[utoipa::path(
    tag = "owners",
    params(PackagePath, ("AgentLang-OTP" = Option<String>, Header, description = "Second factor: a TOTP code or a recovery code, required when the account has enabled one")),
    request_body = OwnersChange,
    security(("bearer" = ["owners"])),
    responses(
        (status = 200, description = "The owners and invitations after the change", body = OwnerList),
        (status = 401, description = "Missing or invalid token; or the account has a second factor and the `AgentLang-OTP` code is missing (`two-factor-code-required`) or wrong, expired or used (`two-factor-code-invalid`)", body = crate::error::Problem, content_type = "application/problem+json"),
        (status = 403, description = "The package requires a second factor and the account has none (`two-factor-enrolment-required`); not an owner (`not-owner`), or the token lacks the scope (`missing-scope`) or the package (`token-not-for-package`)", body = crate::error::Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such package", body = crate::error::Problem, content_type = "application/problem+json"),
        (status = 422, description = "Unknown usernames, every one listed", body = crate::error::Problem, content_type = "application/problem+json"),
    )
)]
#[put("/api/v1/{kind}/{name}/owners")]
pub async fn add_owners(
    state: web::Data<AppState>,
    auth: Caller,
    otp: Otp,
    path: web::Path<PackagePath>,
    body: web::Json<OwnersChange>,
) -> Result<HttpResponse, ApiError> {
    let package = package_to_change(&state, &auth, &path).await?;
    owners::invite_owners(
        &state,
        auth.actor(),
        &package,
        &body.usernames,
        otp.as_deref(),
    )
    .await?;
    owner_list(&state, &package).await
}

/// Removes owners (token scope `owners`): any owner may leave; an owner
/// removes only owners who joined after them; an admin (with a token
/// carrying the `admin` scope too) removes anyone. Never the last owner.
/// The invitations a removed owner sent to the package are withdrawn.
#[utoipa::path(
    tag = "owners",
    params(PackagePath, ("AgentLang-OTP" = Option<String>, Header, description = "Second factor: a TOTP code or a recovery code, required when the account has enabled one")),
    request_body = OwnersChange,
    security(("bearer" = ["owners"])),
    responses(
        (status = 200, description = "The owners after the change", body = OwnerList),
        (status = 401, description = "Missing or invalid token; or the account has a second factor and the `AgentLang-OTP` code is missing (`two-factor-code-required`) or wrong, expired or used (`two-factor-code-invalid`)", body = crate::error::Problem, content_type = "application/problem+json"),
        (status = 403, description = "The package requires a second factor and the account has none (`two-factor-enrolment-required`); not an owner (`not-owner`), removing an earlier owner (`senior-owner`), or the token lacks the scope (`missing-scope`) or the package (`token-not-for-package`)", body = crate::error::Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such package", body = crate::error::Problem, content_type = "application/problem+json"),
        (status = 409, description = "The change would leave no owner", body = crate::error::Problem, content_type = "application/problem+json"),
        (status = 422, description = "Unknown usernames or non-owners, every one listed", body = crate::error::Problem, content_type = "application/problem+json"),
    )
)]
#[delete("/api/v1/{kind}/{name}/owners")]
pub async fn remove_owners(
    state: web::Data<AppState>,
    auth: Caller,
    otp: Otp,
    path: web::Path<PackagePath>,
    body: web::Json<OwnersChange>,
) -> Result<HttpResponse, ApiError> {
    let package = package_to_change(&state, &auth, &path).await?;
    owners::remove_owners(
        &state,
        auth.actor(),
        &package,
        &body.usernames,
        otp.as_deref(),
    )
    .await?;
    owner_list(&state, &package).await
}

/// The caller's pending invitations to own packages.
#[utoipa::path(
    tag = "owners",
    security(("bearer" = [])),
    responses(
        (status = 200, body = InvitationList, description = "Unanswered, unexpired invitations, the newest 100"),
        (status = 401, description = "Missing or invalid token", body = crate::error::Problem, content_type = "application/problem+json"),
    )
)]
#[get("/api/v1/invitations")]
pub async fn list_invitations(
    state: web::Data<AppState>,
    auth: Caller,
) -> Result<HttpResponse, ApiError> {
    let invitations = owners::invitations_for(&state, auth.account_id)
        .await?
        .into_iter()
        .map(invitation)
        .collect();
    Ok(HttpResponse::Ok().json(InvitationList { invitations }))
}

/// Accepts an invitation: the caller becomes an owner (token scope
/// `owners`, and the package among the token's patterns). An invitation
/// whose sender is no longer an owner is void.
#[utoipa::path(
    tag = "owners",
    params(PackagePath),
    security(("bearer" = ["owners"])),
    responses(
        (status = 200, description = "The owners after accepting", body = OwnerList),
        (status = 401, description = "Missing or invalid token", body = crate::error::Problem, content_type = "application/problem+json"),
        (status = 403, description = "The token lacks the `owners` scope (`missing-scope`) or the package (`token-not-for-package`)", body = crate::error::Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such package, or no live invitation to it (none, expired, or its sender no longer an owner)", body = crate::error::Problem, content_type = "application/problem+json"),
    )
)]
#[put("/api/v1/invitations/{kind}/{name}")]
pub async fn accept_invitation(
    state: web::Data<AppState>,
    auth: Caller,
    path: web::Path<PackagePath>,
) -> Result<HttpResponse, ApiError> {
    let package = package_to_change(&state, &auth, &path).await?;
    owners::answer_invitation(&state, auth.actor(), &package, owners::Answer::Accept).await?;
    owner_list(&state, &package).await
}

/// Declines an invitation (token scope `owners`, and the package among the
/// token's patterns).
#[utoipa::path(
    tag = "owners",
    params(PackagePath),
    security(("bearer" = ["owners"])),
    responses(
        (status = 204, description = "Declined"),
        (status = 401, description = "Missing or invalid token", body = crate::error::Problem, content_type = "application/problem+json"),
        (status = 403, description = "The token lacks the `owners` scope (`missing-scope`) or the package (`token-not-for-package`)", body = crate::error::Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such package, or no invitation to it", body = crate::error::Problem, content_type = "application/problem+json"),
    )
)]
#[delete("/api/v1/invitations/{kind}/{name}")]
pub async fn decline_invitation(
    state: web::Data<AppState>,
    auth: Caller,
    path: web::Path<PackagePath>,
) -> Result<HttpResponse, ApiError> {
    let package = package_to_change(&state, &auth, &path).await?;
    owners::answer_invitation(&state, auth.actor(), &package, owners::Answer::Decline).await?;
    Ok(HttpResponse::NoContent().finish())
}
