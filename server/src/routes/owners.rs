//! Package owners: listed by anyone, changed only by owners with a token
//! carrying the `owners` scope. The last owner can never be removed.

use std::collections::BTreeMap;

use actix_web::{HttpResponse, delete, get, put, web};
use agentlang_core::{Kind, PackageName};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use crate::{
    auth::{Authenticated, Scope},
    db::packages::{OwnerError, PackageRecord},
    error::{ApiError, FieldError},
    routes::rfc3339,
    service::resolve::check_count,
    state::AppState,
};

/// `/{kind}/{name}` as it appears in a URL: `agents/foo`, `tools/bar` or
/// `protocols/baz`.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Path)]
pub struct PackagePath {
    /// `agents`, `tools` or `protocols`.
    pub kind: String,
    /// The package name (any spelling: case and `-`/`_` are folded).
    pub name: String,
}

impl PackagePath {
    /// An unknown kind or an invalid name cannot name a package: 404.
    pub fn parse(&self) -> Result<(Kind, PackageName), ApiError> {
        let kind = match self.kind.as_str() {
            "agents" => Kind::Agent,
            "tools" => Kind::Tool,
            "protocols" => Kind::Protocol,
            other => return Err(ApiError::NotFound(format!("route /api/v1/{other}"))),
        };
        let name = PackageName::new(self.name.as_str())
            .map_err(|_| ApiError::NotFound(format!("{kind} {:?}", self.name)))?;
        Ok((kind, name))
    }
}

#[derive(Debug, Serialize, ToSchema)]
pub struct Owner {
    pub username: String,
    /// RFC 3339.
    pub added_at: String,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct OwnerList {
    pub owners: Vec<Owner>,
}

/// Accounts one request may add or remove.
pub const MAX_OWNER_CHANGES: usize = 32;

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct OwnersChange {
    /// Accounts to add or remove: 1 to 32.
    #[schema(example = json!(["bob"]), min_items = 1, max_items = 32)]
    pub usernames: Vec<String>,
}

async fn find_package(
    state: &AppState,
    path: &PackagePath,
) -> Result<(PackageRecord, PackageName), ApiError> {
    let (kind, name) = path.parse()?;
    let package = state
        .db
        .find_package(kind, &name)
        .await?
        .ok_or_else(|| ApiError::NotFound(format!("{kind} {name}")))?;
    Ok((package, name))
}

async fn owner_list(state: &AppState, package_id: i64) -> Result<OwnerList, ApiError> {
    let owners = state
        .db
        .list_owners(package_id)
        .await?
        .into_iter()
        .map(|o| Owner {
            username: o.username,
            added_at: rfc3339(o.added_at),
        })
        .collect();
    Ok(OwnerList { owners })
}

/// Checks that the caller may change the package's owners: `owners` scope,
/// a token valid for the package, and ownership.
async fn authorize_change(
    state: &AppState,
    auth: &Authenticated,
    package: &PackageRecord,
    name: &PackageName,
) -> Result<(), ApiError> {
    auth.require(Scope::Owners)?;
    auth.require_package(name)?;
    if !state.db.is_owner(package.id, auth.account_id).await? {
        return Err(ApiError::Forbidden(format!(
            "you are not an owner of {}",
            package.name
        )));
    }
    Ok(())
}

/// Resolves usernames to accounts, listing every unknown one; duplicates
/// (in any spelling) collapse.
async fn resolve_accounts(
    state: &AppState,
    change: &OwnersChange,
) -> Result<Vec<(i64, String)>, ApiError> {
    if change.usernames.is_empty() {
        return Err(ApiError::Validation(vec![FieldError::new(
            "usernames",
            "must name at least one account",
        )]));
    }
    check_count("usernames", change.usernames.len(), MAX_OWNER_CHANGES)?;
    let mut found = BTreeMap::new();
    let mut errors = Vec::new();
    for (i, username) in change.usernames.iter().enumerate() {
        match state.db.find_account(username).await? {
            Some(account) => {
                found.insert(account.id, account.username);
            }
            None => errors.push(FieldError::new(
                format!("usernames[{i}]"),
                format!("no account is named {username:?}"),
            )),
        }
    }
    if errors.is_empty() {
        Ok(found.into_iter().collect())
    } else {
        Err(ApiError::Validation(errors))
    }
}

/// Lists a package's owners.
#[utoipa::path(
    tag = "owners",
    params(PackagePath),
    responses(
        (status = 200, body = OwnerList, description = "The owners, oldest first"),
        (status = 404, description = "No such package", body = crate::error::Problem, content_type = "application/problem+json"),
    )
)]
#[get("/api/v1/{kind}/{name}/owners")]
pub async fn list_owners(
    state: web::Data<AppState>,
    path: web::Path<PackagePath>,
) -> Result<HttpResponse, ApiError> {
    let (package, _) = find_package(&state, &path).await?;
    Ok(HttpResponse::Ok().json(owner_list(&state, package.id).await?))
}

