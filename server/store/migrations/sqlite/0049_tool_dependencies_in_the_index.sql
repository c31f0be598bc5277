-- An index entry (`dialect::package_index_rows`: the index endpoint, each
-- level of a resolution, the catalog) aggregated each version's tool
-- dependencies from `dependencies_of_version` (0044): one more B-tree
-- descent per version, 20 per package. On a 100,000-tool catalog that was
-- two fifths of a random index read's CPU (`perf`), and the statement took
-- 146-180 µs against 50-76 µs with the object stored beside the version.
-- A version's dependencies never change after publish, so the publish
-- writes them once more here, as the JSON object the entry shows
-- (`{name: requirement}`, `{}` for none), and the covering index holds
-- it. `dependencies` stays the table the dependents and the generation
-- journal read, by target and by its primary key.
ALTER TABLE versions ADD COLUMN tool_dependencies TEXT NOT NULL DEFAULT '{}';
UPDATE versions
SET tool_dependencies = (SELECT json_group_object(d.name, d.requirement)
                         FROM dependencies d
                         WHERE d.version_id = versions.id AND d.kind = 'tool')
WHERE id IN (SELECT version_id FROM dependencies WHERE kind = 'tool');
DROP INDEX versions_index_entries;
CREATE INDEX versions_index_entries ON versions (
    package_id, id, version, sha256, yanked, published_at, log_index,
    publisher_identity, provenance_sha256, downloads, tool_dependencies, deleted_at
) WHERE deleted_at IS NULL;
DROP INDEX dependencies_of_version;
