//! Account and package-pattern names, passwords as accepted, and the
//! scopes a token may carry: validated once, here, below every layer that
//! stores or checks them.

use std::{fmt, str::FromStr};

use agentlang_core::PackageName;
use serde::{Deserialize, Deserializer, Serialize};
use utoipa::ToSchema;

/// Lowercase with `-` as `_`: the form account and package uniqueness is
/// judged on.
pub fn normalize(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c == '-' {
                '_'
            } else {
                c.to_ascii_lowercase()
            }
        })
        .collect()
}

/// An account name: 1 to 39 ASCII letters, digits, `-` or `_`, starting with
/// a letter. Unique in normalized form (case and `-`/`_` folded).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ToSchema)]
#[schema(value_type = String, example = "alice")]
pub struct Username(String);

pub const MAX_USERNAME_LEN: usize = 39;

impl Username {
    pub fn parse(s: &str) -> Result<Self, String> {
        let first = s.chars().next().ok_or("must not be empty")?;
        if s.len() > MAX_USERNAME_LEN {
            return Err(format!("must be at most {MAX_USERNAME_LEN} characters"));
        }
        if !first.is_ascii_alphabetic() {
            return Err("must start with an ASCII letter".to_owned());
        }
        if let Some(bad) = s
            .chars()
            .find(|c| !(c.is_ascii_alphanumeric() || *c == '-' || *c == '_'))
        {
            return Err(format!(
                "may hold only ASCII letters, digits, '-' and '_', found {bad:?}"
            ));
        }
        Ok(Self(s.to_owned()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl<'de> Deserialize<'de> for Username {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        Self::parse(&s).map_err(serde::de::Error::custom)
    }
}

impl fmt::Display for Username {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// A password as accepted at registration: 8 to 1024 bytes. Its `Debug`
/// never shows it.
#[derive(Clone)]
pub struct Password(String);

pub const MIN_PASSWORD_LEN: usize = 8;
pub const MAX_PASSWORD_LEN: usize = 1024;

impl Password {
    pub fn parse(s: &str) -> Result<Self, String> {
        if s.len() < MIN_PASSWORD_LEN {
            return Err(format!("must be at least {MIN_PASSWORD_LEN} bytes"));
        }
        if s.len() > MAX_PASSWORD_LEN {
            return Err(format!("must be at most {MAX_PASSWORD_LEN} bytes"));
        }
        Ok(Self(s.to_owned()))
    }
}

impl Password {
    /// The password itself, for hashing.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Password {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Password(..)")
    }
}

/// What a token may do beyond reading.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, ToSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum Scope {
    /// Publish new versions of packages.
    Publish,
    /// Yank and unyank versions.
    Yank,
    /// Register and revoke signing keys.
    Keys,
    /// Invite and remove package owners, accept invitations.
    Owners,
    /// List and revoke the account's tokens.
    Tokens,
    /// Edit the registry's catalogs (models); held only by admins.
    Admin,
}

impl Scope {
    pub const ALL: [Scope; 6] = [
        Scope::Publish,
        Scope::Yank,
        Scope::Keys,
        Scope::Owners,
        Scope::Tokens,
        Scope::Admin,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Scope::Publish => "publish",
            Scope::Yank => "yank",
            Scope::Keys => "keys",
            Scope::Owners => "owners",
            Scope::Tokens => "tokens",
            Scope::Admin => "admin",
        }
    }

    /// What the scope allows, in words for the catalog's token form.
    pub fn description(self) -> &'static str {
        match self {
            Scope::Publish => "publish new versions",
            Scope::Yank => "yank and unyank versions",
            Scope::Keys => "register and revoke signing keys",
            Scope::Owners => "invite and remove package owners",
            Scope::Tokens => "list and revoke this account's tokens",
            Scope::Admin => "edit the registry's model catalog (admins only)",
        }
    }
}

impl FromStr for Scope {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Scope::ALL
            .into_iter()
            .find(|scope| scope.as_str() == s)
            .ok_or_else(|| {
                format!(
                    "{s:?} is not a scope (expected publish, yank, keys, owners, tokens or admin)"
                )
            })
    }
}

/// A package-name pattern restricting a token: a name, optionally with `*`
/// wildcards (`acme-*`). Matched against normalized names, so `Acme-*`
/// matches `acme_search`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ToSchema)]
#[schema(value_type = String, example = "acme-*")]
pub struct NamePattern(String);

impl NamePattern {
    pub fn parse(s: &str) -> Result<Self, String> {
        if s.is_empty() || s.len() > agentlang_core::names::MAX_NAME_LEN {
            return Err(format!(
                "must be 1 to {} characters",
                agentlang_core::names::MAX_NAME_LEN
            ));
        }
        if let Some(bad) = s
            .chars()
            .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '*')))
        {
            return Err(format!(
                "may hold only ASCII letters, digits, '-', '_' and '*', found {bad:?}"
            ));
        }
        Ok(Self(s.to_owned()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    pub fn matches(&self, name: &PackageName) -> bool {
        glob_match(normalize(&self.0).as_bytes(), name.normalized().as_bytes())
    }
}

impl<'de> Deserialize<'de> for NamePattern {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        Self::parse(&s).map_err(serde::de::Error::custom)
    }
}

/// `*` matches any run of bytes; everything else matches itself.
fn glob_match(pattern: &[u8], text: &[u8]) -> bool {
    // Iterative matcher with one backtrack point: linear enough for names of
    // at most 64 bytes, and no recursion to blow up on `a*a*a*...`.
    let (mut p, mut t) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while t < text.len() {
        if p < pattern.len() && pattern[p] == b'*' {
            star = Some((p, t));
            p += 1;
        } else if p < pattern.len() && pattern[p] == text[t] {
            p += 1;
            t += 1;
        } else if let Some((sp, st)) = star {
            p = sp + 1;
            t = st + 1;
            star = Some((sp, st + 1));
        } else {
            return false;
        }
    }
    pattern[p..].iter().all(|&b| b == b'*')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn usernames_and_passwords_are_checked() {
        assert!(Username::parse("alice-1").is_ok());
        assert_eq!(Username::parse("").unwrap_err(), "must not be empty");
        assert!(Username::parse("1alice").is_err());
        assert!(Username::parse("al ice").is_err());
        assert!(Username::parse(&"a".repeat(40)).is_err());
        assert!(Password::parse("short").is_err());
        assert!(Password::parse("long enough").is_ok());
        assert_eq!(
            format!("{:?}", Password::parse("secret123").unwrap()),
            "Password(..)"
        );
    }

    #[test]
    fn patterns_match_normalized_names() {
        let name = |s: &str| PackageName::new(s).unwrap();
        let p = NamePattern::parse("Acme-*").unwrap();
        assert!(p.matches(&name("acme_search")));
        assert!(p.matches(&name("ACME-")));
        assert!(!p.matches(&name("other")));
        let exact = NamePattern::parse("web_search").unwrap();
        assert!(exact.matches(&name("Web-Search")));
        assert!(!exact.matches(&name("web_search2")));
        assert!(NamePattern::parse("a*b*c").unwrap().matches(&name("aXbYc")));
        assert!(!NamePattern::parse("a*b*c").unwrap().matches(&name("aXbY")));
        assert!(NamePattern::parse("a/b").is_err());
        assert!(serde_json::from_str::<NamePattern>("\"../x\"").is_err());
    }
}