/// Adds owners (owners only; token scope `owners`). Adding an existing owner
/// is not an error.
#[utoipa::path(
    tag = "owners",
    params(PackagePath),
    request_body = OwnersChange,
    security(("bearer" = [])),
    responses(
        (status = 200, description = "The owners after the change", body = OwnerList),
        (status = 401, description = "Missing or invalid token", body = crate::error::Problem, content_type = "application/problem+json"),
        (status = 403, description = "Not an owner, or the token lacks the scope", body = crate::error::Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such package", body = crate::error::Problem, content_type = "application/problem+json"),
        (status = 422, description = "Unknown usernames, every one listed", body = crate::error::Problem, content_type = "application/problem+json"),
    )
)]
#[put("/api/v1/{kind}/{name}/owners")]
pub async fn add_owners(
    state: web::Data<AppState>,
    auth: Authenticated,
    path: web::Path<PackagePath>,
    body: web::Json<OwnersChange>,
) -> Result<HttpResponse, ApiError> {
    let (package, name) = find_package(&state, &path).await?;
    authorize_change(&state, &auth, &package, &name).await?;
    for (account_id, username) in resolve_accounts(&state, &body).await? {
        if state
            .db
            .add_owner(package.id, account_id, Some(auth.account_id))
            .await?
        {
            tracing::info!(package = %package.name, owner = %username, by = %auth.username, "owner added");
        }
    }
    Ok(HttpResponse::Ok().json(owner_list(&state, package.id).await?))
}

/// Removes owners (owners only; token scope `owners`); never the last one.
#[utoipa::path(
    tag = "owners",
    params(PackagePath),
    request_body = OwnersChange,
    security(("bearer" = [])),
    responses(
        (status = 200, description = "The owners after the change", body = OwnerList),
        (status = 401, description = "Missing or invalid token", body = crate::error::Problem, content_type = "application/problem+json"),
        (status = 403, description = "Not an owner, or the token lacks the scope", body = crate::error::Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such package", body = crate::error::Problem, content_type = "application/problem+json"),
        (status = 409, description = "The change would leave no owner", body = crate::error::Problem, content_type = "application/problem+json"),
        (status = 422, description = "Unknown usernames or non-owners, every one listed", body = crate::error::Problem, content_type = "application/problem+json"),
    )
)]
#[delete("/api/v1/{kind}/{name}/owners")]
pub async fn remove_owners(
    state: web::Data<AppState>,
    auth: Authenticated,
    path: web::Path<PackagePath>,
    body: web::Json<OwnersChange>,
) -> Result<HttpResponse, ApiError> {
    let (package, name) = find_package(&state, &path).await?;
    authorize_change(&state, &auth, &package, &name).await?;
    let accounts = resolve_accounts(&state, &body).await?;
    state
        .db
        .remove_owners(package.id, &accounts)
        .await
        .map_err(|e| match e {
            OwnerError::NotAnOwner(username) => ApiError::Validation(vec![FieldError::new(
                "usernames",
                format!("{username} is not an owner"),
            )]),
            OwnerError::LastOwner => {
                ApiError::Conflict("a package must keep at least one owner".to_owned())
            }
            OwnerError::Db(e) => e.into(),
        })?;
    tracing::info!(package = %package.name, by = %auth.username, "owners removed");
    Ok(HttpResponse::Ok().json(owner_list(&state, package.id).await?))
}
