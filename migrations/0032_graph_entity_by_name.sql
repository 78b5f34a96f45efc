-- A knowledge entity is its lowercase name within the tenant, whatever type a triple gives or omits:
-- keyed by (name, type), a triple naming "acme corp" without a type made a second entity beside the
-- typed one, and neighbourhoods, paths and the delete cascade each saw half of the graph.
--
-- Duplicates are merged into one entity per (tenant, name): the one with a type of its own (not the
-- default `concept`) if any, else the oldest. Triples, memory links and the replay intervals of those
-- links move to it; the others are then deleted.
CREATE TEMPORARY TABLE entity_merge ON COMMIT DROP AS
  SELECT d.id AS dropped, d.keeper
  FROM (
    SELECT id, first_value(id) OVER (PARTITION BY tenant_id, name ORDER BY (entity_type = 'concept'), created_at, id) AS keeper
    FROM knowledge_entities
  ) d
  WHERE d.id <> d.keeper;

UPDATE knowledge_triples t SET subject_id = m.keeper FROM entity_merge m WHERE t.subject_id = m.dropped;
UPDATE knowledge_triples t SET object_id = m.keeper FROM entity_merge m WHERE t.object_id = m.dropped;

INSERT INTO memory_entities (memory_id, entity_id, tenant_id, created_at)
  SELECT me.memory_id, m.keeper, me.tenant_id, min(me.created_at)
  FROM memory_entities me JOIN entity_merge m ON m.dropped = me.entity_id
  GROUP BY me.memory_id, m.keeper, me.tenant_id
ON CONFLICT (memory_id, entity_id) DO UPDATE SET created_at = least(memory_entities.created_at, EXCLUDED.created_at);

UPDATE edge_states s SET target_id = m.keeper FROM entity_merge m WHERE s.relation = 'mentions' AND s.target_id = m.dropped;

DELETE FROM knowledge_entities e USING entity_merge m WHERE e.id = m.dropped;

-- The unique name index also serves case-insensitive prefix search and name order (COLLATE "C").
ALTER TABLE knowledge_entities DROP CONSTRAINT knowledge_entities_tenant_id_name_entity_type_key;
ALTER TABLE knowledge_entities ADD CONSTRAINT knowledge_entities_tenant_id_name_key UNIQUE (tenant_id, name);
