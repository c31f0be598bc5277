-- What pages show from a container besides its definition (skills,
-- co-located subagents, ux.yaml hints, a tool's README), computed from the
-- container's kept members at publish, so no page reads a blob. NULL for
-- versions published before: filled in the background after start-up.
ALTER TABLE versions ADD COLUMN extras JSONB;
