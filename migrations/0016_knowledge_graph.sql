-- Knowledge graph (docs/architecture.md#knowledge-graph-entities): entities, subject-predicate-object triples between them, and the
-- entities each memory mentions. 0015 belongs to the trace signing work; 0013 is unused.

-- One row per (name, type) of a tenant. Names are stored trimmed and lowercased; COLLATE "C" makes
-- the unique index also serve case-insensitive prefix search (`name LIKE 'pre%'`) and name order
-- under any database collation.
CREATE TABLE knowledge_entities (
  id uuid PRIMARY KEY,
  tenant_id text NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
  name text COLLATE "C" NOT NULL,
  entity_type text COLLATE "C" NOT NULL,
  metadata jsonb NOT NULL DEFAULT '{}'::jsonb,
  created_at timestamptz NOT NULL,
  UNIQUE (tenant_id, name, entity_type)
);
CREATE INDEX knowledge_entities_type_idx ON knowledge_entities (tenant_id, entity_type, name);

-- A triple keeps its entities; deleting an entity deletes the triples that name it. A triple's
-- source memory is a plain reference: when the memory goes (delete, TTL purge, a rollback that
-- removes it) the triple stays and its source_memory_id becomes null.
CREATE TABLE knowledge_triples (
  id uuid PRIMARY KEY,
  tenant_id text NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
  subject_id uuid NOT NULL REFERENCES knowledge_entities (id) ON DELETE CASCADE,
  predicate text NOT NULL,
  object_id uuid NOT NULL REFERENCES knowledge_entities (id) ON DELETE CASCADE,
  confidence double precision NOT NULL DEFAULT 1 CHECK (confidence BETWEEN 0 AND 1),
  source_memory_id uuid REFERENCES memories (id) ON DELETE SET NULL,
  metadata jsonb NOT NULL DEFAULT '{}'::jsonb,
  created_at timestamptz NOT NULL
);
-- Listing newest first; by predicate; an entity's neighbourhood and the path search, newest first
-- from either end; the source memory filter and the memory delete's ON DELETE SET NULL.
CREATE INDEX knowledge_triples_tenant_created_idx ON knowledge_triples (tenant_id, created_at DESC, id DESC);
CREATE INDEX knowledge_triples_predicate_idx ON knowledge_triples (tenant_id, predicate, created_at DESC, id DESC);
CREATE INDEX knowledge_triples_subject_idx ON knowledge_triples (subject_id, created_at DESC, id DESC) INCLUDE (object_id, tenant_id);
CREATE INDEX knowledge_triples_object_idx ON knowledge_triples (object_id, created_at DESC, id DESC) INCLUDE (subject_id, tenant_id);
CREATE INDEX knowledge_triples_source_memory_idx ON knowledge_triples (source_memory_id, created_at DESC, id DESC)
  WHERE source_memory_id IS NOT NULL;

-- The entities a memory's text names, found when the memory is stored (shared/memory/entities.ts).
-- Goes with either end. The replay history of these links is the memory's `link` events with
-- relation `mentions` (edge_states), like links between memories.
CREATE TABLE memory_entities (
  memory_id uuid NOT NULL REFERENCES memories (id) ON DELETE CASCADE,
  entity_id uuid NOT NULL REFERENCES knowledge_entities (id) ON DELETE CASCADE,
  tenant_id text NOT NULL,
  created_at timestamptz NOT NULL,
  PRIMARY KEY (memory_id, entity_id)
);
CREATE INDEX memory_entities_entity_idx ON memory_entities (entity_id, created_at DESC, memory_id DESC);
