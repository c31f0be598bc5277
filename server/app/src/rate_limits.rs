//! Rate-limit budgets: which bucket a request or an attempt spends, keyed
//! by client address, account, or address and username; 429
//! (`RateLimited`) when over. Which budget a request's token spends is
//! [`crate::tokens::admit`]'s rule: its account's when it is live, its
//! address's otherwise.
//!
//! Who a request is from ([`ClientAddr`]): the peer address, or, when the
//! peer is a configured trusted proxy, the client address it forwards in
//! `X-Forwarded-For` (never from a header otherwise). IPv6 clients are
//! grouped by their /64, which one subscriber usually holds whole.
//!
//! The counters live in each replica's memory (governor's GCRA, keyed). That
//! is deliberate: they guard against floods, not meter a quota, so with N
//! replicas behind a proxy a client gets at most N times the configured rate,
//! and no request pays a database write for counting. The HTTP middleware
//! that spends the general budgets lives with the routes; the rules that
//! spend more (publish per account, passwords per address and username,
//! agent messages per message) call [`RateLimits::check`] themselves.

use std::{
    net::{IpAddr, Ipv6Addr},
    num::NonZeroU32,
};

use governor::{
    DefaultKeyedRateLimiter, Quota,
    clock::{Clock, DefaultClock},
};
use ipnet::IpNet;

use crate::{ServiceError, settings::RateLimitSettings};

/// Keys kept before idle ones are purged, bounding memory under a flood of
/// distinct addresses.
const PURGE_ABOVE_KEYS: usize = 100_000;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Bucket {
    /// `POST /api/v1/publish`: keyed by account and by address.
    Publish,
    /// Account and token creation, sign-in: keyed by address.
    Credentials,
    /// Password checks: keyed by the client address and the normalized
    /// username tried (whether or not the account exists), never by the
    /// username alone: that would let anyone lock its holder out.
    LoginsPerUsername,
    /// Requests without a live token: keyed by address.
    Anonymous,
    /// Requests with a live token: keyed by its account, so every token of
    /// an account shares one budget.
    Authenticated,
    /// Resolution and search, on top of the above: keyed by account or
    /// address.
    Expensive,
    /// CLowl and MoltSpeak messages (each item of a batch): keyed by
    /// address.
    AgentMessage,
    /// Yanks and unyanks of one version: keyed by the version. Each is a
    /// permanent log entry and moves every replica's caches, so a version
    /// may change [`YANKS_PER_VERSION_PER_MINUTE`] times a minute.
    YankPerVersion,
    /// Yanks and unyanks by one account, whatever the version: keyed by
    /// account ([`YANKS_PER_ACCOUNT_PER_MINUTE`] a minute).
    YankPerAccount,
    /// Prompt recipients registered, challenged or removed, and grants
    /// made or revoked, by one account: keyed by account
    /// ([`GRANT_WRITES_PER_ACCOUNT_PER_MINUTE`] a minute). A grant is a
    /// permanent log entry.
    GrantWrites,
}

/// Fixed rather than configured: no registry needs a version to change
/// more often, and a burst of these is what a loop looks like.
pub const YANKS_PER_VERSION_PER_MINUTE: u32 = 4;
pub const YANKS_PER_ACCOUNT_PER_MINUTE: u32 = 30;
pub const GRANT_WRITES_PER_ACCOUNT_PER_MINUTE: u32 = 60;

/// What a request costs, by its route (the HTTP layer says which).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cost {
    /// Liveness, readiness, metrics, static assets: nothing.
    Free,
    /// The general budget.
    General,
    /// Resolution and search: the general budget and the expensive one.
    Expensive,
}

/// The key of an account's budgets (`account_id` as a number or as a
/// token's `sub` claim, which is that number).
pub fn account_budget(account_id: impl std::fmt::Display) -> String {
    format!("account:{account_id}")
}

#[derive(Debug)]
pub struct RateLimits {
    enabled: bool,
    publish: DefaultKeyedRateLimiter<String>,
    credentials: DefaultKeyedRateLimiter<String>,
    logins_per_username: DefaultKeyedRateLimiter<String>,
    anonymous: DefaultKeyedRateLimiter<String>,
    authenticated: DefaultKeyedRateLimiter<String>,
    expensive: DefaultKeyedRateLimiter<String>,
    agent_messages: DefaultKeyedRateLimiter<String>,
    yanks_per_version: DefaultKeyedRateLimiter<String>,
    yanks_per_account: DefaultKeyedRateLimiter<String>,
    grant_writes: DefaultKeyedRateLimiter<String>,
    trusted_proxies: Vec<IpNet>,
}

