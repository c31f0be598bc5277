-- The protocol catalog and each agent version's quality report. Keep in
-- step with ../sqlite/0019_protocols_quality.sql.
--
-- A protocol (a2a, mcp, ...) has versions, each stable, deprecated (with a
-- successor and a message) or removed. `versions` is the JSON list that
-- core::protocols::ProtocolEntry validates; admins replace it whole with
-- PUT /api/v1/protocols/{name}. Custom protocols are packages of kind
-- `protocol`, not rows here.
CREATE TABLE protocols (
    name        TEXT    PRIMARY KEY,
    description TEXT    NOT NULL DEFAULT '',
    versions    JSONB   NOT NULL, -- [{version, status, successor?, message?}]
    updated_at  BIGINT  NOT NULL
);

-- Seeded once; admins edit them afterwards. MCP versions are its dated
-- revisions as SemVer (2024-11-05 is 2024.11.5). a2a 1.0.0 is deprecated
-- in favour of 2.0.0, as in the spec's example.
INSERT INTO protocols (name, description, versions, updated_at) VALUES
('mcp', 'Model Context Protocol: tool interfaces and server connections',
 '[{"version":"2024.11.5","status":"stable"},{"version":"2025.3.26","status":"stable"},{"version":"2025.6.18","status":"stable"}]',
 0),
('a2a', 'Agent-to-Agent Protocol: multi-agent communication',
 '[{"version":"1.0.0","status":"deprecated","successor":"2.0.0","message":"a2a v1 is deprecated; migrate to v2"},{"version":"2.0.0","status":"stable"}]',
 0);

-- JSON: core::quality::QualityReport of the deterministic rules, computed
-- at publish for agents; NULL for tools, protocols and versions published
-- before this migration.
ALTER TABLE versions ADD COLUMN quality_report JSONB;
