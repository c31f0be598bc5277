//! Signed-in pages: API tokens, signing keys, package owners and
//! invitations, password and sessions, activity, yank forms. Every rule is
//! a service's ([`app`]); these handlers turn forms into calls
//! and refusals into messages.
//!
//! Every POST checks the session's CSRF token first (403 page without it),
//! then answers 303 to a page, so a reload never posts twice. Problems the
//! user can fix re-render the account page with a message (422, 409 or
//! 403).

use actix_web::{HttpResponse, http::StatusCode, web};
use agentlang_core::{Kind, Version};
use agentlang_web::{
    model::{
        ApiTokenView, AuditView, InvitationView, NewTokenView, OwnedPackage, PackageRef,
        ScopeOption,
    },
    pages::AccountPage,
};

use super::{
    CatalogError, FormFields, html, html_status,
    publishers::key_summary,
    see_other,
    session::{SessionPage, SignedIn},
    views::{owner_view, timestamp},
};
use app::{
    FieldError, ServiceError,
    accounts::{self, PasswordChange},
    credentials::Password,
    keys, owners,
    packages::{self, PackageRecord},
    sessions,
    tokens::{self, Scope, TokenSpec},
};

use crate::{rate_limit::Client, state::AppState};

/// Packages the account page lists at most.
const MAX_OWNED_SHOWN: i64 = 500;

