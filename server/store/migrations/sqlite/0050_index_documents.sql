-- Index entries as sent (`GET /api/v1/index/{kind}/{name}`), stored once
-- per change of the package instead of rendered on each first read: on a
-- 100,000-tool catalog a random entry cost two statements, a JSON
-- rendering and a SHA-256 per request (`store::index_documents`,
-- `app::index_documents`). A document is the body and its ETag, rendered
-- at `generation`.
--
-- Never stale: every change an entry shows journals its package (0031,
-- 0035, 0037), and the trigger below deletes the package's document in
-- that same transaction; a journalled change to anything else
-- ('everything', or a scope this version does not know) deletes them
-- all. A document is stored only when the journal holds every
-- generation after the one it was rendered at and none of them changed
-- its package (`Db::store_index_documents`, under the write lock).
-- Keep in step with ../postgres/0050_index_documents.sql.
CREATE TABLE index_documents (
    kind            TEXT    NOT NULL,
    normalized_name TEXT    NOT NULL,
    generation      INTEGER NOT NULL,
    etag            TEXT    NOT NULL,
    body            TEXT    NOT NULL,
    PRIMARY KEY (kind, normalized_name)
);

CREATE TRIGGER registry_changes_drop_index_document AFTER INSERT ON registry_changes
WHEN NEW.scope = 'package' AND NEW.kind IS NOT NULL AND NEW.normalized_name IS NOT NULL BEGIN
    DELETE FROM index_documents WHERE kind = NEW.kind AND normalized_name = NEW.normalized_name;
END;

CREATE TRIGGER registry_changes_drop_index_documents AFTER INSERT ON registry_changes
WHEN NOT (NEW.scope = 'package' AND NEW.kind IS NOT NULL AND NEW.normalized_name IS NOT NULL)
     AND NEW.scope NOT IN ('dependents', 'listings') BEGIN
    DELETE FROM index_documents;
END;
