-- A package's publishing policy (docs/publishing-policy.md), set by its
-- owners: publishes only through trusted publishing, a second factor for
-- its owners' sensitive actions, and every new version staged first.
ALTER TABLE packages ADD COLUMN trusted_publishing_only BOOLEAN NOT NULL DEFAULT FALSE;
ALTER TABLE packages ADD COLUMN two_factor_required BOOLEAN NOT NULL DEFAULT FALSE;
ALTER TABLE packages ADD COLUMN staging_required BOOLEAN NOT NULL DEFAULT FALSE;
