//! Authentication: account credentials, API tokens (HS256 JWTs whose `jti`
//! is stored so they can be listed and revoked) and the [`Authenticated`]
//! extractor with its scope and package checks.

use std::{
    fmt, future::Future, io::Write, os::unix::fs::OpenOptionsExt, path::Path, pin::Pin,
    str::FromStr,
};

use actix_web::{FromRequest, HttpMessage, HttpRequest, dev::Payload, http::header, web};
use agentlang_core::PackageName;
use argon2::{
    Algorithm as Argon2Algorithm, Argon2, Block, Params, PasswordHash, Version as Argon2Version,
    password_hash::{Output, ParamsString, SaltString},
};
use jsonwebtoken::{Algorithm, DecodingKey, EncodingKey, Header, Validation, errors::ErrorKind};
use serde::{Deserialize, Deserializer, Serialize};
use utoipa::ToSchema;

use crate::{error::ApiError, rate_limit::VerifiedClaims, state::AppState};

/// The `aud` of every token this registry issues and accepts.
pub const AUDIENCE: &str = "agentlang-registry";

// ---------------------------------------------------------------------------
// Validated inputs

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
    /// Add and remove package owners.
    Owners,
}

impl Scope {
    pub const ALL: [Scope; 4] = [Scope::Publish, Scope::Yank, Scope::Keys, Scope::Owners];

    pub fn as_str(self) -> &'static str {
        match self {
            Scope::Publish => "publish",
            Scope::Yank => "yank",
            Scope::Keys => "keys",
            Scope::Owners => "owners",
        }
    }
}

impl FromStr for Scope {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Scope::ALL
            .into_iter()
            .find(|scope| scope.as_str() == s)
            .ok_or_else(|| format!("{s:?} is not a scope (expected publish, yank, keys or owners)"))
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
        glob_match(
            crate::db::normalize(&self.0).as_bytes(),
            name.normalized().as_bytes(),
        )
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

// ---------------------------------------------------------------------------
// Passwords

#[derive(Debug, thiserror::Error)]
pub enum PasswordError {
    #[error("password hashing failed: {0}")]
    Hash(String),
    #[error("no randomness for a salt: {0}")]
    Random(String),
}

/// Hashes with argon2id and a fresh salt. CPU-heavy: call it off the async
/// workers (the password threads of `service::credentials`).
pub fn hash_password(password: &Password) -> Result<String, PasswordError> {
    let hash_err = |e: &dyn std::fmt::Display| PasswordError::Hash(e.to_string());
    let mut salt = [0u8; 16];
    getrandom::fill(&mut salt).map_err(|e| PasswordError::Random(e.to_string()))?;
    let params = Params::default();
    let mut out = [0u8; Params::DEFAULT_OUTPUT_LEN];
    let argon2 = Argon2::new(
        Argon2Algorithm::Argon2id,
        Argon2Version::V0x13,
        params.clone(),
    );
    argon2_with_kept_memory(&argon2, password.0.as_bytes(), &salt, &mut out)
        .map_err(|e| hash_err(&e))?;
    let salt = SaltString::encode_b64(&salt).map_err(|e| hash_err(&e))?;
    let hash = PasswordHash {
        algorithm: Argon2Algorithm::Argon2id.ident(),
        version: Some(Argon2Version::V0x13.into()),
        params: ParamsString::try_from(&params).map_err(|e| hash_err(&e))?,
        salt: Some(salt.as_salt()),
        hash: Some(Output::new(&out).map_err(|e| hash_err(&e))?),
    };
    Ok(hash.to_string())
}

/// Checks a password against a stored hash (any argon2 PHC string).
/// CPU-heavy, like hashing.
pub fn verify_password(password: &str, stored_hash: &str) -> bool {
    let Ok(hash) = PasswordHash::new(stored_hash) else {
        return false;
    };
    let (Ok(algorithm), Ok(params), Some(salt), Some(expected)) = (
        Argon2Algorithm::try_from(hash.algorithm),
        Params::try_from(&hash),
        hash.salt,
        hash.hash,
    ) else {
        return false;
    };
    let Ok(version) = hash
        .version
        .map_or(Ok(Argon2Version::default()), Argon2Version::try_from)
    else {
        return false;
    };
    let mut salt_bytes = [0u8; 64];
    let Ok(salt) = salt.decode_b64(&mut salt_bytes) else {
        return false;
    };
    let mut out = vec![0u8; expected.len()];
    let argon2 = Argon2::new(algorithm, version, params);
    argon2_with_kept_memory(&argon2, password.as_bytes(), salt, &mut out).is_ok()
        // `Output` compares in constant time.
        && Output::new(&out).is_ok_and(|computed| computed == expected)
}

thread_local! {
    /// The memory of the last argon2 run on this thread, reused by the next.
    /// A fresh 19 MiB per run is what glibc's allocator then keeps (its
    /// mmap threshold rises to the size of the first block freed): a login
    /// spray grew the registry by 200 MiB. Reused, it is 19 MiB per
    /// password thread, once.
    static ARGON2_MEMORY: std::cell::RefCell<Vec<Block>> = const { std::cell::RefCell::new(Vec::new()) };
}

fn argon2_with_kept_memory(
    argon2: &Argon2<'_>,
    password: &[u8],
    salt: &[u8],
    out: &mut [u8],
) -> argon2::Result<()> {
    let blocks = argon2.params().block_count();
    ARGON2_MEMORY.with_borrow_mut(|memory| {
        if memory.len() < blocks {
            memory.resize(blocks, Block::default());
        }
        argon2.hash_password_into_with_memory(password, salt, out, &mut memory[..blocks])
    })
}

/// A valid argon2id hash of a password nobody knows: verifying against it
/// when the username does not exist keeps the response time the same, so
/// timing does not reveal which usernames exist.
pub fn decoy_hash() -> &'static str {
    static DECOY: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    DECOY.get_or_init(|| {
        let password = Password(uuid::Uuid::new_v4().to_string());
        hash_password(&password).unwrap_or_default()
    })
}

