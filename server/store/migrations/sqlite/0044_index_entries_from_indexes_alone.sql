-- An index entry (`dialect::package_index_rows`: the index endpoint, each
-- level of a resolution, the catalog) reads every live version of a
-- package and each version's tool dependencies. Read from the table, each
-- version is a descent to its row, which holds the manifest and spec
-- documents: at 100,000 tools (a 2.8 GB file) the rows of one package
-- span pages nothing else has touched, and a random index read cost 2 to
-- 5 times a repeated one. Both indexes below hold every column that read
-- asks for, so it is two range scans over a few adjacent index pages
-- (EXPLAIN QUERY PLAN: `USING COVERING INDEX`). `deleted_at` is a column
-- too: SQLite counts a partial index as covering only if it holds every
-- column the query names. The first replaces `versions_live_package`,
-- whose key it begins with. Keep it in step with the other dialect's file.
CREATE INDEX versions_index_entries ON versions (
    package_id, id, version, sha256, yanked, published_at, log_index,
    publisher_identity, provenance_sha256, deleted_at
) WHERE deleted_at IS NULL;
DROP INDEX versions_live_package;
CREATE INDEX dependencies_of_version ON dependencies (version_id, kind, name, requirement);
