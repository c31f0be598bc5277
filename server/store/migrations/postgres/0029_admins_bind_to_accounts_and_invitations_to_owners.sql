-- Each name of the operator's admin list (AGENTLANG_REGISTRY_ADMINS) is
-- bound, the first time a registry starts with it, to the account that
-- holds the name then, or to none: an account registered under the name
-- afterwards is someone else, and never becomes an admin by it. A bound
-- account keeps its binding whatever later registers.
-- Keep in step with ../sqlite/0029_admins_bind_to_accounts_and_invitations_to_owners.sql.
CREATE TABLE configured_admins (
    normalized_username TEXT    PRIMARY KEY,
    account_id          BIGINT  REFERENCES accounts (id) ON DELETE SET NULL,
    named_at            BIGINT  NOT NULL
);

-- An invitation speaks for its sender only while they own the package:
-- those of owners removed before this rule was kept are void.
DELETE FROM owner_invitations
WHERE invited_by IS NULL
   OR NOT EXISTS (
       SELECT 1 FROM package_owners o
       WHERE o.package_id = owner_invitations.package_id
         AND o.account_id = owner_invitations.invited_by
   );
