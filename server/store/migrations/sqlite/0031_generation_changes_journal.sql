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
-- Every trigger that bumps the generation writes at least one row, so a
-- generation without rows (pruned, or bumped by a statement no trigger
-- covers) reads as 'everything'. Rows older than 10,000 generations are
-- pruned at each bump: a cache further behind drops everything.
CREATE TABLE registry_changes (
    generation      INTEGER NOT NULL,
    scope           TEXT    NOT NULL,
    kind            TEXT,
    normalized_name TEXT
);
CREATE INDEX registry_changes_by_generation ON registry_changes (generation);

CREATE TRIGGER registry_generation_prunes_changes AFTER UPDATE OF generation ON registry_generation BEGIN
    DELETE FROM registry_changes WHERE generation <= NEW.generation - 10000;
END;

-- The version's package; on a publish, the tools its lock pins (the
-- dependency rows come after the version row: their own trigger below).
DROP TRIGGER versions_bump_generation_insert;
CREATE TRIGGER versions_bump_generation_insert AFTER INSERT ON versions BEGIN
    UPDATE registry_generation SET generation = generation + 1 WHERE id = 1;
    INSERT INTO registry_changes (generation, scope, kind, normalized_name)
        SELECT g.generation, 'package', p.kind, p.normalized_name
        FROM registry_generation g JOIN packages p ON p.id = NEW.package_id
        WHERE g.id = 1;
    INSERT INTO registry_changes (generation, scope, kind, normalized_name)
        SELECT g.generation, 'dependents', 'tool', lower(replace(j.key, '-', '_'))
        FROM registry_generation g,
             json_each(CASE WHEN NOT json_valid(NEW.lockfile) THEN '{}'
                            WHEN json_type(NEW.lockfile, '$.tools') = 'object'
                            THEN json_extract(NEW.lockfile, '$.tools')
                            ELSE '{}' END) j
        WHERE g.id = 1;
END;

CREATE TRIGGER dependencies_record_dependents AFTER INSERT ON dependencies BEGIN
    INSERT INTO registry_changes (generation, scope, kind, normalized_name)
        SELECT generation, 'dependents', NEW.kind, NEW.normalized_name
        FROM registry_generation WHERE id = 1;
END;

-- A yank changes the package; a deletion also its tools' dependents.
DROP TRIGGER versions_bump_generation_update;
CREATE TRIGGER versions_bump_generation_update AFTER UPDATE OF yanked, deleted_at ON versions BEGIN
    UPDATE registry_generation SET generation = generation + 1 WHERE id = 1;
    INSERT INTO registry_changes (generation, scope, kind, normalized_name)
        SELECT g.generation, 'package', p.kind, p.normalized_name
        FROM registry_generation g JOIN packages p ON p.id = NEW.package_id
        WHERE g.id = 1;
    INSERT INTO registry_changes (generation, scope, kind, normalized_name)
        SELECT g.generation, 'dependents', d.kind, d.normalized_name
        FROM registry_generation g JOIN dependencies d ON d.version_id = NEW.id
        WHERE g.id = 1 AND NEW.deleted_at IS NOT OLD.deleted_at;
    INSERT INTO registry_changes (generation, scope, kind, normalized_name)
        SELECT g.generation, 'dependents', 'tool', lower(replace(j.key, '-', '_'))
        FROM registry_generation g,
             json_each(CASE WHEN NOT json_valid(NEW.lockfile) THEN '{}'
                            WHEN json_type(NEW.lockfile, '$.tools') = 'object'
                            THEN json_extract(NEW.lockfile, '$.tools')
                            ELSE '{}' END) j
        WHERE g.id = 1 AND NEW.deleted_at IS NOT OLD.deleted_at;
END;

DROP TRIGGER versions_bump_generation_facts;
CREATE TRIGGER versions_bump_generation_facts AFTER UPDATE OF extras, max_risk, quality_report ON versions BEGIN
    UPDATE registry_generation SET generation = generation + 1 WHERE id = 1;
    INSERT INTO registry_changes (generation, scope, kind, normalized_name)
        SELECT g.generation, 'package', p.kind, p.normalized_name
        FROM registry_generation g JOIN packages p ON p.id = NEW.package_id
        WHERE g.id = 1;
