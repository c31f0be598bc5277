//! Signed-in pages: API tokens, signing keys, package owners, yank forms.
//!
//! Every POST checks the session's CSRF token first (403 page without it),
//! then answers 303 to a page, so a reload never posts twice. Problems the
//! user can fix re-render the account page with a message (422 or 409).

use std::collections::HashMap;

use actix_web::{HttpResponse, http::StatusCode, web};
use agentlang_core::{Kind, PackageName, Version, signing::PublicKey};
use agentlang_web::{
    model::{ApiTokenView, NewTokenView, OwnedPackage, PackageRef, ScopeOption},
    pages::{AccountPage, TOKEN_EXPIRY_DAYS},
};

use super::{
    CatalogError, FormFields, html, html_status, publishers::key_summary, see_other,
    session::SignedIn, views::timestamp,
};
use crate::{
    auth::Scope,
    db::{
        keys::InsertKeyError,
        now,
        packages::{OwnerError, PackageRecord},
        tokens::NewToken,
    },
    routes::tokens::MAX_TOKEN_NAME_LEN,
    state::AppState,
};

const SECONDS_PER_DAY: i64 = 86_400;
/// Packages the account page lists at most.
const MAX_OWNED_SHOWN: i64 = 500;
const MAX_YANK_REASON_LEN: usize = 500;

fn scope_description(scope: Scope) -> &'static str {
    match scope {
        Scope::Publish => "publish new versions",
        Scope::Yank => "yank and unyank versions",
        Scope::Keys => "register and revoke signing keys",
        Scope::Owners => "add and remove package owners",
    }
}

/// The account page, with `errors` about the last form and the token
/// flashed by the last create (shown this once).
async fn account_page(
    state: &AppState,
    session: &SignedIn,
    errors: Vec<String>,
) -> Result<AccountPage, CatalogError> {
    let s = &session.0;
    let new_token = state
        .db
        .take_session_flash(&s.id_hash)
        .await?
        .map(|(name, secret)| NewTokenView { name, secret });
    let now = now();
    let tokens = state
        .db
        .list_tokens(s.account_id)
        .await?
        .into_iter()
        .filter(|t| t.revoked_at.is_none() && t.expires_at > now)
        .map(|t| ApiTokenView {
            id: t.jti,
            name: t.name,
            scopes: t.scopes.0.iter().map(|s| s.as_str().to_owned()).collect(),
            created_at: timestamp(t.created_at),
            expires_at: Some(timestamp(t.expires_at)),
            last_used_at: t.last_used_at.map(timestamp),
        })
        .collect();
    let keys = state
        .db
        .account_signing_keys(s.account_id)
        .await?
        .into_iter()
        .map(key_summary)
        .collect();
    let listings = state
        .db
        .owned_package_listings(s.account_id, MAX_OWNED_SHOWN)
        .await?;
    let ids: Vec<i64> = listings.iter().map(|l| l.id).collect();
    let mut owners: HashMap<i64, Vec<String>> = HashMap::new();
    for (package_id, username) in state.db.owners_of(&ids).await? {
        owners.entry(package_id).or_default().push(username);
    }
    let mut packages = Vec::new();
    for listing in listings {
        let (Ok(kind), Ok(name)) = (
            listing.kind.parse::<Kind>(),
            PackageName::new(listing.name.as_str()),
        ) else {
            continue;
        };
        packages.push(OwnedPackage {
            package: PackageRef { kind, name },
            owners: owners.remove(&listing.id).unwrap_or_default(),
        });
    }
    Ok(AccountPage {
        chrome: s.chrome(),
        csrf_token: s.csrf_token.clone(),
        username: s.username.clone(),
        new_token,
        tokens,
        scopes: Scope::ALL
            .into_iter()
            .map(|scope| ScopeOption {
                value: scope.as_str().to_owned(),
                description: scope_description(scope).to_owned(),
            })
            .collect(),
        keys,
        packages,
        errors,
    })
}

/// The account page again, with what went wrong.
async fn refused(
    state: &AppState,
    session: &SignedIn,
    status: StatusCode,
    errors: Vec<String>,
) -> Result<HttpResponse, CatalogError> {
    html_status(status, &account_page(state, session, errors).await?)
}

/// `GET /account`.
pub async fn account(
    state: web::Data<AppState>,
    session: SignedIn,
) -> Result<HttpResponse, CatalogError> {
    let mut response = html(&account_page(&state, &session, Vec::new()).await?)?;
    // The page may hold a new token's secret: keep it out of every cache.
    response.headers_mut().insert(
        actix_web::http::header::CACHE_CONTROL,
        actix_web::http::header::HeaderValue::from_static("no-store"),
    );
    Ok(response)
}