// ---------------------------------------------------------------------------
// Tokens

/// The claims of a registry token.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Claims {
    /// The account id.
    pub sub: String,
    pub iss: String,
    pub aud: String,
    pub iat: i64,
    pub exp: i64,
    /// The stored token's id.
    pub jti: String,
}

#[derive(Debug, thiserror::Error)]
pub enum TokenError {
    #[error("the token has expired")]
    Expired,
    #[error("the token is not for this registry")]
    WrongAudience,
    #[error("the token was issued by another registry")]
    WrongIssuer,
    #[error("the token's signature does not verify")]
    BadSignature,
    #[error("the token must be signed with HS256")]
    WrongAlgorithm,
    #[error("the token is malformed")]
    Malformed,
    #[error("cannot sign a token: {0}")]
    Sign(String),
}

/// Signs and verifies tokens with the registry's HS256 secret. Exactly one
/// algorithm is accepted, so `alg: none` and algorithm-confusion tokens fail.
#[derive(Clone)]
pub struct TokenKeys {
    encoding: EncodingKey,
    decoding: DecodingKey,
    validation: Validation,
    issuer: String,
}

impl fmt::Debug for TokenKeys {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TokenKeys")
            .field("issuer", &self.issuer)
            .finish_non_exhaustive()
    }
}

impl TokenKeys {
    pub fn new(secret: &[u8], issuer: &str) -> Self {
        let mut validation = Validation::new(Algorithm::HS256);
        validation.set_audience(&[AUDIENCE]);
        validation.set_issuer(&[issuer]);
        validation.set_required_spec_claims(&["exp", "iss", "aud", "sub"]);
        // Clocks of replicas agree within seconds; a minute of slack would
        // let expired tokens live on.
        validation.leeway = 5;
        Self {
            encoding: EncodingKey::from_secret(secret),
            decoding: DecodingKey::from_secret(secret),
            validation,
            issuer: issuer.to_owned(),
        }
    }

    pub fn issuer(&self) -> &str {
        &self.issuer
    }

    pub fn issue(
        &self,
        account_id: i64,
        jti: &str,
        issued_at: i64,
        expires_at: i64,
    ) -> Result<String, TokenError> {
        let claims = Claims {
            sub: account_id.to_string(),
            iss: self.issuer.clone(),
            aud: AUDIENCE.to_owned(),
            iat: issued_at,
            exp: expires_at,
            jti: jti.to_owned(),
        };
        jsonwebtoken::encode(&Header::new(Algorithm::HS256), &claims, &self.encoding)
            .map_err(|e| TokenError::Sign(e.to_string()))
    }

    pub fn verify(&self, token: &str) -> Result<Claims, TokenError> {
        jsonwebtoken::decode::<Claims>(token, &self.decoding, &self.validation)
            .map(|data| data.claims)
            .map_err(|e| match e.kind() {
                ErrorKind::ExpiredSignature => TokenError::Expired,
                ErrorKind::InvalidAudience => TokenError::WrongAudience,
                ErrorKind::InvalidIssuer => TokenError::WrongIssuer,
                ErrorKind::InvalidSignature => TokenError::BadSignature,
                ErrorKind::InvalidAlgorithm | ErrorKind::InvalidAlgorithmName => {
                    TokenError::WrongAlgorithm
                }
                _ => TokenError::Malformed,
            })
    }

