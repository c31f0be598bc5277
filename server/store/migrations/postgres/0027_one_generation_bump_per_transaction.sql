-- A transaction bumps the registry generation once, however many rows it
-- writes. A batch of publishes (`service::publish_queue`) inserts a version
-- and, for a new package, an owner row per publish, and every row's
-- deferred trigger updated the generation's one row again: a dozen updates
-- of one row per commit, each leaving a dead row version that later
-- generation reads (every resolve makes one) step over until it is pruned.
-- One bump tells readers all they need: the value after the commit differs
-- from every value read before it. The mark is local to the transaction
-- (`set_config(.., true)`) and is undone with a rolled-back savepoint, as
-- the update is.
CREATE OR REPLACE FUNCTION bump_registry_generation() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF current_setting('agentlang.generation_bumped', true) IS DISTINCT FROM 'on' THEN
        UPDATE registry_generation SET generation = generation + 1 WHERE id = 1;
        PERFORM set_config('agentlang.generation_bumped', 'on', true);
    END IF;
    RETURN NULL;
END;
$$;