/// `POST /account/tokens` (`name`, `scopes`…, `expires_in_days`).
pub async fn create_token(
    state: web::Data<AppState>,
    session: SignedIn,
    body: web::Bytes,
) -> Result<HttpResponse, CatalogError> {
    let form = FormFields::parse(&body);
    session.0.check_csrf(&form)?;
    let mut errors = Vec::new();
    let name = form.get("name").trim().to_owned();
    if name.is_empty() {
        errors.push("Give the token a name.".to_owned());
    } else if name.chars().count() > MAX_TOKEN_NAME_LEN {
        errors.push(format!(
            "The token name must be at most {MAX_TOKEN_NAME_LEN} characters."
        ));
    } else if name.chars().any(char::is_control) {
        errors.push("The token name must not contain control characters.".to_owned());
    }
    let mut scopes = Vec::new();
    for raw in form.get_all("scopes") {
        match raw.parse::<Scope>() {
            Ok(scope) if !scopes.contains(&scope) => scopes.push(scope),
            Ok(_) => {}
            Err(_) => errors.push(format!("{raw:?} is not a scope.")),
        }
    }
    scopes.sort();
    let days = form
        .get("expires_in_days")
        .parse::<u32>()
        .ok()
        .filter(|d| TOKEN_EXPIRY_DAYS.contains(d));
    let Some(days) = days else {
        errors.push("Choose one of the offered expiry periods.".to_owned());
        return refused(&state, &session, StatusCode::UNPROCESSABLE_ENTITY, errors).await;
    };
    if !errors.is_empty() {
        return refused(&state, &session, StatusCode::UNPROCESSABLE_ENTITY, errors).await;
    }
    let s = &session.0;
    let jti = uuid::Uuid::now_v7().to_string();
    let created_at = now();
    let expires_at = created_at + i64::from(days) * SECONDS_PER_DAY;
    state
        .db
        .insert_token(&NewToken {
            jti: &jti,
            account_id: s.account_id,
            name: &name,
            scopes: &scopes,
            packages: None,
            created_at,
            expires_at,
        })
        .await?;
    let secret = state
        .tokens
        .issue(s.account_id, &jti, created_at, expires_at)
        .map_err(CatalogError::internal)?;
    state
        .db
        .set_session_flash(&s.id_hash, &name, &secret)
        .await?;
    tracing::info!(username = %s.username, token_id = %jti, "token created in the catalog");
    Ok(see_other("/account#new-token-heading"))
}

/// `POST /account/tokens/{id}/revoke`.
pub async fn revoke_token(
    state: web::Data<AppState>,
    session: SignedIn,
    id: web::Path<String>,
    body: web::Bytes,
) -> Result<HttpResponse, CatalogError> {
    session.0.check_csrf(&FormFields::parse(&body))?;
    if !state.db.revoke_token(session.0.account_id, &id).await? {
        return Err(CatalogError::NotFound);
    }
    tracing::info!(username = %session.0.username, token_id = %id, "token revoked in the catalog");
    Ok(see_other("/account#tokens-heading"))
}

/// `POST /account/keys` (`public_key_pem`).
pub async fn register_key(
    state: web::Data<AppState>,
    session: SignedIn,
    body: web::Bytes,
) -> Result<HttpResponse, CatalogError> {
    let form = FormFields::parse(&body);
    session.0.check_csrf(&form)?;
    let key = match PublicKey::from_spki_pem(form.get("public_key_pem").trim()) {
        Ok(key) => key,
        Err(e) => {
            return refused(
                &state,
                &session,
                StatusCode::UNPROCESSABLE_ENTITY,
                vec![format!("That is not a usable Ed25519 public key: {e}.")],
            )
            .await;
        }
    };
    let key_id = key.key_id();
    match state
        .db
        .insert_signing_key(key_id.as_str(), session.0.account_id, &key.to_spki_pem())
        .await
    {
        Ok(_) => {}
        Err(InsertKeyError::AlreadyRegistered) => {
            return refused(
                &state,
                &session,
                StatusCode::CONFLICT,
                vec!["That key is already registered.".to_owned()],
            )
            .await;
        }
        Err(InsertKeyError::Db(e)) => return Err(e.into()),
    }
    tracing::info!(username = %session.0.username, key_id = %key_id, "signing key registered in the catalog");
    Ok(see_other("/account#keys-heading"))
}

/// `POST /account/keys/{key_id}/revoke`.
pub async fn revoke_key(
    state: web::Data<AppState>,
    session: SignedIn,
    key_id: web::Path<String>,
    body: web::Bytes,
) -> Result<HttpResponse, CatalogError> {
    session.0.check_csrf(&FormFields::parse(&body))?;
    if state
        .db
        .revoke_signing_key(session.0.account_id, &key_id)
        .await?
        .is_none()
    {
        return Err(CatalogError::NotFound);
    }
    tracing::info!(username = %session.0.username, key_id = %key_id, "signing key revoked in the catalog");
    Ok(see_other("/account#keys-heading"))
}

fn kind_of_plural(plural: &str) -> Result<Kind, CatalogError> {
    match plural {
        "agents" => Ok(Kind::Agent),
        "tools" => Ok(Kind::Tool),
        "protocols" => Ok(Kind::Protocol),
        _ => Err(CatalogError::NotFound),
    }
}

