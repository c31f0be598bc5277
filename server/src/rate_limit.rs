//! The HTTP side of rate limits: one middleware identifies the client and
//! counts every request; the few rules that need what the body says
//! (publish per token, passwords per username, agent messages per message)
//! count on top, in `app`. 429 with `Retry-After`.
//!
//! Which budget a request spends: a bearer token whose signature verifies
//! spends its token's (per `jti`); anything else, a missing, garbage or
//! forged token included, spends its address's anonymous budget, so an
//! `Authorization` header never buys more than its token is worth.
//! Resolution and search also spend a smaller budget of their own. Who the
//! client is and how budgets count: `app::rate_limits`.

use std::future::{Ready, ready};

use actix_web::{
    FromRequest, HttpMessage, HttpRequest,
    body::{EitherBody, MessageBody},
    dev::{Payload, ServiceRequest, ServiceResponse},
    http::{Method, header},
    middleware::Next,
    web,
};
use app::{
    rate_limits::{Bucket, ClientAddr, RateLimits},
    tokens::{Claims, bearer_token},
};

use crate::{error::ApiError, state::AppState};

/// Who a request is from: the extractor of [`ClientAddr`].
#[derive(Debug, Clone)]
pub struct Client(pub ClientAddr);

/// The client of `req` by the registry's trusted proxies.
pub fn client_addr(limits: &RateLimits, req: &HttpRequest) -> ClientAddr {
    limits.client_of(
        req.peer_addr().map(|a| a.ip()),
        req.headers()
            .get_all("x-forwarded-for")
            .filter_map(|v| v.to_str().ok()),
    )
}

impl FromRequest for Client {
    type Error = actix_web::Error;
    type Future = Ready<Result<Self, actix_web::Error>>;

    /// The address [`limit_requests`] found; computed here when the
    /// middleware did not run.
    fn from_request(req: &HttpRequest, _: &mut Payload) -> Self::Future {
        let found = req.extensions().get::<ClientAddr>().cloned();
        ready(Ok(Client(found.unwrap_or_else(|| {
            match req.app_data::<web::Data<AppState>>() {
                Some(state) => client_addr(state.rate_limits(), req),
                None => ClientAddr::of(
                    req.peer_addr()
                        .map_or(std::net::IpAddr::V4(std::net::Ipv4Addr::UNSPECIFIED), |a| {
                            a.ip()
                        }),
                ),
            }
        }))))
    }
}

/// Claims of a bearer token whose signature, issuer, audience and expiry the
/// middleware checked; the authentication extractor reuses them.
#[derive(Debug, Clone)]
pub struct VerifiedClaims(pub Claims);

/// What a request costs, by its method and path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Cost {
    /// Liveness, readiness, metrics, static assets: cheap, and wanted by
    /// monitors and browsers without limit.
    Free,
    /// Resolution and search: the general budget and the expensive one.
    Expensive,
    /// Everything else: the general budget.
    General,
}

fn cost(method: &Method, path: &str) -> Cost {
    match (method, path) {
        (_, "/healthz" | "/readyz" | "/metrics") => Cost::Free,
        (&Method::GET | &Method::HEAD, p) if p.starts_with("/static/") => Cost::Free,
        (&Method::POST, "/api/v1/resolve") => Cost::Expensive,
        (&Method::GET | &Method::HEAD, "/api/v1/search" | "/search") => Cost::Expensive,
        _ => Cost::General,
    }
}

/// Middleware for every request: finds the client, then counts the request
/// against its token's or its address's budget (see the module docs).
pub async fn limit_requests(
    req: ServiceRequest,
    next: Next<impl MessageBody + 'static>,
) -> Result<ServiceResponse<EitherBody<impl MessageBody>>, actix_web::Error> {
    let Some(state) = req.app_data::<web::Data<AppState>>().cloned() else {
        return Ok(next.call(req).await?.map_into_left_body());
    };
    let client = client_addr(state.rate_limits(), req.request());
    let claims = bearer_token(
        req.headers()
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok()),
    )
    .and_then(|token| state.tokens().verify(token).ok());
    let caller_key = match &claims {
        Some(claims) => format!("token:{}", claims.jti),
        None => client.as_str().to_owned(),
    };
    req.extensions_mut().insert(client);
    if let Some(claims) = claims.clone() {
        req.extensions_mut().insert(VerifiedClaims(claims));
    }
    let general = if claims.is_some() {
        Bucket::Authenticated
    } else {
        Bucket::Anonymous
    };
    let refused = match cost(req.method(), req.path()) {
        Cost::Free => None,
        Cost::General => state.rate_limits().check(general, &caller_key).err(),
        Cost::Expensive => state
            .rate_limits()
            .check(general, &caller_key)
            .and_then(|()| state.rate_limits().check(Bucket::Expensive, &caller_key))
            .err(),
    };
    if let Some(err) = refused {
        let response = actix_web::ResponseError::error_response(&ApiError::from(err));
        return Ok(req.into_response(response).map_into_right_body());
    }
    Ok(next.call(req).await?.map_into_left_body())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn costs_by_route() {
        assert_eq!(cost(&Method::GET, "/healthz"), Cost::Free);
        assert_eq!(cost(&Method::GET, "/static/style.css"), Cost::Free);
        assert_eq!(cost(&Method::POST, "/api/v1/resolve"), Cost::Expensive);
        assert_eq!(cost(&Method::GET, "/search"), Cost::Expensive);
        assert_eq!(cost(&Method::GET, "/api/v1/search"), Cost::Expensive);
        // Agent messages spend the general budget per request here, and
        // their own per message in the handler.
        assert_eq!(cost(&Method::POST, "/moltspeak/v0.1/batch"), Cost::General);
        assert_eq!(cost(&Method::GET, "/agents/x"), Cost::General);
        assert_eq!(cost(&Method::POST, "/api/v1/tokens"), Cost::General);
    }
}
