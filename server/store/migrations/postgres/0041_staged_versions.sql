-- Staged releases (docs/staged-releases.md): a version uploaded and
-- verified like a publish, held apart from `versions` so no read path can
-- list, search, resolve or serve it, until an owner approves it (then it
-- is inserted into `versions` like any publish) or rejects it. The row
-- stays in every state: its number is taken for good, like a deleted
-- version's. Keep in step with ../sqlite/0041_staged_versions.sql.
CREATE TABLE staged_versions (
    id                 TEXT    PRIMARY KEY, -- UUIDv7
    kind               TEXT    NOT NULL,
    name               TEXT    NOT NULL,
    normalized_name    TEXT    NOT NULL,
    -- The package when it existed at staging; NULL for a first version.
    package_id         BIGINT  REFERENCES packages (id) ON DELETE CASCADE,
    version            TEXT    NOT NULL,
    major              BIGINT  NOT NULL CHECK (major >= 0),
    minor              BIGINT  NOT NULL CHECK (minor >= 0),
    patch              BIGINT  NOT NULL CHECK (patch >= 0),
    prerelease         TEXT    NOT NULL DEFAULT '',
    sha256             TEXT    NOT NULL CHECK (length(sha256) = 64),
    size               BIGINT  NOT NULL CHECK (size >= 0),
    signer_key_id      TEXT    REFERENCES signing_keys (key_id) ON DELETE RESTRICT,
    staged_by          BIGINT  NOT NULL REFERENCES accounts (id),
    staged_at          BIGINT  NOT NULL,
    stage_log_index    BIGINT  NOT NULL UNIQUE,
    state              TEXT    NOT NULL DEFAULT 'pending'
                               CHECK (state IN ('pending', 'approved', 'rejected')),
    decided_by         BIGINT  REFERENCES accounts (id),
    decided_at         BIGINT,
    reason             TEXT,
    -- Trusted publishing's identity (JSON) and the provenance envelope,
    -- carried to the version at approval.
    publisher_identity TEXT,
    provenance         TEXT,
    UNIQUE (kind, normalized_name, major, minor, patch, prerelease)
);
CREATE INDEX staged_versions_by_state ON staged_versions (state, kind, normalized_name);
CREATE INDEX staged_versions_by_sha256 ON staged_versions (sha256);
