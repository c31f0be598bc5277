//! Rate limits: per client address on credential endpoints and anonymous
//! reads, per token (and address) on publish; 429 with `Retry-After`.
//!
//! The counters live in each replica's memory (governor's GCRA, keyed). That
//! is deliberate: they guard against floods, not meter a quota, so with N
//! replicas behind a proxy a client gets at most N times the configured rate,
//! and no request pays a database write for counting.

use std::{net::IpAddr, num::NonZeroU32};

use actix_web::{
    body::{EitherBody, MessageBody},
    dev::{ServiceRequest, ServiceResponse},
    http::{Method, header},
    middleware::Next,
    web,
};
use governor::{
    DefaultKeyedRateLimiter, Quota,
    clock::{Clock, DefaultClock},
};

use crate::{config::RateLimitSettings, error::ApiError, state::AppState};

/// Keys kept before idle ones are purged, bounding memory under a flood of
/// distinct addresses.
const PURGE_ABOVE_KEYS: usize = 100_000;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Bucket {
    /// `POST /api/v1/publish`: keyed by token and by address.
    Publish,
    /// Account and token creation: keyed by address.
    Credentials,
    /// Unauthenticated `GET`s under `/api`: keyed by address.
    AnonymousRead,
    /// CLowl and MoltSpeak messages: keyed by address.
    AgentMessage,
}

#[derive(Debug)]
pub struct RateLimits {
    enabled: bool,
    publish: DefaultKeyedRateLimiter<String>,
    credentials: DefaultKeyedRateLimiter<String>,
    anonymous_reads: DefaultKeyedRateLimiter<String>,
    agent_messages: DefaultKeyedRateLimiter<String>,
}

impl RateLimits {
    pub fn new(settings: &RateLimitSettings) -> Self {
        let limiter =
            |per_minute: NonZeroU32| DefaultKeyedRateLimiter::keyed(Quota::per_minute(per_minute));
        Self {
            enabled: settings.enabled,
            publish: limiter(settings.publish_per_minute),
            credentials: limiter(settings.credentials_per_minute),
            anonymous_reads: limiter(settings.anonymous_reads_per_minute),
            agent_messages: limiter(settings.agent_messages_per_minute),
        }
    }

    /// Counts one request against `key` in `bucket`; 429 when over.
    pub fn check(&self, bucket: Bucket, key: &str) -> Result<(), ApiError> {
        if !self.enabled {
            return Ok(());
        }
        let limiter = match bucket {
            Bucket::Publish => &self.publish,
            Bucket::Credentials => &self.credentials,
            Bucket::AnonymousRead => &self.anonymous_reads,
            Bucket::AgentMessage => &self.agent_messages,
        };
        let key = key.to_owned();
        let outcome = limiter.check_key(&key);
        if limiter.len() > PURGE_ABOVE_KEYS {
            limiter.retain_recent();
        }
        outcome.map_err(|not_until| {
            let wait = not_until.wait_time_from(DefaultClock::default().now());
            ApiError::RateLimited {
                // Round up: retrying after the floor would be refused again.
                retry_after_secs: wait.as_secs() + u64::from(wait.subsec_nanos() > 0),
            }
        })
    }
}

/// The client's address as the key of per-address limits. The direct peer
/// address: behind a reverse proxy every client shares the proxy's address,
/// so deployments there should rate-limit at the proxy.
pub fn client_key(peer: Option<IpAddr>) -> String {
    peer.map_or_else(|| "unknown".to_owned(), |ip| format!("ip:{ip}"))
}

/// Middleware for `/api`: unauthenticated reads count against the caller's
/// address. Requests with a token are limited by what they do instead.
pub async fn limit_anonymous_reads(
    req: ServiceRequest,
    next: Next<impl MessageBody + 'static>,
) -> Result<ServiceResponse<EitherBody<impl MessageBody>>, actix_web::Error> {
    let is_api_read =
        matches!(*req.method(), Method::GET | Method::HEAD) && req.path().starts_with("/api/");
    if is_api_read && !req.headers().contains_key(header::AUTHORIZATION) {
        let key = client_key(req.peer_addr().map(|a| a.ip()));
        if let Some(state) = req.app_data::<web::Data<AppState>>().cloned()
            && let Err(err) = state.rate_limits.check(Bucket::AnonymousRead, &key)
        {
            let response = actix_web::ResponseError::error_response(&err);
            return Ok(req.into_response(response).map_into_right_body());
        }
    }
    Ok(next.call(req).await?.map_into_left_body())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_limit_refuses_with_a_retry_time() {
        let settings = RateLimitSettings {
            credentials_per_minute: NonZeroU32::new(2).unwrap(),
            ..RateLimitSettings::default()
        };
        let limits = RateLimits::new(&settings);
        assert!(limits.check(Bucket::Credentials, "ip:1.2.3.4").is_ok());
        assert!(limits.check(Bucket::Credentials, "ip:1.2.3.4").is_ok());
        let err = limits.check(Bucket::Credentials, "ip:1.2.3.4").unwrap_err();
        let ApiError::RateLimited { retry_after_secs } = err else {
            panic!("expected RateLimited, got {err:?}");
        };
        assert!((1..=30).contains(&retry_after_secs), "{retry_after_secs}");
        // Another address has its own budget.
        assert!(limits.check(Bucket::Credentials, "ip:5.6.7.8").is_ok());
    }

    #[test]
    fn disabled_limits_never_refuse() {
        let settings = RateLimitSettings {
            enabled: false,
            credentials_per_minute: NonZeroU32::new(1).unwrap(),
            ..RateLimitSettings::default()
        };
        let limits = RateLimits::new(&settings);
        for _ in 0..10 {
            assert!(limits.check(Bucket::Credentials, "k").is_ok());
        }
    }
}
