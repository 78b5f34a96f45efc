-- A rollback can put back thousands of vectors at once, and inserting each into the HNSW graph
-- inside its transaction costs milliseconds apiece (242 s for 10k changed memories at 100k). Rows a
-- rollback writes are marked index_pending instead: the partial HNSW index leaves them out, every
-- vector search also reads them exactly through the small partial index below, and the
-- vector_index job (shared/vector-index.ts) moves them into the graph a batch at a time.
ALTER TABLE memories ADD COLUMN index_pending boolean NOT NULL DEFAULT false;
DROP INDEX memories_embedding_idx;
CREATE INDEX memories_embedding_idx ON memories USING hnsw (embedding vector_cosine_ops) WHERE NOT index_pending;
CREATE INDEX memories_index_pending_idx ON memories (tenant_id) WHERE index_pending;

-- Every search bumps recall_count on up to `limit` rows. With free room on the page that update is
-- HOT (no index touched; recall columns are not indexed); on full pages it is not, and each one is
-- another insert into every index, the HNSW graph included (58% HOT at 100k memories before this).
ALTER TABLE memories SET (fillfactor = 85);
