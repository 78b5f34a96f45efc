-- A memory's live vector was kept twice: in its row and in the event that gave it (2 KB each, most
-- of memory_events' size). An event may now leave `embedding` null with `embedding_live` set: its
-- state's vector is the memory row's current one. Invariant: a live event's vector equals
-- memories.embedding of its memory. Before the row's vector changes or the row goes, the triggers
-- below move the old vector into those events, so the history stays exact (rollback, replay, as_of
-- and counterfactual recall read it through embeddingOfState, shared/memory/history.ts). An erasure
-- deletes the events before the row, so nothing is moved back.
ALTER TABLE memory_events ADD COLUMN embedding_live boolean NOT NULL DEFAULT false;

CREATE FUNCTION memory_events_embedding_replaced() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  UPDATE memory_events e SET embedding = OLD.embedding, embedding_live = false
  WHERE e.tenant_id = OLD.tenant_id AND e.memory_id = OLD.id AND e.embedding_live;
  RETURN NULL;
END $$;

CREATE FUNCTION memory_events_embedding_removed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  UPDATE memory_events e SET embedding = r.embedding, embedding_live = false
  FROM removed r
  WHERE e.tenant_id = r.tenant_id AND e.memory_id = r.id AND e.embedding_live;
  RETURN NULL;
END $$;

CREATE TRIGGER memory_events_embedding_update AFTER UPDATE OF embedding ON memories
  FOR EACH ROW WHEN (OLD.embedding IS DISTINCT FROM NEW.embedding) EXECUTE FUNCTION memory_events_embedding_replaced();
CREATE TRIGGER memory_events_embedding_delete AFTER DELETE ON memories
  REFERENCING OLD TABLE AS removed FOR EACH STATEMENT EXECUTE FUNCTION memory_events_embedding_removed();

-- Existing events whose vector is their memory's live one give up their copy.
UPDATE memory_events e SET embedding = NULL, embedding_live = true
FROM memories m
WHERE e.tenant_id = m.tenant_id AND e.memory_id = m.id AND e.embedding IS NOT NULL AND e.embedding = m.embedding;
