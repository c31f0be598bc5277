-- Provenance (docs/provenance.md): a version's verified DSSE envelope,
-- kept apart from `versions` so no listing reads it. `versions` keeps its
-- SHA-256 (also in the publish's log entry), which says at a glance that
-- a version has provenance, for index entries and `evidence`.
-- Keep in step with ../sqlite/0042_provenance.sql.
ALTER TABLE versions ADD COLUMN provenance_sha256 TEXT;
CREATE TABLE version_provenance (
    version_id BIGINT  PRIMARY KEY REFERENCES versions (id) ON DELETE CASCADE,
    -- The envelope exactly as served (JSON text, at most 64 KiB).
    envelope   TEXT    NOT NULL,
    -- What the catalog shows of it (core::provenance::Summary as JSON).
    summary    TEXT    NOT NULL,
    -- `publisher` (signed by a registered key of the publisher) or
    -- `registry` (made by the registry from a trusted-publishing run).
    source     TEXT    NOT NULL CHECK (source IN ('publisher', 'registry'))
);
