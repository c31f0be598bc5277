-- Identity and authorization: hashed token secrets, owner invitations and
-- seniority, the per-account audit list, secrets kept by the registry.
-- Keep in step with ../postgres/0020_identity.sql.

-- A token authenticates with a random secret carried in it; only the
-- secret's SHA-256 is stored. Tokens from before have none: they no longer
-- authenticate (their `jti` alone used to be enough).
ALTER TABLE api_tokens ADD COLUMN secret_hash TEXT;

-- The order in which owners joined a package (1 = founder): an owner may
-- remove only owners who joined after them.
ALTER TABLE package_owners ADD COLUMN ordinal INTEGER NOT NULL DEFAULT 0;
UPDATE package_owners SET ordinal = (
    SELECT COUNT(*) FROM package_owners o
    WHERE o.package_id = package_owners.package_id
      AND (o.added_at < package_owners.added_at
           OR (o.added_at = package_owners.added_at AND o.account_id <= package_owners.account_id))
);

-- An owner's invitation of another account, until that account accepts.
CREATE TABLE owner_invitations (
    package_id INTEGER NOT NULL REFERENCES packages (id) ON DELETE CASCADE,
    account_id INTEGER NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    invited_by INTEGER REFERENCES accounts (id) ON DELETE SET NULL,
    created_at INTEGER NOT NULL,
    expires_at INTEGER NOT NULL,
    PRIMARY KEY (package_id, account_id)
);
CREATE INDEX owner_invitations_by_account ON owner_invitations (account_id);

-- What happened to an account, for its holder: sign-ins, tokens, keys,
-- ownership, password changes.
CREATE TABLE audit_events (
    id         INTEGER PRIMARY KEY,
    account_id INTEGER NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    at         INTEGER NOT NULL,
    action     TEXT    NOT NULL,
    detail     TEXT    NOT NULL DEFAULT ''
);
CREATE INDEX audit_events_by_account ON audit_events (account_id, id);

-- A flashed token is now kept encrypted with a key derived from the session
-- cookie (which is not stored); plaintext ones from before are dropped.
UPDATE web_sessions SET flash_token_name = NULL, flash_token_secret = NULL;

-- Secrets the registry generates for itself when none is configured (the
-- token signing key), shared by every replica of the database.
CREATE TABLE server_secrets (
    name       TEXT    PRIMARY KEY,
    value      TEXT    NOT NULL,
    created_at INTEGER NOT NULL
);
