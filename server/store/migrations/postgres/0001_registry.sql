-- The registry's schema, PostgreSQL dialect. Keep it in step with
-- ../sqlite/0001_registry.sql: the same tables, columns and constraints.
--
-- Timestamps are BIGINT seconds since the Unix epoch (UTC) in both dialects,
-- so the shared queries compare and bind them the same way. JSON documents
-- are JSONB here and TEXT in SQLite.

CREATE TABLE accounts (
    id                  BIGINT  GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    username            TEXT    NOT NULL,
    -- lowercase, '-' as '_': `Alice` and `alice` are one account.
    normalized_username TEXT    NOT NULL UNIQUE,
    password_hash       TEXT    NOT NULL, -- argon2id, PHC string
    is_admin            BOOLEAN NOT NULL DEFAULT FALSE,
    created_at          BIGINT  NOT NULL
);

CREATE TABLE api_tokens (
    jti          TEXT   PRIMARY KEY, -- the JWT's `jti`; also the token's public id
    account_id   BIGINT NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    name         TEXT   NOT NULL,
    scopes       JSONB  NOT NULL, -- array of scope names
    packages     JSONB,           -- array of name patterns; NULL = every package
    created_at   BIGINT NOT NULL,
    expires_at   BIGINT NOT NULL,
    revoked_at   BIGINT,
    last_used_at BIGINT
);
CREATE INDEX api_tokens_by_account ON api_tokens (account_id);

CREATE TABLE signing_keys (
    key_id         TEXT   PRIMARY KEY, -- lowercase hex SHA-256 of the raw public key
    account_id     BIGINT NOT NULL REFERENCES accounts (id) ON DELETE RESTRICT,
    public_key_pem TEXT   NOT NULL,
    created_at     BIGINT NOT NULL,
    revoked_at     BIGINT
);
CREATE INDEX signing_keys_by_account ON signing_keys (account_id);

CREATE TABLE packages (
    id              BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    kind            TEXT   NOT NULL CHECK (kind <> ''), -- open set: later kinds need no migration
    name            TEXT   NOT NULL, -- as first published
    normalized_name TEXT   NOT NULL, -- lowercase, '-' as '_'
    description     TEXT   NOT NULL DEFAULT '',
    keywords        TEXT   NOT NULL DEFAULT '', -- space-separated, for the search index
    created_at      BIGINT NOT NULL,
    updated_at      BIGINT NOT NULL,
    -- the search index: name weighs most, then keywords, then description.
    -- The 'simple' configuration (no stemming) matches SQLite's unicode61
    -- tokenizer, so both backends find the same packages.
    search_document TSVECTOR GENERATED ALWAYS AS (
        setweight(to_tsvector('simple', replace(name, '_', ' ')), 'A')
        || setweight(to_tsvector('simple', keywords), 'B')
        || setweight(to_tsvector('simple', description), 'C')
    ) STORED,
    -- a look-alike of an existing name is the same package: refused to others
    UNIQUE (kind, normalized_name)
);
CREATE INDEX packages_search ON packages USING GIN (search_document);

CREATE TABLE package_owners (
    package_id BIGINT NOT NULL REFERENCES packages (id) ON DELETE CASCADE,
    account_id BIGINT NOT NULL REFERENCES accounts (id) ON DELETE RESTRICT,
    added_at   BIGINT NOT NULL,
    added_by   BIGINT REFERENCES accounts (id) ON DELETE SET NULL,
    PRIMARY KEY (package_id, account_id)
);
CREATE INDEX package_owners_by_account ON package_owners (account_id);

-- Rows are never deleted: a deleted version keeps its row with `deleted_at`
-- set, so (package, version) can never be published again.
CREATE TABLE versions (
    id            BIGINT  GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    package_id    BIGINT  NOT NULL REFERENCES packages (id) ON DELETE RESTRICT,
    version       TEXT    NOT NULL, -- the SemVer text as published
    -- SemVer precedence for ordering in SQL; prerelease '' is a release. Two
    -- versions that differ only in build metadata have equal precedence and
    -- are the same version.
    major         BIGINT  NOT NULL CHECK (major >= 0),
    minor         BIGINT  NOT NULL CHECK (minor >= 0),
    patch         BIGINT  NOT NULL CHECK (patch >= 0),
    prerelease    TEXT    NOT NULL DEFAULT '',
    sha256        TEXT    NOT NULL CHECK (length(sha256) = 64),
    size          BIGINT  NOT NULL CHECK (size >= 0),
    signer_key_id TEXT    REFERENCES signing_keys (key_id) ON DELETE RESTRICT,
    manifest      JSONB   NOT NULL, -- the container's manifest.json
    spec          JSONB   NOT NULL, -- the parsed agent.yaml / tool.yaml
    lockfile      JSONB,            -- the parsed agent.lock, agents only
    yanked        BOOLEAN NOT NULL DEFAULT FALSE,
    yank_reason   TEXT,
    published_by  BIGINT  NOT NULL REFERENCES accounts (id) ON DELETE RESTRICT,
    published_at  BIGINT  NOT NULL,
    deleted_at    BIGINT,
    downloads     BIGINT  NOT NULL DEFAULT 0,
    UNIQUE (package_id, major, minor, patch, prerelease)
);
CREATE INDEX versions_by_sha256 ON versions (sha256);
CREATE INDEX versions_by_signer ON versions (signer_key_id);

CREATE TABLE dependencies (
    version_id      BIGINT NOT NULL REFERENCES versions (id) ON DELETE CASCADE,
    kind            TEXT   NOT NULL DEFAULT 'tool',
    name            TEXT   NOT NULL, -- as written in the spec
    normalized_name TEXT   NOT NULL,
    requirement     TEXT   NOT NULL, -- a semver::VersionReq, as written
    PRIMARY KEY (version_id, kind, normalized_name)
);
CREATE INDEX dependencies_by_target ON dependencies (kind, normalized_name);

CREATE TABLE download_counts (
    version_id BIGINT NOT NULL REFERENCES versions (id) ON DELETE CASCADE,
    day        TEXT   NOT NULL, -- YYYY-MM-DD, UTC
    count      BIGINT NOT NULL DEFAULT 0,
    PRIMARY KEY (version_id, day)
);

CREATE TABLE models (
    name                  TEXT    PRIMARY KEY,
    context_window        BIGINT  NOT NULL CHECK (context_window > 0),
    supports_tools        BOOLEAN NOT NULL,
    -- US dollars per million tokens; NULL when unknown
    input_price_per_mtok  DOUBLE PRECISION,
    output_price_per_mtok DOUBLE PRECISION,
    updated_at            BIGINT  NOT NULL
);
