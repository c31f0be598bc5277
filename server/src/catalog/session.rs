//! The HTTP side of catalog sessions: the cookie, its CSRF token and the
//! sign-in form. What a session is and who may sign in is
//! [`app::sessions`]'.
//!
//! The session cookie (`agentlang_session`) holds the session's random
//! secret. The cookie is always `HttpOnly` and
//! `SameSite=Lax` (links from other sites still arrive signed in, their
//! POSTs do not), and `Secure` when the registry's public URL is https.
//!
//! The sign-in form has no session yet: its CSRF token is a random value in
//! a short-lived `SameSite=Strict` cookie that the form must echo
//! (double submit), so another site cannot sign a browser in to its account.

use std::{future::Future, pin::Pin};

use super::{CatalogError, FormFields, html_status, see_other};
use app::ServiceError;
use app::{
    secrets::{constant_time_eq, random_hex},
    sessions::{self, SESSION_LIFETIME_SECS, Session},
};

use crate::{rate_limit::Client, state::AppState};
use actix_web::{
    FromRequest, HttpRequest, HttpResponse,
    cookie::{Cookie, SameSite},
    dev::Payload,
    http::StatusCode,
    web,
};
use agentlang_web::{
    model::{Chrome, SessionUser},
    pages::{LoginError, LoginPage},
};

pub const SESSION_COOKIE: &str = "agentlang_session";
pub const LOGIN_CSRF_COOKIE: &str = "agentlang_login_csrf";
const LOGIN_FORM_LIFETIME_SECS: i64 = 3600;

/// A random value as URL-safe text (hex), for the sign-in form's token.
fn random_token() -> Result<String, CatalogError> {
    random_hex().map_err(|e| CatalogError::internal(anyhow::anyhow!("{e}")))
}

/// Whether cookies get `Secure`: only when the public URL is https, so a
/// registry on plain http (localhost, tests) still works.
fn secure_cookies(state: &AppState) -> bool {
    state.public_url().starts_with("https://")
}

/// A signed-in session.
pub type WebSession = Session;

/// The page chrome and CSRF check of a session.
pub trait SessionPage {
    fn chrome(&self) -> Chrome;
    fn check_csrf(&self, form: &FormFields) -> Result<(), CatalogError>;
}

impl SessionPage for Session {
    fn chrome(&self) -> Chrome {
        Chrome {
            user: Some(SessionUser {
                username: self.username.to_string(),
                csrf_token: self.csrf_token.clone(),
            }),
            search_query: String::new(),
        }
    }

    /// 403 unless the form carries this session's CSRF token.
    fn check_csrf(&self, form: &FormFields) -> Result<(), CatalogError> {
        if constant_time_eq(form.get("csrf_token"), &self.csrf_token) {
            Ok(())
        } else {
            Err(CatalogError::Forbidden("missing or wrong CSRF token"))
        }
    }
}

async fn load_session(req: &HttpRequest) -> Result<Option<WebSession>, CatalogError> {
    let Some(cookie) = req.cookie(SESSION_COOKIE) else {
        return Ok(None);
    };
    let state = req
        .app_data::<web::Data<AppState>>()
        .ok_or_else(|| CatalogError::internal(anyhow::anyhow!("AppState is not registered")))?;
    Ok(sessions::load(state, cookie.value()).await?)
}

/// The session, if the request has a live one.
#[derive(Debug, Clone)]
pub struct MaybeSession(pub Option<WebSession>);

impl MaybeSession {
    pub fn chrome(&self) -> Chrome {
        self.0.as_ref().map(WebSession::chrome).unwrap_or_default()
    }
}

impl FromRequest for MaybeSession {
    type Error = CatalogError;
    type Future = Pin<Box<dyn Future<Output = Result<Self, CatalogError>>>>;

    fn from_request(req: &HttpRequest, _payload: &mut Payload) -> Self::Future {
        let req = req.clone();
        Box::pin(async move { load_session(&req).await.map(MaybeSession) })
    }
}

/// A live session, or a redirect to the sign-in page.
#[derive(Debug, Clone)]
pub struct SignedIn(pub WebSession);

impl FromRequest for SignedIn {
    type Error = CatalogError;
    type Future = Pin<Box<dyn Future<Output = Result<Self, CatalogError>>>>;

    fn from_request(req: &HttpRequest, _payload: &mut Payload) -> Self::Future {
        let req = req.clone();
        Box::pin(async move {
            load_session(&req)
                .await?
                .map(SignedIn)
                .ok_or(CatalogError::SignInRequired)
        })
    }
}

fn login_csrf_cookie(value: String, secure: bool) -> Cookie<'static> {
    Cookie::build(LOGIN_CSRF_COOKIE, value)
        .path("/login")
        .http_only(true)
        .secure(secure)
        .same_site(SameSite::Strict)
        .max_age(time::Duration::seconds(LOGIN_FORM_LIFETIME_SECS))
        .finish()
}

