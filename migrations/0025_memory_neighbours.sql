-- The near-duplicate index behind eval's conflict_score and Cortex consolidation. Each
-- live memory is probed once in the HNSW graph (and again when its text or space changes): up to
-- three nearest live memories of its space within cosine 0.5 (the lowest threshold the config
-- allows) are kept as pairs. Eval and Cortex then count and group pairs with a join instead of one
-- graph probe per memory per run (at 100k memories, minutes → well under a second). Probes run in
-- the background (maintenance) and for whatever is outstanding when an eval or a run starts.

CREATE TABLE memory_neighbour_probes (
  memory_id uuid PRIMARY KEY REFERENCES memories (id) ON DELETE CASCADE,
  tenant_id text NOT NULL,
  -- What the probe saw: a different hash (new text, new embedding) or space makes it stale.
  content_hash text NOT NULL,
  space_id uuid,
  probed_at timestamptz NOT NULL
);

CREATE TABLE memory_neighbours (
  memory_id uuid NOT NULL REFERENCES memories (id) ON DELETE CASCADE,
  neighbour_id uuid NOT NULL REFERENCES memories (id) ON DELETE CASCADE,
  tenant_id text NOT NULL,
  distance float8 NOT NULL,
  PRIMARY KEY (memory_id, neighbour_id)
);
CREATE INDEX memory_neighbours_neighbour_idx ON memory_neighbours (neighbour_id);
CREATE INDEX memory_neighbours_tenant_idx ON memory_neighbours (tenant_id, distance);