END;

DROP TRIGGER package_owners_bump_generation_insert;
CREATE TRIGGER package_owners_bump_generation_insert AFTER INSERT ON package_owners BEGIN
    UPDATE registry_generation SET generation = generation + 1 WHERE id = 1;
    INSERT INTO registry_changes (generation, scope, kind, normalized_name)
        SELECT g.generation, 'package', p.kind, p.normalized_name
        FROM registry_generation g JOIN packages p ON p.id = NEW.package_id
        WHERE g.id = 1;
END;
DROP TRIGGER package_owners_bump_generation_delete;
CREATE TRIGGER package_owners_bump_generation_delete AFTER DELETE ON package_owners BEGIN
    UPDATE registry_generation SET generation = generation + 1 WHERE id = 1;
    INSERT INTO registry_changes (generation, scope, kind, normalized_name)
        SELECT g.generation, 'package', p.kind, p.normalized_name
        FROM registry_generation g JOIN packages p ON p.id = OLD.package_id
        WHERE g.id = 1;
END;

-- A revoked key changes the packages it signed (records and pages show
-- the signer's revocation).
DROP TRIGGER signing_keys_bump_generation_revoke;
CREATE TRIGGER signing_keys_bump_generation_revoke AFTER UPDATE OF revoked_at ON signing_keys BEGIN
    UPDATE registry_generation SET generation = generation + 1 WHERE id = 1;
    INSERT INTO registry_changes (generation, scope)
        SELECT generation, 'listings' FROM registry_generation WHERE id = 1;
    INSERT INTO registry_changes (generation, scope, kind, normalized_name)
        SELECT DISTINCT g.generation, 'package', p.kind, p.normalized_name
        FROM registry_generation g, versions v JOIN packages p ON p.id = v.package_id
        WHERE g.id = 1 AND v.signer_key_id = NEW.key_id;
END;

DROP TRIGGER models_bump_generation_insert;
CREATE TRIGGER models_bump_generation_insert AFTER INSERT ON models BEGIN
    UPDATE registry_generation SET generation = generation + 1 WHERE id = 1;
    INSERT INTO registry_changes (generation, scope)
        SELECT generation, 'everything' FROM registry_generation WHERE id = 1;
END;
DROP TRIGGER models_bump_generation_update;
CREATE TRIGGER models_bump_generation_update AFTER UPDATE ON models BEGIN
    UPDATE registry_generation SET generation = generation + 1 WHERE id = 1;
    INSERT INTO registry_changes (generation, scope)
        SELECT generation, 'everything' FROM registry_generation WHERE id = 1;
END;

DROP TRIGGER protocols_bump_generation_insert;
CREATE TRIGGER protocols_bump_generation_insert AFTER INSERT ON protocols BEGIN
    UPDATE registry_generation SET generation = generation + 1 WHERE id = 1;
    INSERT INTO registry_changes (generation, scope)
        SELECT generation, 'everything' FROM registry_generation WHERE id = 1;
END;
DROP TRIGGER protocols_bump_generation_update;
CREATE TRIGGER protocols_bump_generation_update AFTER UPDATE ON protocols BEGIN
    UPDATE registry_generation SET generation = generation + 1 WHERE id = 1;
    INSERT INTO registry_changes (generation, scope)
        SELECT generation, 'everything' FROM registry_generation WHERE id = 1;
END;
DROP TRIGGER protocols_bump_generation_delete;
CREATE TRIGGER protocols_bump_generation_delete AFTER DELETE ON protocols BEGIN
    UPDATE registry_generation SET generation = generation + 1 WHERE id = 1;
    INSERT INTO registry_changes (generation, scope)
        SELECT generation, 'everything' FROM registry_generation WHERE id = 1;
END;
