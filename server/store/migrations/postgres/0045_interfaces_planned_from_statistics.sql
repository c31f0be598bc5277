-- Which versions provide an interface (`interfaces::providing_versions`,
-- read by every first resolve of a generation) is asked as
-- `spec->'provides' IS NOT NULL`. PostgreSQL keeps no statistics of that
-- expression, so it guessed that 40% of all versions match, and at
-- 2,000,000 versions planned a parallel scan of every row and its spec
-- instead of the partial index `versions_providing_interfaces` (0034):
-- 12 s, and every resolve waiting for it ran out its deadline. These
-- statistics give the expression's null fraction, which makes the partial
-- index the plan (0.04 ms). SQLite names the index in the query.
CREATE STATISTICS versions_provides ON (spec->'provides') FROM versions;
ANALYZE versions;
