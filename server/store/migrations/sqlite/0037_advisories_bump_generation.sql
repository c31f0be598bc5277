-- An advisory shows on the pages of the versions it affects (their notice):
-- each package it names, before and after a change, is journalled (0031)
-- with a bump of the generation, so a page kept at an older generation is
-- rendered again. A publish inserts the packages; an update or withdrawal
-- deletes and inserts them. Keep in step with
-- ../postgres/0037_advisories_bump_generation.sql.
CREATE TRIGGER advisory_packages_bump_generation_insert AFTER INSERT ON advisory_packages BEGIN
    UPDATE registry_generation SET generation = generation + 1 WHERE id = 1;
    INSERT INTO registry_changes (generation, scope, kind, normalized_name)
        SELECT g.generation, 'package', NEW.kind, NEW.normalized_name
        FROM registry_generation g WHERE g.id = 1;
END;
CREATE TRIGGER advisory_packages_bump_generation_delete AFTER DELETE ON advisory_packages BEGIN
    UPDATE registry_generation SET generation = generation + 1 WHERE id = 1;
    INSERT INTO registry_changes (generation, scope, kind, normalized_name)
        SELECT g.generation, 'package', OLD.kind, OLD.normalized_name
        FROM registry_generation g WHERE g.id = 1;
END;
