-- A tenant that grows fast is planned as the few rows it had at the last ANALYZE: with the default
-- scale factors (10% of the table), a table of millions waits for hundreds of thousands of changes,
-- and meanwhile the planner walks the tenant's whole range of an index instead of probing it (seen
-- for a new tenant of 2,000-20,000 memories: keyword postings read with the tenant as the only index
-- condition, 11,000 heap fetches for 53 postings; vector search replaced by an exact scan of the
-- tenant). Statistics now follow 2% of change. Postings are inserted, never updated: vacuum after 2%
-- of inserts too, so their visibility map stays set and keyword reads stay index-only.
ALTER TABLE memories SET (autovacuum_analyze_scale_factor = 0.02, autovacuum_vacuum_insert_scale_factor = 0.02);
ALTER TABLE memory_postings SET (autovacuum_analyze_scale_factor = 0.02, autovacuum_vacuum_insert_scale_factor = 0.02);
