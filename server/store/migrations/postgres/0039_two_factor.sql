-- A second factor (docs/two-factor.md): an account's TOTP secret
-- (RFC 6238), encrypted with a key derived from the registry's signing
-- secret, so a read of the database alone makes no codes. Pending until
-- the first code confirms it. `last_step` is the time-step of the last
-- code accepted: a code is accepted once (a replay in its window is
-- refused).
CREATE TABLE two_factor (
    account_id   BIGINT NOT NULL PRIMARY KEY REFERENCES accounts (id) ON DELETE CASCADE,
    secret_box   TEXT   NOT NULL, -- hex: 12-byte AES-256-GCM nonce, then ciphertext
    created_at   BIGINT NOT NULL,
    confirmed_at BIGINT,
    last_step    BIGINT
);

-- Recovery codes: ten per confirmed enrolment, shown once, kept as the
-- SHA-256 of the code (they are random, nothing to guess), each used once.
CREATE TABLE two_factor_recovery_codes (
    account_id BIGINT NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    code_hash  TEXT   NOT NULL,
    used_at    BIGINT,
    PRIMARY KEY (account_id, code_hash)
);

-- A token minted with a second factor: a package whose policy requires
-- two-factor takes publishes only from such tokens (or trusted ones).
ALTER TABLE api_tokens ADD COLUMN second_factor BOOLEAN NOT NULL DEFAULT FALSE;
