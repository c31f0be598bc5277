-- Package records as sent (`GET /api/v1/{kind}/{name}`) are stored beside
-- the index entries of 0050: on a 100,000-tool catalog a random record
-- cost three statements, twenty versions' manifests and specs checked as
-- JSON, a rendering and a SHA-256 per request. One table holds both
-- answers (`answer`: 'index' or 'package'), so one trigger deletes what a
-- change shows (`store::stored_answers`, `app::stored_answers`); the
-- index entries stored by 0050 are dropped and rendered again by the
-- next start.
--
-- A record also shows download counts, which the journal does not track:
-- `downloads` is the package's total when it was rendered. The flush that
-- adds downloads to a version deletes its package's record in its
-- transaction (the trigger on `versions` below), and a record is stored
-- only while the total is still the one it shows
-- (`Db::store_answers`, under the write lock, which a flush also takes).
-- Keep in step with ../sqlite/0051_stored_answers.sql.
DROP TRIGGER registry_changes_drop_index_documents ON registry_changes;
DROP FUNCTION registry_changes_drop_index_documents();
DROP TABLE index_documents;

CREATE TABLE stored_answers (
    kind            TEXT   NOT NULL,
    normalized_name TEXT   NOT NULL,
    answer          TEXT   NOT NULL CHECK (answer IN ('index', 'package')),
    generation      BIGINT NOT NULL,
    downloads       BIGINT NOT NULL,
    etag            TEXT   NOT NULL,
    body            TEXT   NOT NULL,
    PRIMARY KEY (kind, normalized_name, answer)
);

CREATE FUNCTION registry_changes_drop_stored_answers() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.scope = 'package' AND NEW.kind IS NOT NULL AND NEW.normalized_name IS NOT NULL THEN
        DELETE FROM stored_answers
            WHERE kind = NEW.kind AND normalized_name = NEW.normalized_name;
    ELSIF NEW.scope NOT IN ('dependents', 'listings') THEN
        DELETE FROM stored_answers;
    END IF;
    RETURN NULL;
END;
$$;
CREATE TRIGGER registry_changes_drop_stored_answers AFTER INSERT ON registry_changes
    FOR EACH ROW EXECUTE FUNCTION registry_changes_drop_stored_answers();

CREATE FUNCTION versions_downloads_drop_stored_record() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM stored_answers s USING packages p
        WHERE p.id = NEW.package_id AND s.kind = p.kind
          AND s.normalized_name = p.normalized_name AND s.answer = 'package';
    RETURN NULL;
END;
$$;
CREATE TRIGGER versions_downloads_drop_stored_record AFTER UPDATE OF downloads ON versions
    FOR EACH ROW WHEN (NEW.downloads <> OLD.downloads)
    EXECUTE FUNCTION versions_downloads_drop_stored_record();
