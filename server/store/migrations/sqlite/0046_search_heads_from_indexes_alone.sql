-- A search result shows its package's newest usable version and the
-- downloads of all of them (`Db::version_heads`), which read every live
-- version's download count. `versions_index_entries` (0044) did not hold
-- it, so each of a page's packages descended to 20 table rows on pages
-- nothing else had touched: 7 packages' heads took 506 µs at 100,000
-- tools and 148 µs with the count in the index (EXPLAIN QUERY PLAN: `USING
-- COVERING INDEX`). A flush of download counts now updates the index
-- entries of the versions it counts. PostgreSQL keeps its index: there a
-- counted column in an index would stop every flush's updates from being
-- HOT.
DROP INDEX versions_index_entries;
CREATE INDEX versions_index_entries ON versions (
    package_id, id, version, sha256, yanked, published_at, log_index,
    publisher_identity, provenance_sha256, downloads, deleted_at
) WHERE deleted_at IS NULL;
