-- Agent versions' extras gain `trust` (core::trust::AgentTrust: effective
-- capabilities with their sources, MCP servers, bash and HTTP tools, locked
-- tools, sandbox, render tools). Forgetting the extras of every agent
-- version makes the start-up backfill compute them again, trust included,
-- so versions published before this show the same picture as new ones.
UPDATE versions SET extras = NULL
 WHERE package_id IN (SELECT id FROM packages WHERE kind = 'agent');

-- The highest risk of the version's effective capabilities (`Low`,
-- `Medium`, `High`, `Critical`; NULL for tools, protocols and agents that
-- need none), copied from the trust picture so search and listings read
-- one short column instead of the extras document.
ALTER TABLE versions ADD COLUMN max_risk TEXT;
