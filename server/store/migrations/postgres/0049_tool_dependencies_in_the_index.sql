-- An index entry (`dialect::package_index_rows`: the index endpoint, each
-- level of a resolution, the catalog) aggregated each version's tool
-- dependencies from `dependencies_of_version` (0044): one more index scan
-- per version, 20 per package. A version's dependencies never change after
-- publish, so the publish writes them once more here, as the JSON object
-- the entry shows (`{name: requirement}`, `{}` for none), and the covering
-- index holds it. Text, not json: an INCLUDE column needs no operator, and
-- the entry casts it. `dependencies` stays the table the dependents and
-- the generation journal read, by target and by its primary key. Keep it
-- in step with the other dialect's file.
ALTER TABLE versions ADD COLUMN tool_dependencies TEXT NOT NULL DEFAULT '{}';
UPDATE versions v
SET tool_dependencies = d.object
FROM (SELECT version_id, CAST(json_object_agg(name, requirement) AS TEXT) AS object
      FROM dependencies WHERE kind = 'tool' GROUP BY version_id) d
WHERE v.id = d.version_id;
DROP INDEX versions_index_entries;
CREATE INDEX versions_index_entries ON versions (package_id)
    INCLUDE (id, version, sha256, yanked, published_at, log_index,
             publisher_identity, provenance_sha256, downloads, tool_dependencies)
    WHERE deleted_at IS NULL;
DROP INDEX dependencies_of_version;
