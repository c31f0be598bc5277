-- Open and sealed agents, and prompt-key grants (docs/prompt-grants.md).
-- Keep in step with ../sqlite/0032_prompt_grants.sql.

-- An agent version's prompt mode ('open': prompt.yaml in plaintext;
-- 'sealed': prompt.yaml.enc), NULL for tools and protocols, and the id of
-- the key that sealed it when its manifest records one. Set at publish
-- from the manifest; versions published before get them from their stored
-- manifest here.
ALTER TABLE versions ADD COLUMN prompt_mode TEXT;
ALTER TABLE versions ADD COLUMN prompt_key_id TEXT;
UPDATE versions SET prompt_mode = CASE
        WHEN EXISTS (
            SELECT 1 FROM jsonb_array_elements(
                CASE WHEN jsonb_typeof(versions.manifest -> 'files') = 'array'
                     THEN versions.manifest -> 'files' ELSE '[]'::jsonb END) f
            WHERE f ->> 'path' = 'prompt.yaml.enc'
        ) THEN 'sealed'
        ELSE 'open'
    END
 WHERE package_id IN (SELECT id FROM packages WHERE kind = 'agent');
UPDATE versions SET prompt_key_id = (
        SELECT f ->> 'key_id'
        FROM jsonb_array_elements(
            CASE WHEN jsonb_typeof(versions.manifest -> 'files') = 'array'
                 THEN versions.manifest -> 'files' ELSE '[]'::jsonb END) f
        WHERE f ->> 'path' = 'prompt.yaml.enc'
          AND jsonb_typeof(f -> 'key_id') = 'string'
        LIMIT 1
    )
 WHERE prompt_mode = 'sealed';
-- An open version's page shows its prompt, kept in its extras: forgetting
-- them makes the start-up backfill compute them again.
UPDATE versions SET extras = NULL WHERE prompt_mode = 'open';

-- The age X25519 recipients (public keys) an account registered, with
-- proof it holds their identities; grants are wrapped to them.
CREATE TABLE prompt_recipients (
    account_id BIGINT NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    recipient  TEXT   NOT NULL,
    created_at BIGINT NOT NULL,
    PRIMARY KEY (account_id, recipient)
);

-- A sealed agent's prompt key, wrapped by an owner to a grantee's
-- recipients (the registry cannot open it). Revoked, never deleted: the
-- log's entries name grants by a commitment whose salt is kept here.
CREATE TABLE prompt_grants (
    id         BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    package_id BIGINT NOT NULL REFERENCES packages (id) ON DELETE CASCADE,
    grantee_id BIGINT NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    key_id     TEXT   NOT NULL,
    versions   TEXT,             -- a SemVer requirement; NULL: every version the key seals
    wrapped    TEXT   NOT NULL, -- an armored age file
    salt       TEXT   NOT NULL, -- 32 random bytes, hex: the commitment's
    granted_by BIGINT REFERENCES accounts (id) ON DELETE SET NULL,
    created_at BIGINT NOT NULL,
    revoked_at BIGINT
);
-- One live grant of a key to an account per agent: a new one replaces it.
CREATE UNIQUE INDEX prompt_grants_live
    ON prompt_grants (package_id, grantee_id, key_id) WHERE revoked_at IS NULL;
CREATE INDEX prompt_grants_by_grantee ON prompt_grants (grantee_id) WHERE revoked_at IS NULL;
