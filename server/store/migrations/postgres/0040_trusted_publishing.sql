-- Trusted publishing (docs/trusted-publishing.md): a package's owners
-- trust a CI identity (an OpenID Connect issuer, a repository, a workflow
-- file and optionally an environment); a run proving that identity with
-- an ID token gets a short-lived publish token. Removed rows stay (with
-- removed_at) so the tokens minted through them keep their audit trail.
-- Keep in step with ../sqlite/0040_trusted_publishing.sql.
CREATE TABLE trusted_publishers (
    id          BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    package_id  BIGINT NOT NULL REFERENCES packages (id) ON DELETE CASCADE,
    issuer      TEXT    NOT NULL,
    repository  TEXT    NOT NULL,
    workflow    TEXT    NOT NULL,
    environment TEXT,
    created_by  BIGINT NOT NULL REFERENCES accounts (id),
    created_at  BIGINT NOT NULL,
    removed_at  BIGINT
);
CREATE INDEX trusted_publishers_by_identity ON trusted_publishers (issuer, repository)
    WHERE removed_at IS NULL;
CREATE INDEX trusted_publishers_by_package ON trusted_publishers (package_id);

-- ID tokens already exchanged, so one is never exchanged twice; a row is
-- pruned once its token has expired (it could no longer be accepted).
CREATE TABLE oidc_jti (
    issuer     TEXT    NOT NULL,
    jti        TEXT    NOT NULL,
    expires_at BIGINT NOT NULL,
    PRIMARY KEY (issuer, jti)
);
CREATE INDEX oidc_jti_by_expiry ON oidc_jti (expires_at);

-- A minted token's link to each trusted publisher that authorized it (one
-- per package it names), and the checked claims it was minted from.
CREATE TABLE trusted_publisher_tokens (
    trusted_publisher_id BIGINT NOT NULL REFERENCES trusted_publishers (id) ON DELETE CASCADE,
    jti                  TEXT    NOT NULL REFERENCES api_tokens (jti) ON DELETE CASCADE,
    PRIMARY KEY (trusted_publisher_id, jti)
);
ALTER TABLE api_tokens ADD COLUMN oidc_claims TEXT;

-- How a version was published: the trusted identity as JSON, NULL for an
-- ordinary token.
ALTER TABLE versions ADD COLUMN publisher_identity TEXT;
