-- A memory's live vector as halfvec(512): 1 KB inline in the row (STORAGE PLAIN) instead of a 2 KB
-- out-of-line TOAST value, and an HNSW graph of half the size. The history keeps vector(512): an
-- event that holds a copy (memory_events.embedding) widens the halfvec exactly, and the triggers of
-- migrations/0045 copy it by assignment. Query vectors are cast to halfvec to use the index
-- (shared/memory/vector-search.ts). Rounding to half precision moves a cosine by about 1e-3 at most.
DROP INDEX memories_embedding_idx;
-- The trigger's WHEN clause names the column, which cannot change type under it.
DROP TRIGGER memory_events_embedding_update ON memories;
ALTER TABLE memories ALTER COLUMN embedding TYPE halfvec(512) USING embedding::halfvec(512);
ALTER TABLE memories ALTER COLUMN embedding SET STORAGE PLAIN;
CREATE TRIGGER memory_events_embedding_update AFTER UPDATE OF embedding ON memories
  FOR EACH ROW WHEN (OLD.embedding IS DISTINCT FROM NEW.embedding) EXECUTE FUNCTION memory_events_embedding_replaced();
CREATE INDEX memories_embedding_idx ON memories USING hnsw (embedding halfvec_cosine_ops) WHERE NOT index_pending;
