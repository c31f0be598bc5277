-- The MCP Registry API (`/v0.1/servers`, server/store/src/mcp.rs) lists
-- the versions of tools whose tool.yaml says `kind: mcp`. The kind is in
-- every version's stored spec already, so nothing is backfilled: this
-- index finds those versions, per package and in publish order, without
-- reading any other version's spec. Keep it in step with the other
-- dialect's file.
CREATE INDEX versions_mcp_servers ON versions (package_id, id) WHERE spec->>'kind' = 'mcp';