    /// Signs and verifies one token. jsonwebtoken compiles without a crypto
    /// backend and panics at the first use; this runs at start-up so a
    /// misbuilt binary fails there, not on a user's first login.
    pub fn self_test(&self) -> Result<(), TokenError> {
        let now = crate::db::now();
        let token = self.issue(0, "self-test", now, now + 60)?;
        let claims = self.verify(&token)?;
        if claims.jti == "self-test" && claims.aud == AUDIENCE {
            Ok(())
        } else {
            Err(TokenError::Malformed)
        }
    }
}

/// The secret in `<data_dir>/jwt-secret`, created (32 random bytes, hex, mode
/// 0600) when missing.
pub fn load_or_create_secret(data_dir: &Path) -> std::io::Result<Vec<u8>> {
    let path = data_dir.join("jwt-secret");
    match std::fs::read_to_string(&path) {
        Ok(text) => return Ok(text.trim().as_bytes().to_vec()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(e),
    }
    std::fs::create_dir_all(data_dir)?;
    let mut secret = [0u8; 32];
    getrandom::fill(&mut secret).map_err(std::io::Error::other)?;
    let hex = hex::encode(secret);
    match std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&path)
    {
        Ok(mut file) => {
            file.write_all(hex.as_bytes())?;
            file.sync_all()?;
            Ok(hex.into_bytes())
        }
        // Another process sharing the data folder won the race: use its.
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
            Ok(std::fs::read_to_string(&path)?.trim().as_bytes().to_vec())
        }
        Err(e) => Err(e),
    }
}

// ---------------------------------------------------------------------------
// The extractor

/// The token of an `Authorization: Bearer <token>` header, if that is what
/// it holds.
pub fn bearer_token(header: Option<&header::HeaderValue>) -> Option<&str> {
    header?
        .to_str()
        .ok()
        .and_then(|v| {
            v.strip_prefix("Bearer ")
                .or_else(|| v.strip_prefix("bearer "))
        })
        .map(str::trim)
        .filter(|t| !t.is_empty())
}

/// The caller of a request that carried a valid, unrevoked token.
#[derive(Debug, Clone)]
pub struct Authenticated {
    pub account_id: i64,
    pub username: String,
    pub is_admin: bool,
    pub token_id: String,
    pub scopes: Vec<Scope>,
    /// `None`: the token may act on every package the account owns.
    pub patterns: Option<Vec<NamePattern>>,
}

impl Authenticated {
    /// 403 unless the token carries `scope`.
    pub fn require(&self, scope: Scope) -> Result<(), ApiError> {
        if self.scopes.contains(&scope) {
            Ok(())
        } else {
            Err(ApiError::Forbidden(format!(
                "the token lacks the {:?} scope",
                scope.as_str()
            )))
        }
    }

    /// 403 unless the token's package patterns admit `name`.
    pub fn require_package(&self, name: &PackageName) -> Result<(), ApiError> {
        match &self.patterns {
            Some(patterns) if !patterns.iter().any(|p| p.matches(name)) => Err(
                ApiError::Forbidden(format!("the token is not valid for the package {name}")),
            ),
            _ => Ok(()),
        }
    }

    pub fn require_admin(&self) -> Result<(), ApiError> {
        if self.is_admin {
            Ok(())
        } else {
            Err(ApiError::Forbidden("only an admin may do this".to_owned()))
        }
    }

    async fn from_request_parts(req: HttpRequest) -> Result<Self, ApiError> {
        let state = req
            .app_data::<web::Data<AppState>>()
            .ok_or_else(|| ApiError::internal(anyhow::anyhow!("AppState is not registered")))?;
        let header = req
            .headers()
            .get(header::AUTHORIZATION)
            .ok_or_else(|| ApiError::Unauthenticated("no bearer token".to_owned()))?;
        let token = bearer_token(Some(header)).ok_or_else(|| {
            ApiError::Unauthenticated("the Authorization header is not a bearer token".into())
        })?;
        // The rate-limit middleware has usually checked the signature already.
        let verified = req
            .extensions()
            .get::<VerifiedClaims>()
            .map(|v| v.0.clone());
        let claims = match verified {
            Some(claims) => claims,
            None => state
                .tokens
                .verify(token)
                .map_err(|e| ApiError::Unauthenticated(e.to_string()))?,
        };
        let grant = state
            .db
            .find_token_grant(&claims.jti)
            .await?
            .filter(|g| g.account_id.to_string() == claims.sub)
            .ok_or_else(|| ApiError::Unauthenticated("the token is unknown".to_owned()))?;
        if grant.revoked_at.is_some() {
            return Err(ApiError::Unauthenticated(
                "the token has been revoked".to_owned(),
            ));
        }
        if grant.expires_at <= crate::db::now() {
            return Err(ApiError::Unauthenticated(
                "the token has expired".to_owned(),
            ));
        }
        state.db.touch_token(&grant.jti).await?;
        Ok(Self {
            account_id: grant.account_id,
            username: grant.username,
            is_admin: grant.is_admin,
            token_id: grant.jti,
            scopes: grant.scopes.0,
            patterns: grant.packages.map(|p| p.0),
        })
    }
}

