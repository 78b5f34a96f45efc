-- Smaller indexes per memory stored, each read the same way as before.
--
-- A store looks its duplicates up by owner and content hash (queries/store.ts duplicatesOf), never
-- by a range of hashes: a hash index over `owner:hash` holds a 4-byte hash code per memory where
-- the btree held the tenant's text id and the 64-character hex hash (about 48 bytes per memory
-- instead of 160). The store's query names the same expression, the key its content lock takes.
DROP INDEX memories_tenant_hash_idx;
CREATE INDEX memories_content_key_idx ON memories USING hash ((tenant_id || ':' || content_hash));

-- A tenant's memories newest first is a backward scan of an ascending index: new memories land at
-- the end of their tenant's range, where the pages are filled before they split, not at its start,
-- where every split leaves two half-empty pages.
DROP INDEX memories_tenant_created_idx;
CREATE INDEX memories_tenant_created_idx ON memories (tenant_id, created_at, id);
-- A space's memories newest first, likewise.
DROP INDEX memories_space_idx;
CREATE INDEX memories_space_idx ON memories (space_id, created_at) WHERE space_id IS NOT NULL;

-- The create event of one memory is found by (tenant_id, memory_id) in memory_events_state_idx, whose
-- partial predicate covers 'create' and which carries the kind: this index added nothing but bytes.
DROP INDEX memory_events_create_idx;
