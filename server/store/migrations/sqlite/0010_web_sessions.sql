-- Signed-in sessions of the web catalog. Kept in the database, not in one
-- process, so any replica serves any session. Keep in step with
-- ../postgres/0010_web_sessions.sql.
--
-- The cookie holds a random secret; only its SHA-256 is stored, so a read of
-- this table does not hand out live sessions.
CREATE TABLE web_sessions (
    id_hash      TEXT    PRIMARY KEY, -- lowercase hex SHA-256 of the cookie secret
    account_id   INTEGER NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    csrf_token   TEXT    NOT NULL,    -- per-session; every POST form carries it
    created_at   INTEGER NOT NULL,
    expires_at   INTEGER NOT NULL,
    -- A token created by the account page, shown on the next page view and
    -- cleared by it ("shown once", and a reload does not resubmit a POST).
    flash_token_name   TEXT,
    flash_token_secret TEXT
);
CREATE INDEX web_sessions_by_account ON web_sessions (account_id);
CREATE INDEX web_sessions_by_expiry ON web_sessions (expires_at);
