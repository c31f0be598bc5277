-- The registry generation now covers everything a record or catalog page
-- shows, not only what resolution reads: those answers are cached per
-- generation too (`service::cache`). Besides publishes, yanks, deletions and
-- models, it is bumped when a version's stored facts are filled in (extras
-- and trust, quality report: start-up backfills), when owners
-- change, when a signing key is revoked (records show the signer's
-- revocation), and when the protocol catalog changes (agent pages check
-- their protocols against it). Download counts do not bump it: answers that
-- show them are kept no longer than counts wait to be written. Once per
-- statement: a backfill that updates thousands of rows bumps it once.
CREATE TRIGGER versions_bump_generation_facts AFTER UPDATE OF extras, max_risk, quality_report ON versions
    FOR EACH STATEMENT EXECUTE FUNCTION bump_registry_generation();
CREATE TRIGGER package_owners_bump_generation AFTER INSERT OR DELETE ON package_owners
    FOR EACH STATEMENT EXECUTE FUNCTION bump_registry_generation();
CREATE TRIGGER signing_keys_bump_generation_revoke AFTER UPDATE OF revoked_at ON signing_keys
    FOR EACH STATEMENT EXECUTE FUNCTION bump_registry_generation();
CREATE TRIGGER protocols_bump_generation AFTER INSERT OR UPDATE OR DELETE ON protocols
    FOR EACH STATEMENT EXECUTE FUNCTION bump_registry_generation();
