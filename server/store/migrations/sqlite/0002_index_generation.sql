-- A registry-wide generation counter: every change to what resolution sees
-- (a version published, yanked, unyanked or deleted; a model written) bumps
-- it in the same transaction. Replicas keep an in-process cache of index
-- entries and model rows and check this one row per resolve, so a cache is
-- never trusted past a change another replica made.
CREATE TABLE registry_generation (
    id         INTEGER PRIMARY KEY CHECK (id = 1),
    generation INTEGER NOT NULL
);
INSERT INTO registry_generation (id, generation) VALUES (1, 0);

CREATE TRIGGER versions_bump_generation_insert AFTER INSERT ON versions BEGIN
    UPDATE registry_generation SET generation = generation + 1 WHERE id = 1;
END;
CREATE TRIGGER versions_bump_generation_update AFTER UPDATE OF yanked, deleted_at ON versions BEGIN
    UPDATE registry_generation SET generation = generation + 1 WHERE id = 1;
END;
CREATE TRIGGER models_bump_generation_insert AFTER INSERT ON models BEGIN
    UPDATE registry_generation SET generation = generation + 1 WHERE id = 1;
END;
CREATE TRIGGER models_bump_generation_update AFTER UPDATE ON models BEGIN
    UPDATE registry_generation SET generation = generation + 1 WHERE id = 1;
END;
