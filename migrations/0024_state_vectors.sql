-- Counterfactual recall (GET /v1/replay/recall) ranks every memory present at a past moment by the
-- cosine of the embedding it had then. Read from memory_events, each of those 2 KB vectors is an
-- out-of-line TOAST fetch (and half of them a search for the latest earlier embedding): 2 s at 80k
-- memories. This table keeps, per state event, that embedding normalized and rounded to halfvec,
-- stored inline (STORAGE PLAIN): a tenant's rows are one short sequential read. It only preselects:
-- candidates within a proven error margin of the top k are re-ranked with the exact vectors, so the
-- answer is the one the event log gives. A state's embedding never changes once written, so rows
-- are never updated; they are filled on demand by recall itself (functions/replay/queries.ts).
CREATE TABLE state_vectors (
  tenant_id text NOT NULL,
  event_id bigint NOT NULL,   -- a state event (memory_states.event_id)
  unit halfvec(512),          -- l2_normalize(embedding of that state)::halfvec; null when it has none
  PRIMARY KEY (tenant_id, event_id)
);
ALTER TABLE state_vectors ALTER COLUMN unit SET STORAGE PLAIN;
