-- The live vector's type per runtime, named once: `live_vector`, a domain over what
-- memories.embedding holds. Queries cast a query vector to it, so that `embedding <=> $1::live_vector`
-- is the operator of the HNSW graph's class on every runtime.
--
-- PostgreSQL (and Neon): halfvec(512), as migrations/0050 made it.
-- The embedded default (PGlite, pgvector compiled to WebAssembly): vector(512) again. WebAssembly has
-- no half-precision conversion instruction, so every halfvec distance converts in software: an HNSW
-- insert on halfvec cost six times one on vector there (docs/architecture.md, "The live vector"),
-- and a store through the API four times what it cost before migrations/0050. An embedded database
-- is one process's data: its disk was never the measure. Widening a halfvec is exact.
DO $$
BEGIN
  IF version() LIKE '%wasm32%' THEN
    DROP INDEX memories_embedding_idx;
    -- The trigger's WHEN clause names the column, which cannot change type under it (as in 0050).
    DROP TRIGGER memory_events_embedding_update ON memories;
    ALTER TABLE memories ALTER COLUMN embedding TYPE vector(512) USING embedding::vector(512);
    CREATE TRIGGER memory_events_embedding_update AFTER UPDATE OF embedding ON memories
      FOR EACH ROW WHEN (OLD.embedding IS DISTINCT FROM NEW.embedding) EXECUTE FUNCTION memory_events_embedding_replaced();
    CREATE INDEX memories_embedding_idx ON memories USING hnsw (embedding vector_cosine_ops) WHERE NOT index_pending;
    CREATE DOMAIN live_vector AS vector(512);
  ELSE
    CREATE DOMAIN live_vector AS halfvec(512);
  END IF;
END $$;
