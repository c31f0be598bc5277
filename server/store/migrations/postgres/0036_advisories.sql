-- Security advisories in the OSV format (docs/advisories.md).
-- Keep in step with ../sqlite/0036_advisories.sql.

-- One row per advisory id: the document exactly as served (compact JSON,
-- its SHA-256 in the log entry of its last change), replaced whole by a
-- newer `modified`. Never deleted: a withdrawal is a change that sets
-- `withdrawn`.
CREATE TABLE advisories (
    id           TEXT    PRIMARY KEY, -- x_AGENTLANG-<year>-<number> or a publisher's x_ id
    modified     TEXT    NOT NULL,    -- the document's `modified`, RFC 3339 UTC
    withdrawn    TEXT,                -- the document's `withdrawn`, when it has one
    severity     TEXT    NOT NULL,    -- low, moderate, high or critical
    document     TEXT    NOT NULL,
    sha256       TEXT    NOT NULL,    -- hex, of `document`'s bytes
    log_index    BIGINT  NOT NULL,    -- the entry of the last change
    published_by BIGINT  REFERENCES accounts (id) ON DELETE SET NULL,
    created_at   BIGINT  NOT NULL,
    updated_at   BIGINT  NOT NULL
);

-- The packages each advisory names (`affected[].database_specific.package`),
-- by normalized name: what an audit and a package's listing look up.
CREATE TABLE advisory_packages (
    advisory_id     TEXT NOT NULL REFERENCES advisories (id) ON DELETE CASCADE,
    kind            TEXT NOT NULL,
    normalized_name TEXT NOT NULL,
    PRIMARY KEY (advisory_id, kind, normalized_name)
);
CREATE INDEX advisory_packages_by_package ON advisory_packages (kind, normalized_name);
