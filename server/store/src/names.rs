//! What a token may do: its scopes, and the package-name patterns that
//! restrict it. Validated once, here, below every layer that stores or
//! checks them.

use std::str::FromStr;

use agentlang_core::{PackageName, names::normalize};
use serde::{Deserialize, Deserializer, Serialize};

/// What a token may do beyond reading.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
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
    /// Register prompt recipients, grant and revoke sealed agents' prompt
    /// keys, fetch the keys granted to the account.
    Grants,
    /// Edit the registry's catalogs (models); held only by admins.
    Admin,
}

impl Scope {
    pub const ALL: [Scope; 7] = [
        Scope::Publish,
        Scope::Yank,
        Scope::Keys,
        Scope::Owners,
        Scope::Tokens,
        Scope::Grants,
        Scope::Admin,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Scope::Publish => "publish",
            Scope::Yank => "yank",
            Scope::Keys => "keys",
            Scope::Owners => "owners",
            Scope::Tokens => "tokens",
            Scope::Grants => "grants",
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
            Scope::Grants => "grant sealed agents' prompt keys and fetch those granted to you",
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
                    "{s:?} is not a scope (expected publish, yank, keys, owners, tokens, grants or admin)"
                )
            })
    }
}

/// A package-name pattern restricting a token: a name, optionally with `*`
/// wildcards (`acme-*`). Matched against normalized names, so `Acme-*`
/// matches `acme_search`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[cfg_attr(feature = "openapi", schema(value_type = String, example = "acme-*"))]
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
