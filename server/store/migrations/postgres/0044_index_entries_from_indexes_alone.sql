-- An index entry (`dialect::package_index_rows`: the index endpoint, each
-- level of a resolution, the catalog) reads every live version of a
-- package and each version's tool dependencies. `versions_index_entries`
-- (0025) held what resolution read then; the entry has since gained the
-- publication time, the log index and the evidence flags, so each entry
-- fetched its heap rows again, which hold the manifest and spec documents.
-- Both indexes below hold every column that read asks for: index-only
-- scans. Keep it in step with the other dialect's file.
DROP INDEX versions_index_entries;
CREATE INDEX versions_index_entries ON versions (package_id)
    INCLUDE (id, version, sha256, yanked, published_at, log_index,
             publisher_identity, provenance_sha256)
    WHERE deleted_at IS NULL;
CREATE INDEX dependencies_of_version ON dependencies (version_id, kind)
    INCLUDE (name, requirement);
