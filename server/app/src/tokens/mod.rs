//! API tokens: the one place a token is minted, authenticated, listed and
//! revoked, for the API and the catalog alike.
//!
//! A token is an HS256 JWT whose claims carry the stored token's id (`jti`,
//! public) and a random secret (`sec`) of which the database keeps only the
//! SHA-256: the signing key alone mints nothing, and neither does a read of
//! the database.
//!
//! What a request's token buys ([`admit`]): a live token spends its
//! account's budgets, shared by all of the account's tokens, so minting
//! tokens buys no requests. A token that no longer authenticates (revoked,
//! unknown) buys nothing: the request spends its address's anonymous
//! budget, and the token is remembered as dead so its next use costs no
//! read of the database.

use std::collections::BTreeSet;

use agentlang_core::{PackageName, Username};

use crate::{
    FieldError, Registry, ServiceError,
    accounts::Actor,
    audit,
    rate_limits::{Bucket, ClientAddr, Cost, account_budget},
    secrets::{constant_time_eq, random_hex, secret_hash},
};
use store::{Db, now, tokens::NewToken};

mod jwt;

pub use jwt::{AUDIENCE, Claims, TokenError, TokenKeys};
pub use store::{
    names::{NamePattern, Scope},
    tokens::TokenRecord,
};

pub const DEFAULT_TOKEN_DAYS: i64 = 90;
pub const MAX_TOKEN_DAYS: i64 = 365;
pub const MAX_TOKEN_NAME_LEN: usize = 64;
/// Scopes a request may list (repeats included); there are six.
pub const MAX_LISTED_SCOPES: usize = 16;
/// Package patterns one token may carry.
pub const MAX_TOKEN_PATTERNS: usize = 32;
const SECONDS_PER_DAY: i64 = 86_400;

/// A token as asked for, checked: the same rules whether the API or the
/// catalog's form asks.
#[derive(Debug, Clone)]
pub struct TokenSpec {
    pub name: String,
    pub scopes: Vec<Scope>,
    pub expires_in_days: i64,
    pub packages: Option<Vec<NamePattern>>,
    /// Second factor: the minting gave a TOTP code (set by the caller
    /// after `two_factor::step_up`; `parse` leaves it false).
    pub second_factor: bool,
}

impl TokenSpec {
    /// Every problem as a field error (`scopes[2]`, `packages[0]`, ...).
    /// `scopes: None` is an error (an empty list makes a read-only token);
    /// `expires_in_days: None` is the default.
    pub fn parse(
        name: &str,
        scopes: Option<&[String]>,
        expires_in_days: Option<i64>,
        packages: Option<&[String]>,
    ) -> Result<Self, Vec<FieldError>> {
        // Counted before each item is checked: a list of thousands costs one
        // comparison, not thousands of field errors.
        if scopes.is_some_and(|s| s.len() > MAX_LISTED_SCOPES) {
            return Err(vec![FieldError::new(
                "scopes",
                format!("at most {MAX_LISTED_SCOPES} entries are allowed"),
            )]);
        }
        if packages.is_some_and(|p| p.len() > MAX_TOKEN_PATTERNS) {
            return Err(vec![FieldError::new(
                "packages",
                format!("at most {MAX_TOKEN_PATTERNS} entries are allowed"),
            )]);
        }
        let mut errors = Vec::new();
        let name = name.trim();
        if name.is_empty() {
            errors.push(FieldError::new("name", "is required"));
        } else if name.chars().count() > MAX_TOKEN_NAME_LEN {
            errors.push(FieldError::new(
                "name",
                format!("must be at most {MAX_TOKEN_NAME_LEN} characters"),
            ));
        } else if name.chars().any(char::is_control) {
            errors.push(FieldError::new(
                "name",
                "must not contain control characters",
            ));
        }
        let mut parsed = BTreeSet::new();
        match scopes {
            None => errors.push(FieldError::new(
                "scopes",
                "is required (an empty list makes a read-only token)",
            )),
            Some(raw) => {
                for (i, s) in raw.iter().enumerate() {
                    match s.parse::<Scope>() {
                        Ok(scope) => {
                            parsed.insert(scope);
                        }
                        Err(m) => errors.push(FieldError::new(format!("scopes[{i}]"), m)),
                    }
                }
            }
        }
        let expires_in_days = expires_in_days.unwrap_or(DEFAULT_TOKEN_DAYS);
        if !(1..=MAX_TOKEN_DAYS).contains(&expires_in_days) {
            errors.push(FieldError::new(
                "expires_in_days",
                format!("must be between 1 and {MAX_TOKEN_DAYS}"),
            ));
        }
        let packages = match packages {
            None => None,
            Some([]) => {
                errors.push(FieldError::new(
                    "packages",
                    "must name at least one pattern when present",
                ));
                None
            }
            Some(raw) => {
                let mut patterns = Vec::new();
                for (i, p) in raw.iter().enumerate() {
                    match NamePattern::parse(p) {
                        Ok(pattern) => patterns.push(pattern),
                        Err(m) => errors.push(FieldError::new(format!("packages[{i}]"), m)),
                    }
                }
                Some(patterns)
            }
        };
        if !errors.is_empty() {
            return Err(errors);
        }
        Ok(Self {
            name: name.to_owned(),
            scopes: parsed.into_iter().collect(),
            expires_in_days,
            packages,
            second_factor: false,
        })
    }
}

