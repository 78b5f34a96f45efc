-- Where each memory came from and how far it is trusted (docs/memories.md#provenance-and-trust), and
-- when what it records happened in the world (`occurred_at`; null means its `created_at`). Set by
-- the server on every write; rows written before this migration are the account's own (`user`,
-- `verified`), which is what every write was then.
ALTER TABLE memories
  ADD COLUMN source_kind text NOT NULL DEFAULT 'user' CHECK (source_kind IN ('user', 'agent', 'tool', 'import', 'share', 'system')),
  ADD COLUMN source_via text NOT NULL DEFAULT 'api' CHECK (source_via IN ('api', 'mcp', 'console', 'import', 'job')),
  ADD COLUMN source_key_id text,
  ADD COLUMN source_ref text,
  ADD COLUMN trust text NOT NULL DEFAULT 'verified' CHECK (trust IN ('verified', 'agent', 'external')),
  ADD COLUMN occurred_at timestamptz;
