-- Erasure (docs/security.md#erasure): the receipts of POST /v1/erasures and DELETE /v1/account,
-- and a tombstone per erased memory. Both hold ids, times and counts only, never memory content:
-- the content is gone from every other table in the erasure's own transaction.

CREATE TABLE erasures (
  id text PRIMARY KEY,
  tenant_id text NOT NULL,
  erased_at timestamptz NOT NULL,
  -- The receipt as signed (without its signature): re-serialized with JCS it gives the signed bytes.
  receipt jsonb NOT NULL,
  signature text NOT NULL
);
CREATE INDEX erasures_tenant_idx ON erasures (tenant_id, erased_at DESC, id DESC);

-- Each erased memory and when it lived (first event to the end of its last life, null while it
-- was live at erasure): a rollback to a time inside that span reports it as erased.
CREATE TABLE erased_memories (
  tenant_id text NOT NULL,
  memory_id uuid NOT NULL,
  erasure_id text NOT NULL,
  erased_at timestamptz NOT NULL,
  lived_from timestamptz NOT NULL,
  lived_to timestamptz,
  PRIMARY KEY (tenant_id, memory_id)
);
CREATE INDEX erased_memories_erasure_idx ON erased_memories (erasure_id);
