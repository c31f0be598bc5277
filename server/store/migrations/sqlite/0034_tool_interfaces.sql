-- Abstract tools (server/store/src/interfaces.rs): a tool version's
-- tool.yaml may say `provides: [storage]`, which the stored spec already
-- records (`versions.spec->'provides'`), so nothing is backfilled (no
-- version could declare it before). This index finds the versions that
-- provide any interface, for the resolver's pick, publish's rule that
-- keeps interface names apart from tool names, and the catalog, without
-- reading any other version's spec. Keep it in step with the other
-- dialect's file.
CREATE INDEX versions_providing_interfaces ON versions (package_id, id) WHERE spec->'provides' IS NOT NULL;
