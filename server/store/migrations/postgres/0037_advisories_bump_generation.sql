-- An advisory shows on the pages of the versions it affects (their notice):
-- each package it names, before and after a change, is journalled (0031)
-- with one bump of the generation per transaction (0027), so a page kept at
-- an older generation is rendered again. Deferred like every logged
-- change's bump (0026): the log's append lock first, the generation's row
-- at commit. Keep in step with ../sqlite/0037_advisories_bump_generation.sql.
CREATE FUNCTION advisory_packages_bump_registry_generation() RETURNS trigger LANGUAGE plpgsql AS $$
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
    IF TG_OP = 'DELETE' THEN
        INSERT INTO registry_changes (generation, scope, kind, normalized_name)
            VALUES (bumped, 'package', OLD.kind, OLD.normalized_name);
    ELSE
        INSERT INTO registry_changes (generation, scope, kind, normalized_name)
            VALUES (bumped, 'package', NEW.kind, NEW.normalized_name);
    END IF;
    RETURN NULL;
END;
$$;
CREATE CONSTRAINT TRIGGER advisory_packages_bump_generation AFTER INSERT OR DELETE ON advisory_packages
    DEFERRABLE INITIALLY DEFERRED
    FOR EACH ROW EXECUTE FUNCTION advisory_packages_bump_registry_generation();