impl RateLimits {
    pub fn new(settings: &RateLimitSettings) -> Self {
        let limiter =
            |per_minute: NonZeroU32| DefaultKeyedRateLimiter::keyed(Quota::per_minute(per_minute));
        Self {
            enabled: settings.enabled,
            publish: limiter(settings.publish_per_minute),
            credentials: limiter(settings.credentials_per_minute),
            logins_per_username: limiter(settings.logins_per_username_per_minute),
            anonymous: limiter(settings.anonymous_reads_per_minute),
            authenticated: limiter(settings.authenticated_per_minute),
            expensive: limiter(settings.expensive_per_minute),
            agent_messages: limiter(settings.agent_messages_per_minute),
            yanks_per_version: limiter(
                NonZeroU32::new(YANKS_PER_VERSION_PER_MINUTE).unwrap_or(NonZeroU32::MIN),
            ),
            yanks_per_account: limiter(
                NonZeroU32::new(YANKS_PER_ACCOUNT_PER_MINUTE).unwrap_or(NonZeroU32::MIN),
            ),
            grant_writes: limiter(
                NonZeroU32::new(GRANT_WRITES_PER_ACCOUNT_PER_MINUTE).unwrap_or(NonZeroU32::MIN),
            ),
            trusted_proxies: settings.trusted_proxies.clone(),
        }
    }

    fn limiter(&self, bucket: Bucket) -> &DefaultKeyedRateLimiter<String> {
        match bucket {
            Bucket::Publish => &self.publish,
            Bucket::Credentials => &self.credentials,
            Bucket::LoginsPerUsername => &self.logins_per_username,
            Bucket::Anonymous => &self.anonymous,
            Bucket::Authenticated => &self.authenticated,
            Bucket::Expensive => &self.expensive,
            Bucket::AgentMessage => &self.agent_messages,
            Bucket::YankPerVersion => &self.yanks_per_version,
            Bucket::YankPerAccount => &self.yanks_per_account,
            Bucket::GrantWrites => &self.grant_writes,
        }
    }

    /// Spends what a request `cost`s: `key` in the `general` bucket
    /// (`Anonymous` or `Authenticated`), and in `Expensive` too when it is
    /// expensive.
    pub fn spend(&self, general: Bucket, key: &str, cost: Cost) -> Result<(), ServiceError> {
        match cost {
            Cost::Free => Ok(()),
            Cost::General => self.check(general, key),
            Cost::Expensive => self
                .check(general, key)
                .and_then(|()| self.check(Bucket::Expensive, key)),
        }
    }

    /// Counts one request against `key` in `bucket`; 429 when over.
    pub fn check(&self, bucket: Bucket, key: &str) -> Result<(), ServiceError> {
        self.check_n(bucket, key, NonZeroU32::MIN)
    }

    /// Counts `n` requests at once (a batch): all of them, or none and 429.
    /// A batch larger than the bucket's whole burst can never pass.
    pub fn check_n(&self, bucket: Bucket, key: &str, n: NonZeroU32) -> Result<(), ServiceError> {
        if !self.enabled {
            return Ok(());
        }
        let limiter = self.limiter(bucket);
        let key = key.to_owned();
        let outcome = limiter.check_key_n(&key, n);
        if limiter.len() > PURGE_ABOVE_KEYS {
            limiter.retain_recent();
        }
        match outcome {
            Ok(Ok(())) => Ok(()),
            Ok(Err(not_until)) => {
                let wait = not_until.wait_time_from(DefaultClock::default().now());
                Err(ServiceError::RateLimited {
                    // Round up: retrying after the floor would be refused again.
                    retry_after_secs: wait.as_secs() + u64::from(wait.subsec_nanos() > 0),
                })
            }
            // More than the burst: waiting does not help; a minute is the
            // honest answer for a smaller batch.
            Err(_) => Err(ServiceError::RateLimited {
                retry_after_secs: 60,
            }),
        }
    }

    /// Who a request from `peer` is from, given its `X-Forwarded-For`
    /// values: see the module documentation.
    pub fn client_of<'a>(
        &self,
        peer: Option<IpAddr>,
        forwarded_for: impl Iterator<Item = &'a str>,
    ) -> ClientAddr {
        match peer {
            None => ClientAddr("unknown".to_owned()),
            Some(peer) => {
                ClientAddr::of(forwarded_client(peer, forwarded_for, &self.trusted_proxies))
            }
        }
    }
}

