-- Index entries as sent (`GET /api/v1/index/{kind}/{name}`), stored once
-- per change of the package instead of rendered on each first read: on a
-- 100,000-tool catalog a random entry cost two statements, a JSON
-- rendering and a SHA-256 per request (`store::index_documents`,
-- `app::index_documents`). A document is the body and its ETag, rendered
-- at `generation`.
--
-- Never stale: every change an entry shows journals its package (0031,
-- 0035, 0037), and the trigger below deletes the package's document in
-- that same transaction (at its commit, where the deferred bumps run); a
-- journalled change to anything else ('everything', or a scope this
-- version does not know) deletes them all. A document is stored only when
-- the journal holds every generation after the one it was rendered at and
-- none of them changed its package (`Db::store_index_documents`, after
-- waiting on the generation's row for any writer committing a bump).
-- Keep in step with ../sqlite/0050_index_documents.sql.
CREATE TABLE index_documents (
    kind            TEXT   NOT NULL,
    normalized_name TEXT   NOT NULL,
    generation      BIGINT NOT NULL,
    etag            TEXT   NOT NULL,
    body            TEXT   NOT NULL,
    PRIMARY KEY (kind, normalized_name)
);

CREATE FUNCTION registry_changes_drop_index_documents() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.scope = 'package' AND NEW.kind IS NOT NULL AND NEW.normalized_name IS NOT NULL THEN
        DELETE FROM index_documents
            WHERE kind = NEW.kind AND normalized_name = NEW.normalized_name;
    ELSIF NEW.scope NOT IN ('dependents', 'listings') THEN
        DELETE FROM index_documents;
    END IF;
    RETURN NULL;
END;
$$;
CREATE TRIGGER registry_changes_drop_index_documents AFTER INSERT ON registry_changes
    FOR EACH ROW EXECUTE FUNCTION registry_changes_drop_index_documents();
