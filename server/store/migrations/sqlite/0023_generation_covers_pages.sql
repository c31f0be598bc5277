-- The registry generation now covers everything a record or catalog page
-- shows, not only what resolution reads: those answers are cached per
-- generation too (`service::cache`). Besides publishes, yanks, deletions and
-- models, it is bumped when a version's stored facts are filled in (extras
-- and trust, quality report: start-up backfills), when owners
-- change, when a signing key is revoked (records show the signer's
-- revocation), and when the protocol catalog changes (agent pages check
-- their protocols against it). Download counts do not bump it: answers that
-- show them are kept no longer than counts wait to be written.
CREATE TRIGGER versions_bump_generation_facts AFTER UPDATE OF extras, max_risk, quality_report ON versions BEGIN
    UPDATE registry_generation SET generation = generation + 1 WHERE id = 1;
END;
CREATE TRIGGER package_owners_bump_generation_insert AFTER INSERT ON package_owners BEGIN
    UPDATE registry_generation SET generation = generation + 1 WHERE id = 1;
END;
CREATE TRIGGER package_owners_bump_generation_delete AFTER DELETE ON package_owners BEGIN
    UPDATE registry_generation SET generation = generation + 1 WHERE id = 1;
END;
CREATE TRIGGER signing_keys_bump_generation_revoke AFTER UPDATE OF revoked_at ON signing_keys BEGIN
    UPDATE registry_generation SET generation = generation + 1 WHERE id = 1;
END;
CREATE TRIGGER protocols_bump_generation_insert AFTER INSERT ON protocols BEGIN
    UPDATE registry_generation SET generation = generation + 1 WHERE id = 1;
END;
CREATE TRIGGER protocols_bump_generation_update AFTER UPDATE ON protocols BEGIN
    UPDATE registry_generation SET generation = generation + 1 WHERE id = 1;
END;
CREATE TRIGGER protocols_bump_generation_delete AFTER DELETE ON protocols BEGIN
    UPDATE registry_generation SET generation = generation + 1 WHERE id = 1;
END;
