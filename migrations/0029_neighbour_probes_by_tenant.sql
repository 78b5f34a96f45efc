-- The near_duplicate_index maintenance task serves the tenants whose index is behind in turn, the
-- one served longest ago first (shared/memory/cortex.ts, tenantsToProbe): it reads each waiting
-- tenant's latest probe, one index probe per tenant instead of a scan of every probe.
CREATE INDEX memory_neighbour_probes_tenant_idx ON memory_neighbour_probes (tenant_id, probed_at);
