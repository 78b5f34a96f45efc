-- What a cosine distance costs, told to the planner. pgvector declares cosine_distance at
-- the default COST 1 (one cpu_operator_cost, an integer comparison), but computing it on a stored
-- embedding means detoasting the 2 KB vector (two TOAST chunks, found through the TOAST index) and a
-- 512-term dot product: about 3-5 µs a row here, hundreds of times what the planner assumed. So for
-- a tenant of 2,000-10,000 memories it chose an exact scan of every row over the HNSW index, and a
-- semantic search took 12 ms at 3,000 memories and 22 ms at 6,000, against 2.5 ms at 1,000 and
-- 2.8 ms at 12,000 (test/bench/search.ts and a tenant per size). Declared at 100 (0.25 cost units
-- a row, about a page read per 4 rows), the exact scan wins only where it is cheap: a small tenant,
-- or a tenant with a small share of a large table, where the graph walk would visit mostly other
-- tenants' rows. Searches at 3,000 and 6,000 memories now take 2.4 and 3.2 ms.
--
-- Only the function's owner may change it. Where the extension's functions belong to another role
-- (a managed service whose trusted extensions the bootstrap superuser owns), the planner keeps
-- pgvector's default and this migration says so instead of failing.
DO $$
BEGIN
  ALTER FUNCTION cosine_distance(vector, vector) COST 100;
EXCEPTION WHEN insufficient_privilege THEN
  RAISE NOTICE 'cosine_distance(vector, vector) keeps its declared cost: % (see migrations/0028)', SQLERRM;
END $$;