/// The account page, with `errors` about the last form and the token
/// flashed by the last create (shown this once).
async fn account_page(
    state: &AppState,
    session: &SignedIn,
    errors: Vec<String>,
) -> Result<AccountPage, CatalogError> {
    let s = &session.0;
    let new_token = sessions::take_flash(state, s)
        .await?
        .map(|(name, secret)| NewTokenView { name, secret });
    let page = app::catalog::account_page(state, s.account_id, MAX_OWNED_SHOWN).await?;
    let tokens = page
        .tokens
        .into_iter()
        .map(|t| ApiTokenView {
            id: t.jti,
            name: t.name,
            scopes: t.scopes.0.iter().map(|s| s.as_str().to_owned()).collect(),
            created_at: timestamp(t.created_at),
            expires_at: Some(timestamp(t.expires_at)),
            last_used_at: t.last_used_at.map(timestamp),
        })
        .collect();
    let keys = page.keys.iter().map(key_summary).collect();
    let packages = page
        .packages
        .into_iter()
        .map(|p| OwnedPackage {
            package: PackageRef {
                kind: p.kind,
                name: p.name,
            },
            owners: p.owners.iter().map(owner_view).collect(),
            invited: p.invited.iter().map(ToString::to_string).collect(),
        })
        .collect();
    let invitations = page
        .invitations
        .into_iter()
        .map(|i| InvitationView {
            package: PackageRef {
                kind: i.kind,
                name: i.name,
            },
            invited_by: i.invited_by.map(|u| u.to_string()),
            expires_at: timestamp(i.expires_at),
        })
        .collect();
    let audit = page
        .audit
        .into_iter()
        .map(|e| AuditView {
            at: timestamp(e.at),
            action: e.action,
            detail: e.detail,
        })
        .collect();
    Ok(AccountPage {
        chrome: s.chrome(),
        csrf_token: s.csrf_token.clone(),
        username: s.username.to_string(),
        new_token,
        tokens,
        scopes: Scope::ALL
            .into_iter()
            .filter(|scope| *scope != Scope::Admin || s.is_admin)
            .map(|scope| ScopeOption {
                value: scope.as_str().to_owned(),
                description: scope.description().to_owned(),
            })
            .collect(),
        keys,
        key_proof_text: keys::registration_text(state, &s.username),
        packages,
        invitations,
        audit,
        errors,
        two_factor: {
            let status = app::two_factor::status(state, s.account_id).await?;
            agentlang_web::pages::TwoFactorView {
                enrolled: status.enrolled,
                recovery_codes_left: status.recovery_codes_left,
                ..Default::default()
            }
        },
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

/// A service's refusal the user can act on, as the account page with its
/// message; anything else as the error page it is.
async fn refusal(
    state: &AppState,
    session: &SignedIn,
    err: ServiceError,
) -> Result<HttpResponse, CatalogError> {
    let fields = |errors: &[FieldError]| -> Vec<String> {
        errors
            .iter()
            .map(|e| format!("{}: {}", e.field, e.message))
            .collect()
    };
    let (status, messages) = match &err {
        ServiceError::Validation(errors) => (StatusCode::UNPROCESSABLE_ENTITY, fields(errors)),
        ServiceError::Conflict(m) => (StatusCode::CONFLICT, vec![m.clone()]),
        ServiceError::NotOwner(m) | ServiceError::SeniorOwner(m) => {
            (StatusCode::FORBIDDEN, vec![m.clone()])
        }
        ServiceError::InvalidCredentials => (
            StatusCode::UNAUTHORIZED,
            vec!["The current password is wrong.".to_owned()],
        ),
        // Second factor.
        ServiceError::TwoFactorCodeRequired(_) | ServiceError::TwoFactorCodeInvalid(_) => (
            StatusCode::UNAUTHORIZED,
            vec!["The code is missing, not right, or was used already.".to_owned()],
        ),
        ServiceError::TwoFactorEnrolmentRequired(m) => (StatusCode::FORBIDDEN, vec![m.clone()]),
        _ => return Err(err.into()),
    };
    refused(state, session, status, messages).await
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

/// Second factor: the form's `otp` field, when filled in.
fn otp_field(form: &FormFields) -> Option<&str> {
    Some(form.get("otp").trim()).filter(|c| !c.is_empty())
}

/// `POST /account/2fa` (`password`): starts a second factor; the page
/// shows its secret this once.
pub async fn enable_two_factor(
    state: web::Data<AppState>,
    session: SignedIn,
    Client(client): Client,
    body: web::Bytes,
) -> Result<HttpResponse, CatalogError> {
    let form = FormFields::parse(&body);
    session.0.check_csrf(&form)?;
    let s = &session.0;
    let enrolment = match app::two_factor::enrol(
        &state,
        &client,
        s.account_id,
        s.username.as_str(),
        form.get("password"),
    )
    .await
    {
        Ok(enrolment) => enrolment,
        Err(err) => return refusal(&state, &session, err).await,
    };
    let mut page = account_page(&state, &session, Vec::new()).await?;
    page.two_factor.secret = Some(enrolment.secret);
    page.two_factor.otpauth_uri = Some(enrolment.otpauth_uri);
    no_store(html(&page)?)
}

/// `POST /account/2fa/confirm` (`otp`): the recovery codes, shown once.
pub async fn confirm_two_factor(
    state: web::Data<AppState>,
    session: SignedIn,
    body: web::Bytes,
) -> Result<HttpResponse, CatalogError> {
    let form = FormFields::parse(&body);
    session.0.check_csrf(&form)?;
    let s = &session.0;
    let codes = match app::two_factor::confirm(
        &state,
        s.account_id,
        s.username.as_str(),
        form.get("otp").trim(),
    )
    .await
    {
        Ok(codes) => codes,
        Err(err) => return refusal(&state, &session, err).await,
    };
    let mut page = account_page(&state, &session, Vec::new()).await?;
    page.two_factor.recovery_codes = codes.recovery_codes;
    no_store(html(&page)?)
}

/// `POST /account/2fa/disable` (`otp`).
pub async fn disable_two_factor(
    state: web::Data<AppState>,
    session: SignedIn,
    body: web::Bytes,
) -> Result<HttpResponse, CatalogError> {
    let form = FormFields::parse(&body);
    session.0.check_csrf(&form)?;
    let s = &session.0;
    if let Err(err) =
        app::two_factor::disable(&state, s.account_id, s.username.as_str(), otp_field(&form)).await
    {
        return refusal(&state, &session, err).await;
    }
    Ok(see_other("/account#two-factor-heading"))
}

/// Pages that show a secret are not kept by any cache.
fn no_store(mut response: HttpResponse) -> Result<HttpResponse, CatalogError> {
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
    let scopes: Vec<String> = form
        .get_all("scopes")
        .into_iter()
        .map(str::to_owned)
        .collect();
    let days = form.get("expires_in_days").parse::<i64>().ok();
    let mut spec = match TokenSpec::parse(form.get("name"), Some(&scopes), days, None) {
        Ok(spec) => spec,
        Err(errors) => return refusal(&state, &session, ServiceError::Validation(errors)).await,
    };
    // Second factor: a token is minted with a code, as through the API.
    spec.second_factor =
        match tokens::second_factor_for_minting(&state, session.0.account_id, otp_field(&form))
            .await
        {
            Ok(second_factor) => second_factor,
            Err(err) => return refusal(&state, &session, err).await,
        };
    let created = match tokens::create_token(&state, session.0.actor(), spec).await {
        Ok(created) => created,
        Err(err) => return refusal(&state, &session, err).await,
    };
    sessions::flash_token(&state, &session.0, &created.record.name, &created.token).await?;
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
    let s = &session.0;
    tokens::revoke_token(&state, s.account_id, &s.username, &id).await?;
    Ok(see_other("/account#tokens-heading"))
}

/// `POST /account/keys` (`public_key_pem`, `proof`).
pub async fn register_key(
    state: web::Data<AppState>,
    session: SignedIn,
    body: web::Bytes,
) -> Result<HttpResponse, CatalogError> {
    let form = FormFields::parse(&body);
    session.0.check_csrf(&form)?;
    let s = &session.0;
    if let Err(err) = keys::register_key(
        &state,
        s.account_id,
        &s.username,
        form.get("public_key_pem"),
        form.get("proof"),
    )
    .await
    {
        return refusal(&state, &session, err).await;
    }
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
    let s = &session.0;
    keys::revoke_key(&state, s.account_id, &s.username, &key_id).await?;
    Ok(see_other("/account#keys-heading"))
}

/// The package a path names (`agents/foo`), or 404.
async fn package_at(
    state: &AppState,
    kind: &str,
    name: &str,
) -> Result<PackageRecord, CatalogError> {
    let kind = Kind::from_plural(kind).ok_or(CatalogError::NotFound)?;
    Ok(owners::find_package(state, kind, name).await?)
}

/// `POST /account/{agents|tools|protocols}/{name}/owners` (`username`):
/// invites an owner.
pub async fn add_owner(
    state: web::Data<AppState>,
    session: SignedIn,
    path: web::Path<(String, String)>,
    body: web::Bytes,
) -> Result<HttpResponse, CatalogError> {
    let form = FormFields::parse(&body);
    session.0.check_csrf(&form)?;
    let (kind, name) = path.into_inner();
    let package = package_at(&state, &kind, &name).await?;
    let usernames = [form.get("username").trim().to_owned()];
    if let Err(err) = owners::invite_owners(
        &state,
        session.0.actor(),
        &package,
        &usernames,
        otp_field(&form),
    )
    .await
    {
        return refusal(&state, &session, err).await;
    }
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
    let package = package_at(&state, &kind, &name).await?;
    let usernames = [form.get("username").trim().to_owned()];
    if let Err(err) = owners::remove_owners(
        &state,
        session.0.actor(),
        &package,
        &usernames,
        otp_field(&form),
    )
    .await
    {
        return refusal(&state, &session, err).await;
    }
    Ok(see_other("/account#owners-heading"))
}

/// `POST /account/invitations/{agents|tools|protocols}/{name}/{accept|decline}`.
pub async fn answer_invitation(
    state: web::Data<AppState>,
    session: SignedIn,
    path: web::Path<(String, String, String)>,
    body: web::Bytes,
) -> Result<HttpResponse, CatalogError> {
    session.0.check_csrf(&FormFields::parse(&body))?;
    let (kind, name, answer) = path.into_inner();
    let package = package_at(&state, &kind, &name).await?;
    let answer = match answer.as_str() {
        "accept" => owners::Answer::Accept,
        "decline" => owners::Answer::Decline,
        _ => return Err(CatalogError::NotFound),
    };
    owners::answer_invitation(&state, session.0.actor(), &package, answer).await?;
    Ok(see_other("/account#owners-heading"))
}

/// `POST /account/password` (`password`, `new_password`, `revoke_tokens`).
pub async fn change_password(
    state: web::Data<AppState>,
    session: SignedIn,
    Client(client): Client,
    body: web::Bytes,
) -> Result<HttpResponse, CatalogError> {
    let form = FormFields::parse(&body);
    session.0.check_csrf(&form)?;
    let new = match Password::parse(form.get("new_password")) {
        Ok(new) => new,
        Err(m) => {
            let err = ServiceError::Validation(vec![FieldError::new("new password", m)]);
            return refusal(&state, &session, err).await;
        }
    };
    let s = &session.0;
    let change = PasswordChange {
        keep_session: Some(&s.id_hash),
        revoke_tokens: !form.get("revoke_tokens").is_empty(),
    };
    if let Err(err) = accounts::change_password(
        &state,
        &client,
        s.username.as_str(),
        form.get("password"),
        new,
        change,
    )
    .await
    {
        return refusal(&state, &session, err).await;
    }
    Ok(see_other("/account#security-heading"))
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
    let package = package_at(state, &kind, &name).await?;
    let version = Version::parse(&version).map_err(|_| CatalogError::NotFound)?;
    let reason = form.get("reason").trim();
    let reason = Some(reason).filter(|r| !r.is_empty());
    let change =
        packages::set_yanked_by_owner(state, session.0.actor(), &package, &version, yanked, reason)
            .await;
    if let Err(err) = change {
        return refusal(state, session, err).await;
    }
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
