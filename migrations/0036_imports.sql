-- Imports (docs/portability.md): the source id of every record an import restored, so importing
-- the same file again restores nothing twice. Ids and hashes only, never content.

CREATE TABLE import_sources (
  tenant_id text NOT NULL,
  -- `bundle:<memory id>`, `mem0:<id>`, `jsonl:<id>`, `text:<sha-256 of the text>`, `space:<id>`, ...
  source_id text NOT NULL,
  -- What it became: a memory or space uuid, a policy id, an agent id; null for what has no id.
  target_id text,
  imported_at timestamptz NOT NULL,
  PRIMARY KEY (tenant_id, source_id)
);