/// The address a chain of trusted proxies forwards: `X-Forwarded-For` read
/// from the right, skipping trusted hops, stopping at the first address that
/// is not one. The peer itself when it is not trusted, or when a hop cannot
/// be read.
fn forwarded_client<'a>(
    peer: IpAddr,
    forwarded_for: impl Iterator<Item = &'a str>,
    trusted: &[IpNet],
) -> IpAddr {
    let is_trusted = |ip: &IpAddr| trusted.iter().any(|net| net.contains(&canonical(*ip)));
    if !is_trusted(&peer) {
        return peer;
    }
    let hops: Vec<&str> = forwarded_for.flat_map(|v| v.split(',')).collect();
    let mut client = peer;
    for hop in hops.iter().rev() {
        let Ok(ip) = hop.trim().parse::<IpAddr>() else {
            return client;
        };
        client = ip;
        if !is_trusted(&ip) {
            return ip;
        }
    }
    client
}

/// IPv4-mapped IPv6 addresses as the IPv4 address they are.
fn canonical(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
        v4 @ IpAddr::V4(_) => v4,
    }
}

/// The key of a client's per-address budgets: an IPv4 address, or an IPv6
/// /64.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientAddr(String);

impl ClientAddr {
    pub fn of(ip: IpAddr) -> Self {
        match canonical(ip) {
            IpAddr::V4(v4) => Self(format!("ip:{v4}")),
            IpAddr::V6(v6) => {
                let s = v6.segments();
                let net = Ipv6Addr::new(s[0], s[1], s[2], s[3], 0, 0, 0, 0);
                Self(format!("ip:{net}/64"))
            }
        }
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
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
        let ServiceError::RateLimited { retry_after_secs } = err else {
            panic!("expected RateLimited, got {err:?}");
        };
        assert!((1..=30).contains(&retry_after_secs), "{retry_after_secs}");
        // Another address has its own budget.
        assert!(limits.check(Bucket::Credentials, "ip:5.6.7.8").is_ok());
    }

    #[test]
    fn a_batch_is_counted_whole() {
        let settings = RateLimitSettings {
            agent_messages_per_minute: NonZeroU32::new(10).unwrap(),
            ..RateLimitSettings::default()
        };
        let limits = RateLimits::new(&settings);
        let n = |n| NonZeroU32::new(n).unwrap();
        assert!(limits.check_n(Bucket::AgentMessage, "k", n(8)).is_ok());
        // Three more do not fit: none of them is counted.
        assert!(limits.check_n(Bucket::AgentMessage, "k", n(3)).is_err());
        assert!(limits.check_n(Bucket::AgentMessage, "k", n(2)).is_ok());
        // Past the whole burst: never.
        assert!(
            limits
                .check_n(Bucket::AgentMessage, "other", n(11))
                .is_err()
        );
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

    #[test]
    fn ipv6_clients_are_grouped_by_64_and_mapped_v4_is_v4() {
        let key = |s: &str| ClientAddr::of(s.parse().unwrap()).0;
        assert_eq!(key("2001:db8:1:2:aaaa::1"), "ip:2001:db8:1:2::/64");
        assert_eq!(key("2001:db8:1:2:ffff::9"), key("2001:db8:1:2::1"));
        assert_ne!(key("2001:db8:1:3::1"), key("2001:db8:1:2::1"));
        assert_eq!(key("::ffff:192.0.2.7"), "ip:192.0.2.7");
        assert_eq!(key("192.0.2.7"), "ip:192.0.2.7");
    }

    #[test]
    fn forwarded_addresses_count_only_from_trusted_proxies() {
        let ip = |s: &str| s.parse::<IpAddr>().unwrap();
        let trusted: Vec<IpNet> = vec!["10.0.0.0/8".parse().unwrap()];
        let client =
            |peer: &str, xff: &[&str]| forwarded_client(ip(peer), xff.iter().copied(), &trusted);
        // An untrusted peer's header is ignored: anyone can write it.
        assert_eq!(client("203.0.113.9", &["1.2.3.4"]), ip("203.0.113.9"));
        // Through the trusted proxy: the address it saw.
        assert_eq!(client("10.0.0.2", &["1.2.3.4"]), ip("1.2.3.4"));
        // A client's own forged entries sit left of what the proxy appended.
        assert_eq!(client("10.0.0.2", &["6.6.6.6, 1.2.3.4"]), ip("1.2.3.4"));
        // Several trusted hops are skipped; a header split over lines too.
        assert_eq!(client("10.0.0.2", &["1.2.3.4", "10.9.9.9"]), ip("1.2.3.4"));
        // Nothing readable: the proxy itself.
        assert_eq!(client("10.0.0.2", &["garbage"]), ip("10.0.0.2"));
        assert_eq!(client("10.0.0.2", &[]), ip("10.0.0.2"));
        // No proxies configured: always the peer.
        assert_eq!(
            forwarded_client(ip("10.0.0.2"), ["1.2.3.4"].into_iter(), &[]),
            ip("10.0.0.2")
        );
    }
}
