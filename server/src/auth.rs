//! The HTTP side of authentication: the bearer token of a request and the
//! [`Authenticated`] extractor. What a token is and how it is checked lives
//! in [`crate::service::tokens`].

use std::{future::Future, pin::Pin};

use actix_web::{FromRequest, HttpMessage, HttpRequest, dev::Payload, http::header, web};

pub use crate::service::tokens::Authenticated;
use crate::{error::ApiError, rate_limit::VerifiedClaims, service::tokens, state::AppState};

async fn authenticate(req: HttpRequest) -> Result<Authenticated, ApiError> {
    let state = req
        .app_data::<web::Data<AppState>>()
        .ok_or_else(|| ApiError::internal(anyhow::anyhow!("AppState is not registered")))?;
    let header = req
        .headers()
        .get(header::AUTHORIZATION)
        .ok_or_else(|| ApiError::Unauthenticated("no bearer token".to_owned()))?;
    let token = tokens::bearer_token(header.to_str().ok()).ok_or_else(|| {
        ApiError::Unauthenticated("the Authorization header is not a bearer token".into())
    })?;
    // The rate-limit middleware has usually checked the signature already.
    let verified = req
        .extensions()
        .get::<VerifiedClaims>()
        .map(|v| v.0.clone());
    tokens::authenticate(state, token, verified).await
}

impl FromRequest for Authenticated {
    type Error = ApiError;
    type Future = Pin<Box<dyn Future<Output = Result<Self, ApiError>>>>;

    fn from_request(req: &HttpRequest, _payload: &mut Payload) -> Self::Future {
        Box::pin(authenticate(req.clone()))
    }
}
