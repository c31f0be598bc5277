//! The HTTP side of authentication: the bearer token of a request, checked
//! by [`app::tokens::authenticate`] (usually already by the rate-limit
//! middleware, through [`app::tokens::admit`]), as the [`Caller`]
//! extractor.

use std::{future::Future, ops::Deref, pin::Pin};

use actix_web::{FromRequest, HttpMessage, HttpRequest, dev::Payload, http::header, web};
use app::{
    ServiceError,
    tokens::{Authenticated, Bearer},
};

use crate::{error::ApiError, rate_limit::FoundBearer, state::AppState};

/// The account a request's bearer token authenticates, with what the token
/// may do. Extracting it answers 401 for a missing, malformed, expired or
/// revoked token.
#[derive(Debug, Clone)]
pub struct Caller(pub Authenticated);

impl Deref for Caller {
    type Target = Authenticated;

    fn deref(&self) -> &Authenticated {
        &self.0
    }
}

async fn authenticate(req: HttpRequest) -> Result<Caller, ApiError> {
    // The rate-limit middleware has usually found the caller already.
    let found = req.extensions().get::<FoundBearer>().map(|f| f.0.clone());
    match found {
        Some(Bearer::Live(caller)) => return Ok(Caller(caller)),
        Some(Bearer::Dead(reason)) => return Err(ServiceError::Unauthenticated(reason).into()),
        Some(Bearer::None | Bearer::Unchecked) | None => {}
    }
    let state = req
        .app_data::<web::Data<AppState>>()
        .ok_or_else(|| ApiError::internal(anyhow::anyhow!("AppState is not registered")))?;
    let header = req
        .headers()
        .get(header::AUTHORIZATION)
        .ok_or_else(|| ServiceError::Unauthenticated("no bearer token".to_owned()))?;
    let token = app::tokens::bearer_token(header.to_str().ok()).ok_or_else(|| {
        ServiceError::Unauthenticated("the Authorization header is not a bearer token".into())
    })?;
    Ok(Caller(
        app::tokens::authenticate(&state.registry, token, None).await?,
    ))
}

impl FromRequest for Caller {
    type Error = ApiError;
    type Future = Pin<Box<dyn Future<Output = Result<Self, ApiError>>>>;

    fn from_request(req: &HttpRequest, _payload: &mut Payload) -> Self::Future {
        Box::pin(authenticate(req.clone()))
    }
}

/// Second factor: the `AgentLang-OTP` header's code (a TOTP code or a
/// recovery code), for the acts that ask for one
/// ([`app::two_factor::step_up`]). Absent or empty: `None`.
#[derive(Debug, Clone, Default)]
pub struct Otp(pub Option<String>);

/// The header a second-factor code travels in.
pub const OTP_HEADER: &str = "AgentLang-OTP";

impl Otp {
    pub fn as_deref(&self) -> Option<&str> {
        self.0.as_deref()
    }
}

impl FromRequest for Otp {
    type Error = ApiError;
    type Future = std::future::Ready<Result<Self, ApiError>>;

    fn from_request(req: &HttpRequest, _payload: &mut Payload) -> Self::Future {
        // A code is short; anything long is not one (and is not kept).
        let code = req
            .headers()
            .get(OTP_HEADER)
            .and_then(|v| v.to_str().ok())
            .map(str::trim)
            .filter(|v| !v.is_empty() && v.len() <= 64)
            .map(str::to_owned);
        std::future::ready(Ok(Otp(code)))
    }
}
