-- What each registry generation changed, written by the triggers that bump
-- it, in the same transaction: a replica whose caches are at generation g
-- and reads g' drops only what the rows of (g, g'] name, instead of
-- everything (`store::changes`, `app::cache`). `scope` is one of
--   'package'    (kind, normalized_name): the package's versions, yanks,
--                owners or stored facts (its records, index, pages);
--   'dependents' (kind, normalized_name): which versions depend on or pin
--                that tool (its page lists them);
--   'listings'   nothing one package shows (a key that signed nothing
--                revoked): only answers listing many packages change;
--   'everything' models, protocols, anything not about one package.
-- Every call of the bump function writes at least one row, so a generation
-- without rows (pruned, or bumped by a statement no trigger covers) reads
-- as 'everything'. Rows older than 10,000 generations are pruned at each
-- bump: a cache further behind drops everything.
CREATE TABLE registry_changes (
    generation      BIGINT NOT NULL,
    scope           TEXT   NOT NULL,
    kind            TEXT,
    normalized_name TEXT
);
CREATE INDEX registry_changes_by_generation ON registry_changes (generation);

CREATE FUNCTION prune_registry_changes() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM registry_changes WHERE generation <= NEW.generation - 10000;
    RETURN NULL;
END;
$$;
CREATE TRIGGER registry_generation_prunes_changes AFTER UPDATE OF generation ON registry_generation
    FOR EACH ROW EXECUTE FUNCTION prune_registry_changes();

-- Still one bump per transaction (0027); every call journals what its row
-- changed under the transaction's generation. The deferred triggers run
-- at the commit, when a publish's dependency rows are written too.
CREATE OR REPLACE FUNCTION bump_registry_generation() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    bumped BIGINT;
    dependents_changed BOOLEAN := TG_OP = 'INSERT';
BEGIN
    IF current_setting('agentlang.generation_bumped', true) IS DISTINCT FROM 'on' THEN
        UPDATE registry_generation SET generation = generation + 1 WHERE id = 1
            RETURNING generation INTO bumped;
        PERFORM set_config('agentlang.generation_bumped', 'on', true);
    ELSE
        SELECT generation INTO bumped FROM registry_generation WHERE id = 1;
    END IF;

    IF TG_LEVEL = 'ROW' AND TG_TABLE_NAME = 'versions' THEN
        INSERT INTO registry_changes (generation, scope, kind, normalized_name)
            SELECT bumped, 'package', kind, normalized_name FROM packages WHERE id = NEW.package_id;
        -- A publish or a deletion changes the dependents of every tool the
        -- version depends on or pins; a yank or a backfill does not.
        IF TG_OP = 'UPDATE' THEN
            dependents_changed := NEW.deleted_at IS DISTINCT FROM OLD.deleted_at;
        END IF;
        IF dependents_changed THEN
            INSERT INTO registry_changes (generation, scope, kind, normalized_name)
                SELECT bumped, 'dependents', kind, normalized_name
                FROM dependencies WHERE version_id = NEW.id
                UNION
                SELECT bumped, 'dependents', 'tool', lower(replace(j.key, '-', '_'))
                FROM jsonb_each(
                    CASE WHEN jsonb_typeof(NEW.lockfile->'tools') = 'object'
                         THEN NEW.lockfile->'tools' ELSE '{}'::jsonb END) AS j(key, value);
        END IF;
    ELSIF TG_LEVEL = 'ROW' AND TG_TABLE_NAME = 'package_owners' AND TG_OP = 'DELETE' THEN
        INSERT INTO registry_changes (generation, scope, kind, normalized_name)
            SELECT bumped, 'package', kind, normalized_name FROM packages WHERE id = OLD.package_id;
    ELSIF TG_LEVEL = 'ROW' AND TG_TABLE_NAME = 'package_owners' THEN
        INSERT INTO registry_changes (generation, scope, kind, normalized_name)
            SELECT bumped, 'package', kind, normalized_name FROM packages WHERE id = NEW.package_id;
    ELSIF TG_LEVEL = 'ROW' AND TG_TABLE_NAME = 'signing_keys' THEN
        -- Records and pages of what the key signed show its revocation.
        INSERT INTO registry_changes (generation, scope) VALUES (bumped, 'listings');
        INSERT INTO registry_changes (generation, scope, kind, normalized_name)
            SELECT DISTINCT bumped, 'package', p.kind, p.normalized_name
            FROM versions v JOIN packages p ON p.id = v.package_id
            WHERE v.signer_key_id = NEW.key_id;
    ELSE
        -- Models, protocols: what every resolution or agent page may read.
        INSERT INTO registry_changes (generation, scope) VALUES (bumped, 'everything');
    END IF;
    RETURN NULL;
END;
$$;

-- Per row, so the journal can name the version's package (the bump is
-- once per transaction anyway since 0027; backfills write one row per
-- statement).
DROP TRIGGER versions_bump_generation_facts ON versions;
CREATE TRIGGER versions_bump_generation_facts AFTER UPDATE OF extras, max_risk, quality_report ON versions
    FOR EACH ROW EXECUTE FUNCTION bump_registry_generation();
