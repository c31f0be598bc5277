-- Open and sealed agents, and prompt-key grants (docs/prompt-grants.md).
-- Keep in step with ../postgres/0032_prompt_grants.sql.

-- An agent version's prompt mode ('open': prompt.yaml in plaintext;
-- 'sealed': prompt.yaml.enc), NULL for tools and protocols, and the id of
-- the key that sealed it when its manifest records one. Set at publish
-- from the manifest; versions published before get them from their stored
-- manifest here.
ALTER TABLE versions ADD COLUMN prompt_mode TEXT;
ALTER TABLE versions ADD COLUMN prompt_key_id TEXT;
UPDATE versions SET prompt_mode = CASE
        WHEN EXISTS (
            SELECT 1 FROM json_each(json_extract(versions.manifest, '$.files')) f
            WHERE json_extract(f.value, '$.path') = 'prompt.yaml.enc'
        ) THEN 'sealed'
        ELSE 'open'
    END
 WHERE package_id IN (SELECT id FROM packages WHERE kind = 'agent')
   AND json_valid(manifest);
UPDATE versions SET prompt_key_id = (
        SELECT json_extract(f.value, '$.key_id')
        FROM json_each(json_extract(versions.manifest, '$.files')) f
        WHERE json_extract(f.value, '$.path') = 'prompt.yaml.enc'
          AND json_type(f.value, '$.key_id') = 'text'
    )
 WHERE prompt_mode = 'sealed';
-- An open version's page shows its prompt, kept in its extras: forgetting
-- them makes the start-up backfill compute them again.
UPDATE versions SET extras = NULL WHERE prompt_mode = 'open';

-- The age X25519 recipients (public keys) an account registered, with
-- proof it holds their identities; grants are wrapped to them.
CREATE TABLE prompt_recipients (
    account_id INTEGER NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    recipient  TEXT    NOT NULL,
    created_at INTEGER NOT NULL,
    PRIMARY KEY (account_id, recipient)
);

-- A sealed agent's prompt key, wrapped by an owner to a grantee's
-- recipients (the registry cannot open it). Revoked, never deleted: the
-- log's entries name grants by a commitment whose salt is kept here.
CREATE TABLE prompt_grants (
    id         INTEGER PRIMARY KEY,
    package_id INTEGER NOT NULL REFERENCES packages (id) ON DELETE CASCADE,
    grantee_id INTEGER NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    key_id     TEXT    NOT NULL,
    versions   TEXT,             -- a SemVer requirement; NULL: every version the key seals
    wrapped    TEXT    NOT NULL, -- an armored age file
    salt       TEXT    NOT NULL, -- 32 random bytes, hex: the commitment's
    granted_by INTEGER REFERENCES accounts (id) ON DELETE SET NULL,
    created_at INTEGER NOT NULL,
    revoked_at INTEGER
);
-- One live grant of a key to an account per agent: a new one replaces it.
CREATE UNIQUE INDEX prompt_grants_live
    ON prompt_grants (package_id, grantee_id, key_id) WHERE revoked_at IS NULL;
CREATE INDEX prompt_grants_by_grantee ON prompt_grants (grantee_id) WHERE revoked_at IS NULL;