/// The sign-in page with a fresh form token.
fn login_page(
    state: &AppState,
    status: StatusCode,
    username: String,
    error: Option<LoginError>,
    pending: Option<String>,
) -> Result<HttpResponse, CatalogError> {
    let csrf_token = random_token()?;
    let page = LoginPage {
        chrome: Chrome::default(),
        csrf_token: csrf_token.clone(),
        username,
        error,
        pending,
    };
    let mut response = html_status(status, &page)?;
    response
        .add_cookie(&login_csrf_cookie(csrf_token, secure_cookies(state)))
        .map_err(CatalogError::internal)?;
    response.headers_mut().insert(
        actix_web::http::header::CACHE_CONTROL,
        actix_web::http::header::HeaderValue::from_static("no-store"),
    );
    Ok(response)
}

/// `GET /login`.
pub async fn login_form(
    state: web::Data<AppState>,
    session: MaybeSession,
) -> Result<HttpResponse, CatalogError> {
    if session.0.is_some() {
        return Ok(see_other("/account"));
    }
    login_page(&state, StatusCode::OK, String::new(), None, None)
}

/// `POST /login` (`username`, `password`, `csrf_token`).
pub async fn login(
    state: web::Data<AppState>,
    req: HttpRequest,
    Client(client): Client,
    body: web::Bytes,
) -> Result<HttpResponse, CatalogError> {
    let form = FormFields::parse(&body);
    let username = form.get("username").trim().to_owned();
    let expected = req
        .cookie(LOGIN_CSRF_COOKIE)
        .map(|c| c.value().to_owned())
        .unwrap_or_default();
    if expected.is_empty() || !constant_time_eq(form.get("csrf_token"), &expected) {
        tracing::info!("sign-in refused: missing or wrong form token");
        return login_page(
            &state,
            StatusCode::FORBIDDEN,
            username,
            Some(LoginError::SessionExpired),
            None,
        );
    }
    // Second factor: the code step carries the signed pending sign-in from
    // the password step, never the password.
    let pending = form.get("pending");
    let step = if pending.is_empty() {
        sessions::begin_sign_in(&state, &client, &username, form.get("password")).await
    } else {
        sessions::finish_sign_in(&state, &client, pending, form.get("otp"))
            .await
            .map(sessions::SignIn::Done)
    };
    let new = match step {
        Ok(sessions::SignIn::Done(new)) => new,
        Ok(sessions::SignIn::CodeNeeded { pending }) => {
            return login_page(&state, StatusCode::OK, username, None, Some(pending));
        }
        Err(ServiceError::RateLimited { .. }) => {
            return login_page(
                &state,
                StatusCode::TOO_MANY_REQUESTS,
                username,
                Some(LoginError::TooManyAttempts),
                None,
            );
        }
        Err(ServiceError::InvalidCredentials | ServiceError::Unauthenticated(_)) => {
            return login_page(
                &state,
                StatusCode::UNAUTHORIZED,
                username,
                Some(LoginError::InvalidCredentials),
                None,
            );
        }
        Err(ServiceError::TwoFactorCodeInvalid(_) | ServiceError::TwoFactorCodeRequired(_)) => {
            return login_page(
                &state,
                StatusCode::UNAUTHORIZED,
                username,
                Some(LoginError::CodeInvalid),
                Some(pending.to_owned()),
            );
        }
        Err(other) => return Err(other.into()),
    };

    let secure = secure_cookies(&state);
    let session_cookie = Cookie::build(SESSION_COOKIE, new.cookie_secret)
        .path("/")
        .http_only(true)
        .secure(secure)
        .same_site(SameSite::Lax)
        .max_age(time::Duration::seconds(SESSION_LIFETIME_SECS))
        .finish();
    let mut spent = login_csrf_cookie(String::new(), secure);
    spent.make_removal();
    let mut response = see_other("/account");
    response
        .add_cookie(&session_cookie)
        .map_err(CatalogError::internal)?;
    response
        .add_cookie(&spent)
        .map_err(CatalogError::internal)?;
    Ok(response)
}

/// `POST /logout` (`csrf_token`): ends the session everywhere.
pub async fn logout(
    state: web::Data<AppState>,
    session: MaybeSession,
    body: web::Bytes,
) -> Result<HttpResponse, CatalogError> {
    let Some(session) = session.0 else {
        return Ok(see_other("/"));
    };
    session.check_csrf(&FormFields::parse(&body))?;
    sessions::sign_out(&state, &session).await?;
    signed_out(&state)
}

/// `POST /account/sessions/end-all` (`csrf_token`): ends every session of
/// the account, this one included.
pub async fn logout_everywhere(
    state: web::Data<AppState>,
    session: SignedIn,
    body: web::Bytes,
) -> Result<HttpResponse, CatalogError> {
    session.0.check_csrf(&FormFields::parse(&body))?;
    sessions::sign_out_everywhere(&state, &session.0).await?;
    signed_out(&state)
}

/// Home, with the session cookie removed.
fn signed_out(state: &AppState) -> Result<HttpResponse, CatalogError> {
    let mut removal = Cookie::build(SESSION_COOKIE, "")
        .path("/")
        .http_only(true)
        .secure(secure_cookies(state))
        .same_site(SameSite::Lax)
        .finish();
    removal.make_removal();
    let mut response = see_other("/");
    response
        .add_cookie(&removal)
        .map_err(CatalogError::internal)?;
    Ok(response)
}
