-- Imports as jobs (docs/portability.md#large-imports): every import that writes is an `imports` row
-- with its counts and per-line errors; its valid records wait in `import_lines` until a chunk stores
-- them, in the same transaction that deletes them. A file of more than 10,000 lines is stored by a
-- background job, a slice at a time. The staged lines hold content: erasure and account deletion
-- reach them (docs/security.md#erasure).

CREATE TABLE imports (
  id text PRIMARY KEY,
  tenant_id text NOT NULL,
  format text NOT NULL,
  -- receiving (the body is being read), queued, running, completed, failed (the file was refused)
  status text NOT NULL,
  lines integer NOT NULL DEFAULT 0,
  valid integer NOT NULL DEFAULT 0,
  staged integer NOT NULL DEFAULT 0,
  processed integer NOT NULL DEFAULT 0,
  stored jsonb NOT NULL DEFAULT '{}'::jsonb,
  already_imported integer NOT NULL DEFAULT 0,
  duplicates integer NOT NULL DEFAULT 0,
  skipped_webhooks integer NOT NULL DEFAULT 0,
  failed integer NOT NULL DEFAULT 0,
  erased integer NOT NULL DEFAULT 0,
  -- The first 1,000 per-line errors ({line, code, message}; messages never quote content).
  errors jsonb NOT NULL DEFAULT '[]'::jsonb,
  errors_total integer NOT NULL DEFAULT 0,
  created_at timestamptz NOT NULL,
  updated_at timestamptz NOT NULL,
  completed_at timestamptz
);
CREATE INDEX imports_tenant_idx ON imports (tenant_id, created_at DESC, id DESC);

CREATE TABLE import_lines (
  tenant_id text NOT NULL,
  import_id text NOT NULL REFERENCES imports (id) ON DELETE CASCADE,
  line integer NOT NULL,
  kind text NOT NULL,
  source text NOT NULL,
  -- The parsed record: a memory's store body (and the source of its space), or a bundle record.
  record jsonb NOT NULL,
  PRIMARY KEY (tenant_id, import_id, line)
);
-- A source id twice in one file is staged once: the later line is a duplicate.
CREATE UNIQUE INDEX import_lines_source_idx ON import_lines (tenant_id, import_id, source);