impl FromRequest for Authenticated {
    type Error = ApiError;
    type Future = Pin<Box<dyn Future<Output = Result<Self, ApiError>>>>;

    fn from_request(req: &HttpRequest, _payload: &mut Payload) -> Self::Future {
        Box::pin(Self::from_request_parts(req.clone()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn token_round_trips_at_start_up() {
        let keys = TokenKeys::new(&[7u8; 32], "http://127.0.0.1:8080");
        keys.self_test().unwrap();
        let now = crate::db::now();
        let token = keys.issue(42, "jti-1", now, now + 3600).unwrap();
        let claims = keys.verify(&token).unwrap();
        assert_eq!(claims.sub, "42");
        assert_eq!(claims.iss, "http://127.0.0.1:8080");
        assert_eq!(claims.aud, AUDIENCE);
    }

    #[test]
    fn foreign_tokens_are_refused_with_their_reason() {
        let keys = TokenKeys::new(&[7u8; 32], "http://a");
        let now = crate::db::now();
        let other_secret = TokenKeys::new(&[8u8; 32], "http://a");
        let other_issuer = TokenKeys::new(&[7u8; 32], "http://b");
        let forged = other_secret.issue(1, "j", now, now + 60).unwrap();
        assert!(matches!(
            keys.verify(&forged),
            Err(TokenError::BadSignature)
        ));
        let foreign = other_issuer.issue(1, "j", now, now + 60).unwrap();
        assert!(matches!(
            keys.verify(&foreign),
            Err(TokenError::WrongIssuer)
        ));
        let expired = keys.issue(1, "j", now - 7200, now - 3600).unwrap();
        assert!(matches!(keys.verify(&expired), Err(TokenError::Expired)));
        assert!(matches!(
            keys.verify("not.a.jwt"),
            Err(TokenError::Malformed)
        ));
    }

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

    #[test]
    fn passwords_hash_and_verify() {
        let hash = hash_password(&Password::parse("correct horse").unwrap()).unwrap();
        assert!(hash.starts_with("$argon2id$"));
        assert!(verify_password("correct horse", &hash));
        assert!(!verify_password("wrong horse", &hash));
        assert!(!verify_password("correct horse", "not a hash"));
    }

    #[test]
    fn password_hashes_agree_with_the_argon2_crates_own() {
        use argon2::{PasswordHasher, PasswordVerifier};
        // Ours verifies with the crate's verifier...
        let ours = hash_password(&Password::parse("correct horse").unwrap()).unwrap();
        let parsed = PasswordHash::new(&ours).unwrap();
        assert!(
            Argon2::default()
                .verify_password(b"correct horse", &parsed)
                .is_ok()
        );
        // ...and a hash the crate made (other parameters included) verifies
        // with ours, on the same thread whose memory was sized for ours.
        let salt = SaltString::encode_b64(&[9u8; 16]).unwrap();
        let small = Argon2::new(
            Argon2Algorithm::Argon2id,
            Argon2Version::V0x13,
            Params::new(1024, 1, 1, None).unwrap(),
        );
        for argon2 in [Argon2::default(), small] {
            let theirs = argon2
                .hash_password(b"battery staple", &salt)
                .unwrap()
                .to_string();
            assert!(verify_password("battery staple", &theirs), "{theirs}");
            assert!(!verify_password("battery stapler", &theirs), "{theirs}");
        }
    }

    #[test]
    fn the_secret_file_is_private_and_stable() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let first = load_or_create_secret(dir.path()).unwrap();
        let second = load_or_create_secret(dir.path()).unwrap();
        assert_eq!(first, second);
        assert_eq!(first.len(), 64);
        let mode = std::fs::metadata(dir.path().join("jwt-secret"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
    }
}
