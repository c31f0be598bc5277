-- Every change that appends to the transparency log bumps the generation at
-- commit, as a publish does (0024). The log's append takes an advisory lock
-- held to the commit; a bump taken mid-transaction locks the generation's
-- row to the commit as well. A first publish (its owner row bumped at once,
-- then the append) and a publish of a known package (the append, then the
-- deferred bump) took the two in opposite orders and deadlocked. Deferred,
-- every logged change takes the append lock first and the generation's row
-- last. Backfills and protocol changes log nothing and keep their
-- statement-level bumps.
DROP TRIGGER package_owners_bump_generation ON package_owners;
CREATE CONSTRAINT TRIGGER package_owners_bump_generation AFTER INSERT OR DELETE ON package_owners
    DEFERRABLE INITIALLY DEFERRED
    FOR EACH ROW EXECUTE FUNCTION bump_registry_generation();
DROP TRIGGER signing_keys_bump_generation_revoke ON signing_keys;
CREATE CONSTRAINT TRIGGER signing_keys_bump_generation_revoke AFTER UPDATE OF revoked_at ON signing_keys
    DEFERRABLE INITIALLY DEFERRED
    FOR EACH ROW EXECUTE FUNCTION bump_registry_generation();
DROP TRIGGER versions_bump_generation_update ON versions;
CREATE CONSTRAINT TRIGGER versions_bump_generation_update AFTER UPDATE OF yanked, deleted_at ON versions
    DEFERRABLE INITIALLY DEFERRED
    FOR EACH ROW EXECUTE FUNCTION bump_registry_generation();