/// A new token: its bearer string, shown once, and its stored record.
#[derive(Debug)]
pub struct CreatedToken {
    pub token: String,
    pub record: TokenRecord,
}

/// Second factor: whether a token minted with a password for `account_id`
/// carries one. An account with a second factor must give a code (`otp`,
/// checked by `two_factor::step_up`); one without gives none.
pub async fn second_factor_for_minting(
    registry: &Registry,
    account_id: i64,
    otp: Option<&str>,
) -> Result<bool, ServiceError> {
    crate::two_factor::step_up(registry, account_id, None, otp).await?;
    crate::two_factor::is_enrolled(registry, account_id).await
}

/// Mints a token for the account. Only an admin's token may carry the
/// `admin` scope.
pub async fn create_token(
    registry: &Registry,
    owner: Actor<'_>,
    spec: TokenSpec,
) -> Result<CreatedToken, ServiceError> {
    if spec.scopes.contains(&Scope::Admin) && !owner.is_admin {
        return Err(ServiceError::Validation(vec![FieldError::new(
            "scopes",
            "only an admin's token may carry the admin scope",
        )]));
    }
    let jti = uuid::Uuid::now_v7().to_string();
    let secret = random_hex().map_err(|e| ServiceError::internal(anyhow::anyhow!("{e}")))?;
    let created_at = now();
    let expires_at = created_at + spec.expires_in_days * SECONDS_PER_DAY;
    registry
        .db
        .insert_token(&NewToken {
            jti: &jti,
            secret_hash: &secret_hash(&secret),
            account_id: owner.account_id,
            name: &spec.name,
            scopes: &spec.scopes,
            packages: spec.packages.as_deref(),
            created_at,
            expires_at,
            second_factor: spec.second_factor,
        })
        .await?;
    let token = registry
        .tokens
        .issue(owner.account_id, &jti, &secret, created_at, expires_at)
        .map_err(ServiceError::internal)?;
    let scopes: Vec<&str> = spec.scopes.iter().map(|s| s.as_str()).collect();
    audit::record(
        registry,
        owner.account_id,
        "token_created",
        &format!("{} ({}) [{}]", spec.name, jti, scopes.join(", ")),
    )
    .await;
    tracing::info!(username = %owner.username, token_id = %jti, "token created");
    Ok(CreatedToken {
        token,
        record: TokenRecord {
            jti,
            account_id: owner.account_id,
            name: spec.name,
            scopes: store::Json(spec.scopes),
            packages: spec.packages.map(store::Json),
            created_at,
            expires_at,
            revoked_at: None,
            last_used_at: None,
        },
    })
}

/// The account's tokens, newest first, revoked ones included.
pub async fn list_tokens(
    registry: &Registry,
    account_id: i64,
) -> Result<Vec<TokenRecord>, ServiceError> {
    Ok(registry.db.list_tokens(account_id).await?)
}

/// Revokes one of the account's tokens (revoking twice is not an error);
/// 404 when the account has no such token.
pub async fn revoke_token(
    registry: &Registry,
    account_id: i64,
    username: &Username,
    token_id: &str,
) -> Result<(), ServiceError> {
    if !registry.db.revoke_token(account_id, token_id).await? {
        return Err(ServiceError::NotFound(format!("token {token_id}")));
    }
    audit::record(registry, account_id, "token_revoked", token_id).await;
    tracing::info!(%username, %token_id, "token revoked");
    Ok(())
}

