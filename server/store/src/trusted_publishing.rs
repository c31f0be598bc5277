//! Trusted publishing (migration 0040): the CI identities a package's
//! owners trust, the ID tokens already exchanged, and the link from each
//! minted token to the trusted publishers that authorized it. Which claims
//! match and who may change what is the app's.

use agentlang_core::{Kind, PackageName};

use super::{Db, now, tokens::NewToken, with_pool};

/// A trusted publisher as stored.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct TrustedPublisherRecord {
    pub id: i64,
    pub package_id: i64,
    pub issuer: String,
    pub repository: String,
    pub workflow: String,
    pub environment: Option<String>,
    pub created_by: i64,
    pub created_at: i64,
}

/// A live trusted publisher with the package it trusts, for matching an
/// identity.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct TrustedCandidate {
    pub id: i64,
    pub package_id: i64,
    pub kind: Kind,
    pub name: PackageName,
    pub workflow: String,
    pub environment: Option<String>,
    pub created_by: i64,
}

/// A token minted through one of a package's trusted publishers.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct TrustedTokenRecord {
    pub trusted_publisher_id: i64,
    pub jti: String,
    pub oidc_claims: Option<String>,
    pub created_at: i64,
    pub expires_at: i64,
    pub revoked_at: Option<i64>,
}

#[derive(Debug)]
pub struct NewTrustedPublisher<'a> {
    pub package_id: i64,
    pub issuer: &'a str,
    pub repository: &'a str,
    pub workflow: &'a str,
    pub environment: Option<&'a str>,
    pub created_by: i64,
}

