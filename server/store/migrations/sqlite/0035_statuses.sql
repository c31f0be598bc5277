-- Statuses of packages and versions (PEP 792; docs/statuses.md): one row
-- per package (`version_id` 0) or version once its status was first set,
-- holding the current status, its reason, a deprecation's successor and
-- the log entry that recorded it. No row reads as `active`. Version rows
-- are never deleted, so `version_id` needs no foreign key (and 0 could
-- not have one). Keep in step with ../postgres/0035_statuses.sql.
CREATE TABLE statuses (
    package_id INTEGER NOT NULL REFERENCES packages (id) ON DELETE CASCADE,
    version_id INTEGER NOT NULL,
    status     TEXT    NOT NULL,
    reason     TEXT,
    successor  TEXT,
    log_index  INTEGER NOT NULL,
    changed_at INTEGER NOT NULL,
    PRIMARY KEY (package_id, version_id)
);
-- What resolution and downloads ask: the quarantined among a few packages.
CREATE INDEX statuses_quarantined ON statuses (package_id) WHERE status = 'quarantined';

-- A status shows in the package's records, index, pages and MCP view:
-- each change bumps the generation and journals the package (0031).
CREATE TRIGGER statuses_bump_generation_insert AFTER INSERT ON statuses BEGIN
    UPDATE registry_generation SET generation = generation + 1 WHERE id = 1;
    INSERT INTO registry_changes (generation, scope, kind, normalized_name)
        SELECT g.generation, 'package', p.kind, p.normalized_name
        FROM registry_generation g JOIN packages p ON p.id = NEW.package_id
        WHERE g.id = 1;
END;
CREATE TRIGGER statuses_bump_generation_update AFTER UPDATE ON statuses BEGIN
    UPDATE registry_generation SET generation = generation + 1 WHERE id = 1;
    INSERT INTO registry_changes (generation, scope, kind, normalized_name)
        SELECT g.generation, 'package', p.kind, p.normalized_name
        FROM registry_generation g JOIN packages p ON p.id = NEW.package_id
        WHERE g.id = 1;
END;
