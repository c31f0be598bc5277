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
-- (`Db::store_answers`, under the write lock).
-- Keep in step with ../postgres/0051_stored_answers.sql.
DROP TRIGGER registry_changes_drop_index_document;
DROP TRIGGER registry_changes_drop_index_documents;
DROP TABLE index_documents;

CREATE TABLE stored_answers (
    kind            TEXT    NOT NULL,
    normalized_name TEXT    NOT NULL,
    answer          TEXT    NOT NULL CHECK (answer IN ('index', 'package')),
    generation      INTEGER NOT NULL,
    downloads       INTEGER NOT NULL,
    etag            TEXT    NOT NULL,
    body            TEXT    NOT NULL,
    PRIMARY KEY (kind, normalized_name, answer)
);

CREATE TRIGGER registry_changes_drop_stored_answer AFTER INSERT ON registry_changes
WHEN NEW.scope = 'package' AND NEW.kind IS NOT NULL AND NEW.normalized_name IS NOT NULL BEGIN
    DELETE FROM stored_answers WHERE kind = NEW.kind AND normalized_name = NEW.normalized_name;
END;

CREATE TRIGGER registry_changes_drop_stored_answers AFTER INSERT ON registry_changes
WHEN NOT (NEW.scope = 'package' AND NEW.kind IS NOT NULL AND NEW.normalized_name IS NOT NULL)
     AND NEW.scope NOT IN ('dependents', 'listings') BEGIN
    DELETE FROM stored_answers;
END;

CREATE TRIGGER versions_downloads_drop_stored_record AFTER UPDATE OF downloads ON versions
WHEN NEW.downloads <> OLD.downloads BEGIN
    DELETE FROM stored_answers
    WHERE kind = (SELECT kind FROM packages WHERE id = NEW.package_id)
      AND normalized_name = (SELECT normalized_name FROM packages WHERE id = NEW.package_id)
      AND answer = 'package';
END;