impl Db {
    pub async fn insert_trusted_publisher(
        &self,
        new: &NewTrustedPublisher<'_>,
    ) -> Result<TrustedPublisherRecord, sqlx::Error> {
        with_pool!(self, pool => {
            sqlx::query_as::<_, TrustedPublisherRecord>(
                "INSERT INTO trusted_publishers (package_id, issuer, repository, workflow,
                                                 environment, created_by, created_at)
                 VALUES ($1, $2, $3, $4, $5, $6, $7)
                 RETURNING id, package_id, issuer, repository, workflow, environment,
                           created_by, created_at",
            )
            .bind(new.package_id)
            .bind(new.issuer)
            .bind(new.repository)
            .bind(new.workflow)
            .bind(new.environment)
            .bind(new.created_by)
            .bind(now())
            .fetch_one(pool)
            .await
        })
    }

    /// The package's live trusted publishers, oldest first.
    pub async fn trusted_publishers(
        &self,
        package_id: i64,
    ) -> Result<Vec<TrustedPublisherRecord>, sqlx::Error> {
        with_pool!(self, pool => {
            sqlx::query_as::<_, TrustedPublisherRecord>(
                "SELECT id, package_id, issuer, repository, workflow, environment, created_by,
                        created_at
                 FROM trusted_publishers WHERE package_id = $1 AND removed_at IS NULL
                 ORDER BY id",
            )
            .bind(package_id)
            .fetch_all(pool)
            .await
        })
    }

    /// Marks the package's trusted publisher removed and revokes the live
    /// tokens minted through it, in one transaction. False when the package
    /// has no such live trusted publisher.
    pub async fn remove_trusted_publisher(
        &self,
        package_id: i64,
        id: i64,
    ) -> Result<bool, sqlx::Error> {
        let now = now();
        with_pool!(self, pool => {
            let mut tx = pool.begin().await?;
            let removed = sqlx::query(
                "UPDATE trusted_publishers SET removed_at = $1
                 WHERE id = $2 AND package_id = $3 AND removed_at IS NULL",
            )
            .bind(now)
            .bind(id)
            .bind(package_id)
            .execute(&mut *tx)
            .await?
            .rows_affected();
            if removed == 1 {
                sqlx::query(
                    "UPDATE api_tokens SET revoked_at = $1
                     WHERE revoked_at IS NULL AND jti IN
                           (SELECT jti FROM trusted_publisher_tokens WHERE trusted_publisher_id = $2)",
                )
                .bind(now)
                .bind(id)
                .execute(&mut *tx)
                .await?;
            }
            tx.commit().await?;
            Ok(removed == 1)
        })
    }

    /// Live trusted publishers of `issuer` for `repository`, with their
    /// packages: what an ID token's identity is matched against.
    pub async fn trusted_candidates(
        &self,
        issuer: &str,
        repository: &str,
    ) -> Result<Vec<TrustedCandidate>, sqlx::Error> {
        with_pool!(self, pool => {
            sqlx::query_as::<_, TrustedCandidate>(
                "SELECT t.id, t.package_id, p.kind, p.name, t.workflow, t.environment,
                        t.created_by
                 FROM trusted_publishers t JOIN packages p ON p.id = t.package_id
                 WHERE t.issuer = $1 AND t.repository = $2 AND t.removed_at IS NULL
                 ORDER BY t.id",
            )
            .bind(issuer)
            .bind(repository)
            .fetch_all(pool)
            .await
        })
    }

    /// Records an ID token's `jti` as exchanged; false when it already was
    /// (a replay). Expired rows are pruned on the way.
    pub async fn claim_oidc_jti(
        &self,
        issuer: &str,
        jti: &str,
        expires_at: i64,
    ) -> Result<bool, sqlx::Error> {
        with_pool!(self, pool => {
            sqlx::query("DELETE FROM oidc_jti WHERE expires_at < $1")
                .bind(now())
                .execute(pool)
                .await?;
            sqlx::query(
                "INSERT INTO oidc_jti (issuer, jti, expires_at) VALUES ($1, $2, $3)
                 ON CONFLICT (issuer, jti) DO NOTHING",
            )
            .bind(issuer)
            .bind(jti)
            .bind(expires_at)
            .execute(pool)
            .await
            .map(|r| r.rows_affected() == 1)
        })
    }

    /// Stores a token minted through trusted publishers: the token row with
    /// its claims, and its link to each publisher, in one transaction.
    pub async fn insert_trusted_token(
        &self,
        token: &NewToken<'_>,
        claims: &str,
        publisher_ids: &[i64],
    ) -> Result<(), sqlx::Error> {
        with_pool!(self, pool => {
            let mut tx = pool.begin().await?;
            sqlx::query(
                "INSERT INTO api_tokens (jti, secret_hash, account_id, name, scopes, packages,
                                         created_at, expires_at, oidc_claims)
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)",
            )
            .bind(token.jti)
            .bind(token.secret_hash)
            .bind(token.account_id)
            .bind(token.name)
            .bind(sqlx::types::Json(token.scopes))
            .bind(token.packages.map(sqlx::types::Json))
            .bind(token.created_at)
            .bind(token.expires_at)
            .bind(claims)
            .execute(&mut *tx)
            .await?;
            for id in publisher_ids {
                sqlx::query(
                    "INSERT INTO trusted_publisher_tokens (trusted_publisher_id, jti)
                     VALUES ($1, $2)",
                )
                .bind(id)
                .bind(token.jti)
                .execute(&mut *tx)
                .await?;
            }
            tx.commit().await
        })
    }

    /// The token's recorded claims; `None` for an ordinary token.
    pub async fn token_oidc_claims(&self, jti: &str) -> Result<Option<String>, sqlx::Error> {
        with_pool!(self, pool => {
            sqlx::query_scalar::<_, Option<String>>(
                "SELECT oidc_claims FROM api_tokens WHERE jti = $1",
            )
            .bind(jti)
            .fetch_optional(pool)
            .await
            .map(Option::flatten)
        })
    }

    /// Tokens minted through the package's trusted publishers (removed ones
    /// included), newest first, at most `limit`.
    pub async fn trusted_tokens(
        &self,
        package_id: i64,
        limit: i64,
    ) -> Result<Vec<TrustedTokenRecord>, sqlx::Error> {
        with_pool!(self, pool => {
            sqlx::query_as::<_, TrustedTokenRecord>(
                "SELECT l.trusted_publisher_id, a.jti, a.oidc_claims, a.created_at, a.expires_at,
                        a.revoked_at
                 FROM trusted_publisher_tokens l
                 JOIN trusted_publishers t ON t.id = l.trusted_publisher_id
                 JOIN api_tokens a ON a.jti = l.jti
                 WHERE t.package_id = $1
                 ORDER BY a.created_at DESC, a.jti DESC LIMIT $2",
            )
            .bind(package_id)
            .bind(limit)
            .fetch_all(pool)
            .await
        })
    }
}
