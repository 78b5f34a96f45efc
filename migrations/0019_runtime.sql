-- Agent runtime: registered agents, capability packs, missions with checkpoints, and
-- supervisor interventions. 0017 and 0018 belong to the governed-actions work.

-- A capability pack names tools an agent may use and the risk of each. `tools` is a JSON array of
-- {name, description}; `risk_levels` maps a tool name to low|medium|high|critical.
CREATE TABLE runtime_capabilities (
  id text PRIMARY KEY,
  tenant_id text NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
  name text NOT NULL,
  description text,
  tools jsonb NOT NULL DEFAULT '[]'::jsonb,
  risk_levels jsonb NOT NULL DEFAULT '{}'::jsonb,
  created_at timestamptz NOT NULL,
  UNIQUE (tenant_id, name)
);

-- An agent's id is the caller's (or a generated agt_...), unique per tenant: the same string an
-- agent writes memories, traces and actions under. `capabilities` holds capability pack names.
CREATE TABLE runtime_agents (
  tenant_id text NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
  agent_id text NOT NULL,
  name text NOT NULL,
  description text,
  provider text NOT NULL,
  model text NOT NULL,
  instructions text,
  capabilities text[] NOT NULL DEFAULT '{}',
  status text NOT NULL CHECK (status IN ('active', 'paused', 'archived')),
  created_at timestamptz NOT NULL,
  updated_at timestamptz NOT NULL,
  PRIMARY KEY (tenant_id, agent_id)
);
CREATE INDEX runtime_agents_list_idx ON runtime_agents (tenant_id, created_at DESC, agent_id DESC);

-- A mission outlives its agent's deletion (it is cancelled then), so no foreign key to the agent.
CREATE TABLE runtime_missions (
  id text PRIMARY KEY,
  tenant_id text NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
  agent_id text NOT NULL,
  goal text NOT NULL,
  constraints text[] NOT NULL DEFAULT '{}',
  success_criteria text[] NOT NULL DEFAULT '{}',
  allowed_capabilities text[] NOT NULL DEFAULT '{}',
  status text NOT NULL CHECK (status IN ('queued', 'running', 'paused', 'completed', 'failed', 'cancelled')),
  state jsonb NOT NULL DEFAULT '{}'::jsonb,
  created_at timestamptz NOT NULL,
  updated_at timestamptz NOT NULL,
  started_at timestamptz,
  ended_at timestamptz
);
CREATE INDEX runtime_missions_list_idx ON runtime_missions (tenant_id, created_at DESC, id DESC);
CREATE INDEX runtime_missions_agent_idx ON runtime_missions (tenant_id, agent_id, created_at DESC, id DESC);

-- `seq` orders checkpoints taken within one clock reading (creation order).
CREATE TABLE runtime_checkpoints (
  id text PRIMARY KEY,
  seq bigint GENERATED ALWAYS AS IDENTITY,
  tenant_id text NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
  mission_id text NOT NULL REFERENCES runtime_missions (id) ON DELETE CASCADE,
  label text NOT NULL,
  state jsonb NOT NULL DEFAULT '{}'::jsonb,
  created_at timestamptz NOT NULL
);
CREATE INDEX runtime_checkpoints_mission_idx ON runtime_checkpoints (tenant_id, mission_id, seq);

-- `effect` says what the intervention did ({type: paused|rolled_back|escalated|rerouted|decided, ...}),
-- null when it only recorded.
CREATE TABLE runtime_interventions (
  id text PRIMARY KEY,
  tenant_id text NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
  intervention_type text NOT NULL,
  mission_id text,
  action_id text,
  agent_id text,
  rationale text,
  effect jsonb,
  created_at timestamptz NOT NULL
);
CREATE INDEX runtime_interventions_list_idx ON runtime_interventions (tenant_id, created_at DESC, id DESC);
