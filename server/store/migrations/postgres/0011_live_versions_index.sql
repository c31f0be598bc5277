-- Which packages have a live version: search asks this of up to 1,000
-- matches at once. Without it each check reads the version rows, whose
-- manifest and spec documents make them large (160 ms for 500 packages of
-- 20 versions; 1 ms with the index).
CREATE INDEX versions_live_package ON versions (package_id) WHERE deleted_at IS NULL;
