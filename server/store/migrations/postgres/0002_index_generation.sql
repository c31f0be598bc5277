-- A registry-wide generation counter: every change to what resolution sees
-- (a version published, yanked, unyanked or deleted; a model written) bumps
-- it in the same transaction. Replicas keep an in-process cache of index
-- entries and model rows and check this one row per resolve, so a cache is
-- never trusted past a change another replica made.
CREATE TABLE registry_generation (
    id         INTEGER PRIMARY KEY CHECK (id = 1),
    generation BIGINT  NOT NULL
);
INSERT INTO registry_generation (id, generation) VALUES (1, 0);

CREATE FUNCTION bump_registry_generation() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE registry_generation SET generation = generation + 1 WHERE id = 1;
    RETURN NULL;
END;
$$;

CREATE TRIGGER versions_bump_generation_insert AFTER INSERT ON versions
    FOR EACH ROW EXECUTE FUNCTION bump_registry_generation();
CREATE TRIGGER versions_bump_generation_update AFTER UPDATE OF yanked, deleted_at ON versions
    FOR EACH ROW EXECUTE FUNCTION bump_registry_generation();
CREATE TRIGGER models_bump_generation AFTER INSERT OR UPDATE ON models
    FOR EACH ROW EXECUTE FUNCTION bump_registry_generation();
