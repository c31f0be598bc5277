-- Start-up looks for three kinds of version that a registry stored
-- before today's rules: versions whose text is longer than today's bound
-- (`Db::long_version_texts`, retired before the server answers), versions
-- without a publish entry in the log (`Db::unlogged_versions`, logged
-- before the server answers) and versions without their container's facts
-- (`Db::versions_without_extras`, the background backfill). There are
-- almost never any, yet each query read every version row, whose manifest
-- and spec documents make them large: a full scan of `versions` per query
-- and per start, growing with the catalog (EXPLAIN QUERY PLAN: `SCAN
-- versions`, and a temporary B-tree to order the unlogged ones). Each
-- partial index holds exactly the rows its query asks for, in its order,
-- so each query reads only those. Keep it in step with the other
-- dialect's file.
CREATE INDEX versions_long_text ON versions (id) WHERE length(version) > 64;
CREATE INDEX versions_unlogged ON versions (published_at, id) WHERE log_index IS NULL;
CREATE INDEX versions_without_extras ON versions (id) WHERE extras IS NULL;
