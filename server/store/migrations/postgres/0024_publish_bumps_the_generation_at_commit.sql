-- A publish bumps the registry generation when it commits, not when it
-- inserts the version row: the bump locks the generation's one row until
-- the commit, and taken at the insert it made every publish wait for the
-- one before it through all its remaining statements (dependencies, the
-- transparency log's append, the commit's round trip). Deferred, the row is
-- locked only while the commit runs. Readers see the same thing: the bump
-- is still in the transaction that makes the version visible.
DROP TRIGGER versions_bump_generation_insert ON versions;
CREATE CONSTRAINT TRIGGER versions_bump_generation_insert AFTER INSERT ON versions
    DEFERRABLE INITIALLY DEFERRED
    FOR EACH ROW EXECUTE FUNCTION bump_registry_generation();
