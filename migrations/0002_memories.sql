-- Memories, their event log and links; context spaces; share invitations.

CREATE TABLE context_spaces (
  id uuid PRIMARY KEY,
  owner_tenant_id text NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
  name text NOT NULL,
  description text,
  allowed_agent_ids text[] NOT NULL DEFAULT '{}',
  allowed_tenant_ids text[] NOT NULL DEFAULT '{}',
  tags text[] NOT NULL DEFAULT '{}',
  created_at timestamptz NOT NULL,
  updated_at timestamptz NOT NULL,
  deleted_at timestamptz
);
CREATE INDEX context_spaces_owner_idx ON context_spaces (owner_tenant_id, created_at) WHERE deleted_at IS NULL;
CREATE INDEX context_spaces_allowed_idx ON context_spaces USING gin (allowed_tenant_ids) WHERE deleted_at IS NULL;

CREATE TABLE memories (
  id uuid PRIMARY KEY,
  tenant_id text NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
  observation text NOT NULL,
  tags text[] NOT NULL DEFAULT '{}',
  importance smallint NOT NULL DEFAULT 5 CHECK (importance BETWEEN 1 AND 10),
  confidence real NOT NULL DEFAULT 1,
  recall_count integer NOT NULL DEFAULT 0,
  last_recalled_at timestamptz,
  superseded_by uuid,
  context text,
  agent_id text,
  space_id uuid REFERENCES context_spaces (id),
  content_hash text NOT NULL,
  embedding vector(512) NOT NULL,
  -- Keyword search: English stemming over the observation and its context.
  search_tsv tsvector GENERATED ALWAYS AS (
    to_tsvector('english', observation || ' ' || coalesce(context, ''))
  ) STORED,
  expires_at timestamptz,
  -- Bumped by every write; a PATCH based on an older version is a concurrent write (409).
  version integer NOT NULL DEFAULT 1,
  created_at timestamptz NOT NULL,
  updated_at timestamptz NOT NULL
);
CREATE INDEX memories_tenant_created_idx ON memories (tenant_id, created_at DESC, id DESC);
CREATE INDEX memories_tenant_hash_idx ON memories (tenant_id, content_hash);
CREATE INDEX memories_space_idx ON memories (space_id, created_at DESC) WHERE space_id IS NOT NULL;
CREATE INDEX memories_tags_idx ON memories USING gin (tags);
CREATE INDEX memories_tsv_idx ON memories USING gin (search_tsv);
CREATE INDEX memories_expiry_idx ON memories (expires_at) WHERE expires_at IS NOT NULL;
CREATE INDEX memories_embedding_idx ON memories USING hnsw (embedding vector_cosine_ops);

-- Append-only history: one row per create/update/delete/recall/link, with full snapshots
-- (and the embedding of the state after the change) so any past state can be rebuilt.
CREATE TABLE memory_events (
  id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  tenant_id text NOT NULL,
  memory_id uuid NOT NULL,
  kind text NOT NULL CHECK (kind IN ('create', 'update', 'delete', 'recall', 'link', 'unlink', 'expire', 'rollback')),
  at timestamptz NOT NULL,
  actor text,
  request_id text,
  before jsonb,
  after jsonb,
  embedding vector(512),
  metadata jsonb NOT NULL DEFAULT '{}'::jsonb
);
CREATE INDEX memory_events_tenant_at_idx ON memory_events (tenant_id, at, id);
CREATE INDEX memory_events_memory_idx ON memory_events (tenant_id, memory_id, at, id);

CREATE TABLE memory_edges (
  id uuid PRIMARY KEY,
  tenant_id text NOT NULL,
  source_id uuid NOT NULL REFERENCES memories (id) ON DELETE CASCADE,
  target_id uuid NOT NULL REFERENCES memories (id) ON DELETE CASCADE,
  relation text NOT NULL,
  weight real NOT NULL,
  created_at timestamptz NOT NULL,
  UNIQUE (source_id, target_id, relation)
);
CREATE INDEX memory_edges_target_idx ON memory_edges (target_id);
CREATE INDEX memory_edges_tenant_idx ON memory_edges (tenant_id, created_at);

-- Share invitations: a tag or a space of the owner, for one e-mail address. Only the token's
-- hash is stored; the token is shown at creation and rotation.
CREATE TABLE shares (
  id text PRIMARY KEY,
  owner_tenant_id text NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
  kind text NOT NULL CHECK (kind IN ('tag', 'space')),
  tag text NOT NULL,
  space_id uuid REFERENCES context_spaces (id),
  shared_with_email text NOT NULL,
  permission text NOT NULL CHECK (permission IN ('read', 'write')),
  token_hash text NOT NULL UNIQUE,
  token_prefix text NOT NULL,
  accepted boolean NOT NULL DEFAULT false,
  accepted_by_tenant text REFERENCES tenants (id) ON DELETE SET NULL,
  accepted_at timestamptz,
  created_at timestamptz NOT NULL,
  expires_at timestamptz,
  revoked_at timestamptz
);
CREATE INDEX shares_owner_idx ON shares (owner_tenant_id, created_at);
CREATE INDEX shares_recipient_idx ON shares (accepted_by_tenant) WHERE revoked_at IS NULL;
