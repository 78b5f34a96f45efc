-- A memory's create event keeps in `after` only what its own row does not already say: a store's
-- snapshot leaves out its id, its owner, the three times equal to the event's `at`, and the fields
-- still at their value for a new memory (no recalls, no tags, importance 5, confidence 1, and the
-- nulls). memory_event_after() puts the whole snapshot back, identical to the one stored before
-- (jsonb keeps one order of keys; the times are the event's `at` to the millisecond, as written).
-- Every reader of a snapshot reads it through this function (shared/memory/history.ts eventAfter).
-- A compact snapshot is told by its missing `uuid`, which every whole one holds; rows written
-- before stay whole and are read as they are.
CREATE FUNCTION memory_event_after(kind text, after jsonb, memory_id uuid, tenant_id text, at timestamptz)
RETURNS jsonb LANGUAGE sql STABLE PARALLEL SAFE AS $$
  SELECT CASE WHEN kind = 'create' AND after IS NOT NULL AND NOT after ? 'uuid' THEN
    jsonb_build_object(
      'uuid', 'urn:uuid:' || memory_id,
      'owner_tenant_id', tenant_id,
      'created_at', to_char(at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
      'updated_at', to_char(at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
      'occurred_at', to_char(at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
      'recall_count', 0, 'tags', '[]'::jsonb, 'importance', 5, 'confidence', 1,
      'last_recalled_at', NULL, 'superseded_by', NULL, 'context', NULL, 'agent_id', NULL, 'space_id', NULL, 'expires_at', NULL
    ) || after
  ELSE after END
$$;
