-- The decision on a held memory is read back by its approval id (GET /v1/actions/{action_id} for a
-- held memory, docs/governed-memories.md): the held row is gone then, its audit entry answers.
CREATE INDEX audit_log_memory_decision_idx ON audit_log (tenant_id, resource_id) WHERE operation IN ('memory.approved', 'memory.denied');
