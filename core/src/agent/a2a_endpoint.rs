//! The A2A interface an agent declares in agent.yaml: `protocols: [{name:
//! a2a, endpoint: {url, binding}}]`. Read by agent.yaml's parser (with
//! its diagnostics) and, from a stored agent.yaml, by the card builder.

use std::{collections::BTreeMap, fmt, str::FromStr};

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;

/// The protocol whose `protocols:` entry may carry an endpoint.
pub const PROTOCOL: &str = "a2a";
/// Longest endpoint URL accepted, in bytes.
pub const MAX_URL_LEN: usize = 2_048;

/// The protocol bindings A2A v1.0 defines (`AgentInterface.protocol_binding`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Binding {
    JsonRpc,
    Grpc,
    HttpJson,
}

impl Binding {
    /// Every binding, as agent.yaml and the card spell them.
    pub const NAMES: [&'static str; 3] = ["JSONRPC", "GRPC", "HTTP+JSON"];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::JsonRpc => "JSONRPC",
            Self::Grpc => "GRPC",
            Self::HttpJson => "HTTP+JSON",
        }
    }

    /// The binding spelled exactly `name` (the card's spelling: case
    /// matters to A2A clients).
    pub fn from_name(name: &str) -> Option<Self> {
        match name {
            "JSONRPC" => Some(Self::JsonRpc),
            "GRPC" => Some(Self::Grpc),
            "HTTP+JSON" => Some(Self::HttpJson),
            _ => None,
        }
    }
}

impl fmt::Display for Binding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for Binding {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for Binding {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let name = String::deserialize(d)?;
        Self::from_name(&name).ok_or_else(|| {
            serde::de::Error::custom(format!(
                "{name:?} is not one of: {}",
                Self::NAMES.join(" | ")
            ))
        })
    }
}

/// Why a text is not an endpoint URL.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UrlError {
    #[error("is {0} bytes long; at most {MAX_URL_LEN} are allowed")]
    TooLong(usize),
    #[error(
        "{0:?} must start with https:// (http:// only for localhost, 127.0.0.1 or [::1], for development)"
    )]
    Scheme(String),
    #[error("{0:?} names no host")]
    NoHost(String),
    #[error("{0:?} carries a user name or password; the card is public")]
    UserInfo(String),
    #[error("{0:?} has a host that is not a DNS name or an IP address")]
    BadHost(String),
    #[error("{0:?} has a port that is not a number from 1 to 65535")]
    BadPort(String),
    #[error("{0:?} has a fragment (#...), which an endpoint does not take")]
    Fragment(String),
    #[error("{0:?} holds a space, a control or a non-ASCII character; percent-encode it")]
    BadCharacter(String),
}

/// An absolute URL an A2A client can reach: `https://host[:port][/path][?query]`,
/// or `http://` on a loopback host for development. No user info, no
/// fragment, ASCII only (a non-ASCII host is written in punycode, a path
/// percent-encoded).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct EndpointUrl(String);

impl EndpointUrl {
    pub fn parse(text: &str) -> Result<Self, UrlError> {
        let fail = |f: fn(String) -> UrlError| f(text.to_owned());
        if text.len() > MAX_URL_LEN {
            return Err(UrlError::TooLong(text.len()));
        }
        if !text.bytes().all(|b| b.is_ascii_graphic()) {
            return Err(fail(UrlError::BadCharacter));
        }
        let (secure, rest) = if let Some(rest) = strip_prefix_ignore_case(text, "https://") {
            (true, rest)
        } else if let Some(rest) = strip_prefix_ignore_case(text, "http://") {
            (false, rest)
        } else {
            return Err(fail(UrlError::Scheme));
        };
        if text.contains('#') {
            return Err(fail(UrlError::Fragment));
        }
        let end = rest.find(['/', '?']).unwrap_or(rest.len());
        let authority = &rest[..end];
        if authority.contains('@') {
            return Err(fail(UrlError::UserInfo));
        }
        let (host, port) = split_host_port(authority).ok_or_else(|| fail(UrlError::BadHost))?;
        if host.is_empty() {
            return Err(fail(UrlError::NoHost));
        }
        if let Some(port) = port {
            let valid = !port.is_empty()
                && port.len() <= 5
                && port.bytes().all(|b| b.is_ascii_digit())
                && port.parse::<u32>().is_ok_and(|p| (1..=65_535).contains(&p));
            if !valid {
                return Err(fail(UrlError::BadPort));
            }
        }
        if !valid_host(host) {
            return Err(fail(UrlError::BadHost));
        }
        if !secure && !is_loopback(host) {
            return Err(fail(UrlError::Scheme));
        }
        Ok(Self(text.to_owned()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for EndpointUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl FromStr for EndpointUrl {
    type Err = UrlError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::parse(s)
    }
}

impl Serialize for EndpointUrl {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.0)
    }
}

impl<'de> Deserialize<'de> for EndpointUrl {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        Self::parse(&text).map_err(serde::de::Error::custom)
    }
}