/// The caller of a request that carried a valid, unrevoked token.
#[derive(Debug, Clone)]
pub struct Authenticated {
    pub account_id: i64,
    pub username: Username,
    pub is_admin: bool,
    pub token_id: String,
    pub scopes: Vec<Scope>,
    /// `None`: the token may act on every package the account owns.
    pub patterns: Option<Vec<NamePattern>>,
    /// Trusted publishing: the CI identity a trusted-publishing token was
    /// minted for; `None` for an ordinary token.
    /// Boxed: most tokens are ordinary, and `Bearer` carries this by value.
    pub trusted: Option<Box<crate::oidc::TrustedIdentity>>,
    /// Second factor: the token was minted with a TOTP code.
    pub second_factor: bool,
}

impl Authenticated {
    /// The account acting through this token: as an admin only when the
    /// account is one and the token carries the `admin` scope, so an
    /// admin's token minted for other work (`owners`, say) has no more
    /// power than anyone's.
    pub fn actor(&self) -> Actor<'_> {
        Actor {
            account_id: self.account_id,
            username: &self.username,
            is_admin: self.is_admin && self.scopes.contains(&Scope::Admin),
        }
    }

    /// The key of the account's budgets, which every token of the account
    /// spends.
    pub fn budget_key(&self) -> String {
        account_budget(self.account_id)
    }

    /// 403 `missing-scope` unless the token carries `scope`.
    pub fn require(&self, scope: Scope) -> Result<(), ServiceError> {
        if self.scopes.contains(&scope) {
            Ok(())
        } else {
            Err(ServiceError::MissingScope(scope))
        }
    }

    /// 403 `token-not-for-package` unless the token's patterns admit `name`.
    pub fn require_package(&self, name: &PackageName) -> Result<(), ServiceError> {
        match &self.patterns {
            Some(patterns) if !patterns.iter().any(|p| p.matches(name)) => {
                Err(ServiceError::TokenNotForPackage(name.to_string()))
            }
            _ => Ok(()),
        }
    }

    /// 403 unless an admin's token with the `admin` scope.
    pub fn require_admin(&self) -> Result<(), ServiceError> {
        self.require(Scope::Admin)?;
        if self.is_admin {
            Ok(())
        } else {
            Err(ServiceError::AdminRequired)
        }
    }
}

/// The token of an `Authorization: Bearer <token>` header value, if that
/// is what it holds.
pub fn bearer_token(header: Option<&str>) -> Option<&str> {
    header
        .and_then(|v| {
            v.strip_prefix("Bearer ")
                .or_else(|| v.strip_prefix("bearer "))
        })
        .map(str::trim)
        .filter(|t| !t.is_empty())
}

/// Checks a bearer token: its signature (unless the caller already did:
/// `verified`), its stored row, its secret, revocation and expiry.
pub async fn authenticate(
    registry: &Registry,
    token: &str,
    verified: Option<Claims>,
) -> Result<Authenticated, ServiceError> {
    let claims = match verified {
        Some(claims) => claims,
        None => registry
            .tokens
            .verify(token)
            .map_err(|e| ServiceError::Unauthenticated(e.to_string()))?,
    };
    let unknown = || ServiceError::Unauthenticated("the token is unknown".to_owned());
    let grant = registry
        .db
        .find_token_grant(&claims.jti)
        .await?
        .filter(|g| g.account_id.to_string() == claims.sub)
        .ok_or_else(unknown)?;
    // The secret, not the signature or the id, is what authenticates.
    let secret_matches = grant
        .secret_hash
        .as_deref()
        .is_some_and(|stored| constant_time_eq(stored, &secret_hash(&claims.sec)));
    if !secret_matches {
        return Err(unknown());
    }
    if grant.revoked_at.is_some() {
        return Err(ServiceError::Unauthenticated(
            "the token has been revoked".to_owned(),
        ));
    }
    if grant.expires_at <= now() {
        return Err(ServiceError::Unauthenticated(
            "the token has expired".to_owned(),
        ));
    }
    if Db::token_touch_due(grant.last_used_at) {
        registry.db.touch_token(&grant.jti).await?;
    }
    Ok(Authenticated {
        account_id: grant.account_id,
        username: grant.username,
        is_admin: grant.is_admin,
        token_id: grant.jti,
        scopes: grant.scopes.0,
        patterns: grant.packages.map(|p| p.0),
        trusted: grant
            .oidc_claims
            .as_deref()
            .map(serde_json::from_str)
            .transpose()
            .map_err(ServiceError::internal)?
            .map(Box::new),
        second_factor: grant.second_factor,
    })
}

