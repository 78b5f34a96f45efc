-- Keyword postings (migrations/0026) in narrower rows: a lexeme's frequency is at most 256 (the
-- positions a tsvector keeps) and a memory's length at most about 10,000 lexemes (20,000
-- characters of observation and context), so both fit a smallint: 8 bytes less in each heap row
-- and each primary-key entry, where the tenant, the lexeme and the memory take the rest. Postings
-- are inserted and deleted, never updated: the heap is filled whole. The rewrite keeps every row,
-- and BM25 reads the same numbers (functions/memories/queries/search.ts casts them to float8).
ALTER TABLE memory_postings ALTER COLUMN tf TYPE smallint, ALTER COLUMN len TYPE smallint;
ALTER TABLE memory_postings SET (fillfactor = 100);
