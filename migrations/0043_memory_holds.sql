-- Governed memory writes (docs/governed-memories.md): a memory a policy holds waits here, outside
-- the memories table, so no read path (search, list, context, export, the vector index, duplicates,
-- auto-links, history) can see it. `id` is the memory id it gets when approved and the approval id;
-- `input` is the store body as the writer's key pinned it, `source` the provenance the server set.
-- Approve stores it through the normal store path as a write of `key_id`; deny deletes the row.
CREATE TABLE memory_holds (
  id uuid PRIMARY KEY,
  tenant_id text NOT NULL,
  key_id text NOT NULL,
  restriction jsonb,
  agent_id text,
  input jsonb NOT NULL,
  source jsonb NOT NULL,
  trust text NOT NULL CHECK (trust IN ('verified', 'agent', 'external')),
  policy_result jsonb NOT NULL,
  risk_score double precision,
  approval_mode text NOT NULL CHECK (approval_mode IN ('solo', 'team', 'enterprise')),
  created_at timestamptz NOT NULL
);
CREATE INDEX memory_holds_tenant_idx ON memory_holds (tenant_id, created_at, id);

-- The built-in MemoryInjection policy (holds common prompt-injection and credential shapes in
-- memories that are not `verified`) is off until the account turns it on.
ALTER TABLE control_settings ADD COLUMN memory_guard boolean NOT NULL DEFAULT false;