/// What a request's `Authorization` header makes its caller, found before
/// the request spends a budget.
#[derive(Debug, Clone)]
pub enum Bearer {
    /// No bearer token, or one this registry did not sign (garbage, forged,
    /// another registry's, past its `exp`): its address's budget.
    None,
    /// A live token: its account's budget. Routes take the caller from here
    /// instead of reading the token again.
    Live(Authenticated),
    /// A token this registry signed that no longer authenticates (revoked,
    /// or unknown), with why: its address's budget, and 401 where a caller
    /// is needed.
    Dead(String),
    /// Signed, but its row could not be read (the database is away): a
    /// route that needs the caller reads it again and says why it cannot.
    Unchecked,
}

/// Finds who a request is from by its `Authorization` header and spends
/// the budgets its `cost` asks for: the account's for a live token, the
/// client address's anonymous ones otherwise. A token whose signature
/// verifies spends its account's budget before its row is read, so a flood
/// of requests with a token is refused without a read per request; one
/// found dead is remembered ([`TokenKeys::bury`]) and costs no read again.
/// Returns the caller with the refusal, if any.
pub async fn admit(
    registry: &Registry,
    client: &ClientAddr,
    authorization: Option<&str>,
    cost: Cost,
) -> (Bearer, Result<(), ServiceError>) {
    let limits = &registry.rate_limits;
    let anonymous = |bearer: Bearer| {
        let spent = limits.spend(Bucket::Anonymous, client.as_str(), cost);
        (bearer, spent)
    };
    if cost == Cost::Free {
        return (Bearer::None, Ok(()));
    }
    let Some(token) = bearer_token(authorization) else {
        return anonymous(Bearer::None);
    };
    let Ok(claims) = registry.tokens.verify(token) else {
        return anonymous(Bearer::None);
    };
    if let Some(reason) = registry.tokens.buried(&claims) {
        return anonymous(Bearer::Dead(reason));
    }
    // The subject is this registry's own signed claim: the account.
    if let Err(refused) = limits.spend(Bucket::Authenticated, &account_budget(&claims.sub), cost) {
        return (Bearer::Unchecked, Err(refused));
    }
    match authenticate(registry, token, Some(claims.clone())).await {
        Ok(caller) => (Bearer::Live(caller), Ok(())),
        Err(ServiceError::Unauthenticated(reason)) => {
            registry.tokens.bury(&claims, &reason);
            anonymous(Bearer::Dead(reason))
        }
        Err(_) => (Bearer::Unchecked, Ok(())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn token_round_trips_at_start_up() {
        let keys = TokenKeys::new(&[7u8; 32], "http://127.0.0.1:8080");
        keys.self_test().unwrap();
        let now = now();
        let token = keys.issue(42, "jti-1", "s1", now, now + 3600).unwrap();
        let claims = keys.verify(&token).unwrap();
        assert_eq!(claims.sub, "42");
        assert_eq!(claims.iss, "http://127.0.0.1:8080");
        assert_eq!(claims.aud, AUDIENCE);
    }

    #[test]
    fn foreign_tokens_are_refused_with_their_reason() {
        let keys = TokenKeys::new(&[7u8; 32], "http://a");
        let now = now();
        let other_secret = TokenKeys::new(&[8u8; 32], "http://a");
        let other_issuer = TokenKeys::new(&[7u8; 32], "http://b");
        let forged = other_secret.issue(1, "j", "s", now, now + 60).unwrap();
        assert!(matches!(
            keys.verify(&forged),
            Err(TokenError::BadSignature)
        ));
        let foreign = other_issuer.issue(1, "j", "s", now, now + 60).unwrap();
        assert!(matches!(
            keys.verify(&foreign),
            Err(TokenError::WrongIssuer)
        ));
        let expired = keys.issue(1, "j", "s", now - 7200, now - 3600).unwrap();
        assert!(matches!(keys.verify(&expired), Err(TokenError::Expired)));
        assert!(matches!(
            keys.verify("not.a.jwt"),
            Err(TokenError::Malformed)
        ));
    }
}
