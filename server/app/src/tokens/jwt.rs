//! Tokens as JWTs: the claims, and the HS256 keys that sign and verify
//! them (and remember which tokens they signed are dead).

use std::{fmt, sync::Arc};

use jsonwebtoken::{Algorithm, DecodingKey, EncodingKey, Header, Validation, errors::ErrorKind};
use serde::{Deserialize, Serialize};
use store::now;

/// The `aud` of every token this registry issues and accepts.
pub const AUDIENCE: &str = "agentlang-registry";

/// The claims of a registry token.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Claims {
    /// The account id.
    pub sub: String,
    pub iss: String,
    pub aud: String,
    pub iat: i64,
    pub exp: i64,
    /// The stored token's id: public (listed, logged), not a credential.
    pub jti: String,
    /// The token's random secret; the database keeps only its SHA-256, so
    /// neither the signing key nor a read of the database mints a token.
    pub sec: String,
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

/// Dead tokens remembered per replica: past this many, the least used are
/// forgotten (and cost one read of the database at their next use).
const DEAD_TOKENS_KEPT: usize = 10_000;

/// Signs and verifies tokens with the registry's HS256 secret. Exactly one
/// algorithm is accepted, so `alg: none` and algorithm-confusion tokens fail.
///
/// It also remembers tokens it signed that were found not to authenticate
/// (revoked, unknown, expired): that never changes back, so the memory is
/// never stale, and a request bearing one costs no read of the database
/// again.
#[derive(Clone)]
pub struct TokenKeys {
    encoding: EncodingKey,
    decoding: DecodingKey,
    validation: Validation,
    issuer: String,
    /// A dead token's `jti` and secret's hash to why it does not
    /// authenticate.
    dead: Arc<quick_cache::sync::Cache<String, String>>,
}

impl fmt::Debug for TokenKeys {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TokenKeys")
            .field("issuer", &self.issuer)
            .finish_non_exhaustive()
    }
}

fn dead_key(claims: &Claims) -> String {
    format!(
        "{} {}",
        claims.jti,
        crate::secrets::secret_hash(&claims.sec)
    )
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
            dead: Arc::new(quick_cache::sync::Cache::new(DEAD_TOKENS_KEPT)),
        }
    }

    pub fn issuer(&self) -> &str {
        &self.issuer
    }

    /// Remembers that the token with these claims does not authenticate,
    /// and why. Keyed by its id and secret together: a token forged with
    /// a real id (by whoever holds the signing key) buries only itself,
    /// never the token it imitates.
    pub fn bury(&self, claims: &Claims, reason: &str) {
        self.dead.insert(dead_key(claims), reason.to_owned());
    }

    /// Why the token with these claims does not authenticate, if it was
    /// found so.
    pub fn buried(&self, claims: &Claims) -> Option<String> {
        self.dead.get(&dead_key(claims))
    }

    pub fn issue(
        &self,
        account_id: i64,
        jti: &str,
        secret: &str,
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
            sec: secret.to_owned(),
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
        let now = now();
        let token = self.issue(0, "self-test", "s", now, now + 60)?;
        let claims = self.verify(&token)?;
        if claims.jti == "self-test" && claims.aud == AUDIENCE {
            Ok(())
        } else {
            Err(TokenError::Malformed)
        }
    }
}
