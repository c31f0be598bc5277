-- A search result shows its package's newest usable version and the
-- downloads of all of them (`Db::version_heads`), which read every live
-- version's download count. `versions_index_entries` (0044) did not hold
-- it, so each of a page's packages read its 20 heap rows on 20 pages: 10
-- packages' heads ran at 2,965 a second on a 2,000,000-version catalog,
-- and at 14,145 without the count (pgbench, 4 clients). SQLite's index
-- holds it since 0046.
--
-- 0046 kept it out of this index so that a flush of download counts would
-- update versions in place (HOT). It does not: a version's row is
-- appended to a full page and its page has no room for a second copy, so
-- of 200 counted versions 1 was updated in place on that catalog. Every
-- flush already adds entries to each of the table's indexes.
DROP INDEX versions_index_entries;
CREATE INDEX versions_index_entries ON versions (package_id)
    INCLUDE (id, version, sha256, yanked, published_at, log_index,
             publisher_identity, provenance_sha256, downloads)
    WHERE deleted_at IS NULL;