fn strip_prefix_ignore_case<'a>(text: &'a str, prefix: &str) -> Option<&'a str> {
    let head = text.get(..prefix.len())?;
    head.eq_ignore_ascii_case(prefix)
        .then(|| &text[prefix.len()..])
}

/// `host` and the text after its `:`; `None` for a malformed IPv6 literal.
fn split_host_port(authority: &str) -> Option<(&str, Option<&str>)> {
    if let Some(inner) = authority.strip_prefix('[') {
        let close = inner.find(']')?;
        let after = &inner[close + 1..];
        let port = match after {
            "" => None,
            _ => Some(after.strip_prefix(':')?),
        };
        return Some((&authority[..close + 2], port));
    }
    Some(match authority.split_once(':') {
        Some((host, port)) => (host, Some(port)),
        None => (authority, None),
    })
}

fn valid_host(host: &str) -> bool {
    if let Some(inner) = host.strip_prefix('[').and_then(|h| h.strip_suffix(']')) {
        return inner.parse::<std::net::Ipv6Addr>().is_ok();
    }
    if host.parse::<std::net::Ipv4Addr>().is_ok() {
        return true;
    }
    let name = host.strip_suffix('.').unwrap_or(host);
    // All-numeric labels would be an IPv4 address written wrongly.
    let dns = !name.is_empty()
        && name.len() <= 253
        && name.split('.').all(|label| {
            !label.is_empty()
                && label.len() <= 63
                && !label.starts_with('-')
                && !label.ends_with('-')
                && label
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-')
        });
    dns && !name
        .rsplit('.')
        .next()
        .is_some_and(|tld| tld.bytes().all(|b| b.is_ascii_digit()))
}

fn is_loopback(host: &str) -> bool {
    host.eq_ignore_ascii_case("localhost") || host == "127.0.0.1" || host == "[::1]"
}

/// The A2A interface an agent declares: agent.yaml's
/// `protocols: [{name: a2a, endpoint: {url, binding}}]`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Endpoint {
    pub url: EndpointUrl,
    pub binding: Binding,
    /// `x-` keys, kept as written.
    #[serde(flatten, default)]
    pub extensions: BTreeMap<String, Value>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoint_urls_are_https_or_loopback_http() {
        for ok in [
            "https://agents.example.com/a2a/v1",
            "HTTPS://agents.example.com",
            "https://agents.example.com:8443/a2a?tenant=x",
            "https://192.0.2.1/a2a",
            "https://[2001:db8::1]:443/a2a",
            "http://localhost:9999/a2a",
            "http://127.0.0.1/a2a",
            "http://[::1]:80/",
        ] {
            EndpointUrl::parse(ok).unwrap_or_else(|e| panic!("{ok}: {e}"));
        }
        let refused = |text: &str, expected: fn(String) -> UrlError| {
            assert_eq!(
                EndpointUrl::parse(text),
                Err(expected(text.to_owned())),
                "{text}"
            );
        };
        refused("http://agents.example.com/a2a", UrlError::Scheme);
        refused("grpc.example.com:443", UrlError::Scheme);
        refused("wss://agents.example.com", UrlError::Scheme);
        refused("https://", UrlError::NoHost);
        refused("https://user:pw@agents.example.com", UrlError::UserInfo);
        refused("https://agents..example.com", UrlError::BadHost);
        refused("https://127.0.0.1.5/a2a", UrlError::BadHost);
        refused("https://agents.example.com:0", UrlError::BadPort);
        refused("https://agents.example.com:99999", UrlError::BadPort);
        refused("https://[::1/a2a", UrlError::BadHost);
        refused("https://agents.example.com/#x", UrlError::Fragment);
        refused("https://agents.example.com/a b", UrlError::BadCharacter);
        refused("https://agénts.example.com", UrlError::BadCharacter);
        let long = format!("https://a.example/{}", "x".repeat(MAX_URL_LEN));
        assert!(matches!(
            EndpointUrl::parse(&long),
            Err(UrlError::TooLong(_))
        ));
    }
}
