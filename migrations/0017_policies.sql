-- Custom policies: one row per (tenant, name, scope), where the scope is tenant-wide
-- (agent_id NULL) or one agent. The same name may exist tenant-wide and for any number of agents,
-- independently; the expression index makes NULL its own scope value (agent ids are
-- never empty). DELETE is a soft delete: enabled false, version + 1.
CREATE TABLE policies (
  id text PRIMARY KEY,
  tenant_id text NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
  name text NOT NULL,
  agent_id text CHECK (agent_id <> ''),
  description text,
  step_types text[] NOT NULL,
  whitelisted_domains text[] NOT NULL,
  rules jsonb NOT NULL,
  enabled boolean NOT NULL DEFAULT true,
  version integer NOT NULL DEFAULT 1,
  created_at timestamptz NOT NULL,
  updated_at timestamptz NOT NULL
);
CREATE UNIQUE INDEX policies_scope_idx ON policies (tenant_id, name, (coalesce(agent_id, '')));
-- The policy set of an action: the tenant's enabled policies, tenant-wide and of one agent.
CREATE INDEX policies_enabled_idx ON policies (tenant_id, agent_id) WHERE enabled;