/// The package, if the session's account owns it (403 otherwise).
async fn owned_package(
    state: &AppState,
    session: &SignedIn,
    kind: &str,
    name: &str,
) -> Result<PackageRecord, CatalogError> {
    let kind = kind_of_plural(kind)?;
    let name = PackageName::new(name).map_err(|_| CatalogError::NotFound)?;
    let package = state
        .db
        .find_package(kind, &name)
        .await?
        .ok_or(CatalogError::NotFound)?;
    if !state.db.is_owner(package.id, session.0.account_id).await? {
        return Err(CatalogError::Forbidden("not an owner of the package"));
    }
    Ok(package)
}

/// `POST /account/{agents|tools|protocols}/{name}/owners` (`username`).
pub async fn add_owner(
    state: web::Data<AppState>,
    session: SignedIn,
    path: web::Path<(String, String)>,
    body: web::Bytes,
) -> Result<HttpResponse, CatalogError> {
    let form = FormFields::parse(&body);
    session.0.check_csrf(&form)?;
    let (kind, name) = path.into_inner();
    let package = owned_package(&state, &session, &kind, &name).await?;
    let username = form.get("username").trim();
    let Some(account) = state.db.find_account(username).await? else {
        return refused(
            &state,
            &session,
            StatusCode::UNPROCESSABLE_ENTITY,
            vec![format!("There is no account named {username:?}.")],
        )
        .await;
    };
    state
        .db
        .add_owner(package.id, account.id, Some(session.0.account_id))
        .await?;
    tracing::info!(by = %session.0.username, owner = %account.username, package = %package.name, "owner added in the catalog");
    Ok(see_other("/account#owners-heading"))
}

/// `POST /account/{agents|tools|protocols}/{name}/owners/remove` (`username`).
pub async fn remove_owner(
    state: web::Data<AppState>,
    session: SignedIn,
    path: web::Path<(String, String)>,
    body: web::Bytes,
) -> Result<HttpResponse, CatalogError> {
    let form = FormFields::parse(&body);
    session.0.check_csrf(&form)?;
    let (kind, name) = path.into_inner();
    let package = owned_package(&state, &session, &kind, &name).await?;
    let username = form.get("username").trim();
    let Some(account) = state.db.find_account(username).await? else {
        return Err(CatalogError::NotFound);
    };
    match state
        .db
        .remove_owners(package.id, &[(account.id, account.username.clone())])
        .await
    {
        Ok(()) => {}
        Err(OwnerError::LastOwner) => {
            return refused(
                &state,
                &session,
                StatusCode::CONFLICT,
                vec![format!(
                    "{} is the last owner of {}: add another owner first.",
                    account.username, package.name
                )],
            )
            .await;
        }
        Err(OwnerError::NotAnOwner(who)) => {
            return refused(
                &state,
                &session,
                StatusCode::UNPROCESSABLE_ENTITY,
                vec![format!("{who} is not an owner of {}.", package.name)],
            )
            .await;
        }
        Err(OwnerError::Db(e)) => return Err(e.into()),
    }
    tracing::info!(by = %session.0.username, owner = %account.username, package = %package.name, "owner removed in the catalog");
    Ok(see_other("/account#owners-heading"))
}

async fn set_yanked(
    state: &AppState,
    session: &SignedIn,
    path: (String, String, String),
    form: &FormFields,
    yanked: bool,
) -> Result<HttpResponse, CatalogError> {
    session.0.check_csrf(form)?;
    let (kind, name, version) = path;
    let package = owned_package(state, session, &kind, &name).await?;
    let version = Version::parse(&version).map_err(|_| CatalogError::NotFound)?;
    let reason: String = form
        .get("reason")
        .trim()
        .chars()
        .take(MAX_YANK_REASON_LEN)
        .collect();
    let reason = Some(reason.as_str()).filter(|r| !r.is_empty());
    if !state
        .db
        .set_yanked(package.id, &version, yanked, reason)
        .await?
    {
        return Err(CatalogError::NotFound);
    }
    tracing::info!(by = %session.0.username, package = %package.name, %version, yanked, "yank changed in the catalog");
    Ok(see_other(&format!("/{kind}/{}/{version}", package.name)))
}

/// `POST /{agents|tools|protocols}/{name}/{version}/yank` (`reason`).
pub async fn yank(
    state: web::Data<AppState>,
    session: SignedIn,
    path: web::Path<(String, String, String)>,
    body: web::Bytes,
) -> Result<HttpResponse, CatalogError> {
    set_yanked(
        &state,
        &session,
        path.into_inner(),
        &FormFields::parse(&body),
        true,
    )
    .await
}

/// `POST /{agents|tools|protocols}/{name}/{version}/unyank`.
pub async fn unyank(
    state: web::Data<AppState>,
    session: SignedIn,
    path: web::Path<(String, String, String)>,
    body: web::Bytes,
) -> Result<HttpResponse, CatalogError> {
    set_yanked(
        &state,
        &session,
        path.into_inner(),
        &FormFields::parse(&body),
        false,
    )
    .await
}
