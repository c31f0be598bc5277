//! The HTTP side of rate limits: one middleware identifies the client and
//! its token and counts every request; the few rules that need what the
//! body says (publish per account, passwords per address and username,
//! agent messages per message) count on top, in `app`. 429 with
//! `Retry-After`.
//!
//! Which budget a request spends is [`app::tokens::admit`]'s rule: a live
//! token spends its account's (every token of the account shares it);
//! anything else, a missing, garbage, forged, revoked or unknown token
//! included, spends its address's anonymous budget, so an `Authorization`
//! header never buys more than its account is worth. Resolution and search
//! also spend a smaller budget of their own. The caller found is kept for
//! the route ([`crate::auth::Caller`]), so a token is read once per
//! request. Who the client is and how budgets count: `app::rate_limits`.

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
    rate_limits::{ClientAddr, Cost, RateLimits},
    tokens::{self, Bearer},
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

/// The caller [`limit_requests`] found for a request's token; the
/// authentication extractor takes it from here.
#[derive(Debug, Clone)]
pub struct FoundBearer(pub Bearer);

/// What a request costs, by its method and path: liveness, readiness,
/// metrics and static assets are free (wanted by monitors and browsers
/// without limit); resolution and search expensive.
fn cost(method: &Method, path: &str) -> Cost {
    match (method, path) {
        (_, "/healthz" | "/readyz" | "/metrics") => Cost::Free,
        (&Method::GET | &Method::HEAD, p) if p.starts_with("/static/") => Cost::Free,
        (&Method::POST, "/api/v1/resolve" | "/api/v1/audit") => Cost::Expensive,
        (&Method::GET | &Method::HEAD, "/api/v1/advisories/all.zip") => Cost::Expensive,
        (&Method::GET | &Method::HEAD, "/api/v1/search" | "/search") => Cost::Expensive,
        _ => Cost::General,
    }
}

/// Middleware for every request: finds the client and its token's caller,
/// then counts the request against the budget that caller spends (see the
/// module docs).
pub async fn limit_requests(
    req: ServiceRequest,
    next: Next<impl MessageBody + 'static>,
) -> Result<ServiceResponse<EitherBody<impl MessageBody>>, actix_web::Error> {
    let Some(state) = req.app_data::<web::Data<AppState>>().cloned() else {
        return Ok(next.call(req).await?.map_into_left_body());
    };
    let client = client_addr(state.rate_limits(), req.request());
    let authorization = req
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok());
    let cost = cost(req.method(), req.path());
    let (bearer, spent) = tokens::admit(&state.registry, &client, authorization, cost).await;
    req.extensions_mut().insert(client);
    req.extensions_mut().insert(FoundBearer(bearer));
    if let Err(err) = spent {
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
