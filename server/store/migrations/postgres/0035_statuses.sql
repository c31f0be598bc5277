-- Statuses of packages and versions (PEP 792; docs/statuses.md): one row
-- per package (`version_id` 0) or version once its status was first set,
-- holding the current status, its reason, a deprecation's successor and
-- the log entry that recorded it. No row reads as `active`. Version rows
-- are never deleted, so `version_id` needs no foreign key (and 0 could
-- not have one). Keep in step with ../sqlite/0035_statuses.sql.
CREATE TABLE statuses (
    package_id BIGINT NOT NULL REFERENCES packages (id) ON DELETE CASCADE,
    version_id BIGINT NOT NULL,
    status     TEXT   NOT NULL,
    reason     TEXT,
    successor  TEXT,
    log_index  BIGINT NOT NULL,
    changed_at BIGINT NOT NULL,
    PRIMARY KEY (package_id, version_id)
);
-- What resolution and downloads ask: the quarantined among a few packages.
CREATE INDEX statuses_quarantined ON statuses (package_id) WHERE status = 'quarantined';

-- A status shows in the package's records, index, pages and MCP view:
-- each change bumps the generation once per transaction (0027) and
-- journals the package (0031). Deferred like every logged change's bump
-- (0026): the log's append lock first, the generation's row at commit.
CREATE FUNCTION statuses_bump_registry_generation() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    bumped BIGINT;
BEGIN
    IF current_setting('agentlang.generation_bumped', true) IS DISTINCT FROM 'on' THEN
        UPDATE registry_generation SET generation = generation + 1 WHERE id = 1
            RETURNING generation INTO bumped;
        PERFORM set_config('agentlang.generation_bumped', 'on', true);
    ELSE
        SELECT generation INTO bumped FROM registry_generation WHERE id = 1;
    END IF;
    INSERT INTO registry_changes (generation, scope, kind, normalized_name)
        SELECT bumped, 'package', kind, normalized_name FROM packages WHERE id = NEW.package_id;
    RETURN NULL;
END;
$$;
CREATE CONSTRAINT TRIGGER statuses_bump_generation AFTER INSERT OR UPDATE ON statuses
    DEFERRABLE INITIALLY DEFERRED
    FOR EACH ROW EXECUTE FUNCTION statuses_bump_registry_generation();
