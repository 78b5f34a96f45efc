-- Reasoning traces and their hash-chained steps (the traces API fills them), and
-- compensation plans: the reviewable reversal actions for ACTION steps that a rollback window holds.

CREATE TABLE traces (
  id text PRIMARY KEY,
  tenant_id text NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
  agent_id text NOT NULL,
  status text NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'completed', 'failed', 'interrupted')),
  description text,
  tags text[] NOT NULL DEFAULT '{}',
  created_at timestamptz NOT NULL,
  completed_at timestamptz,
  -- Set when the trace is completed and signed.
  integrity_root_hash text,
  signature text,
  signature_algorithm text,
  step_count integer NOT NULL DEFAULT 0,
  signed_at timestamptz
);
CREATE INDEX traces_tenant_idx ON traces (tenant_id, created_at DESC, id DESC);

CREATE TABLE trace_steps (
  id text PRIMARY KEY,
  tenant_id text NOT NULL,
  trace_id text NOT NULL REFERENCES traces (id) ON DELETE CASCADE,
  step_index integer NOT NULL CHECK (step_index >= 0),
  type text NOT NULL CHECK (type IN ('THOUGHT', 'ACTION', 'OBSERVATION', 'OUTPUT', 'ERROR', 'POLICY_CHECK')),
  content text NOT NULL,
  metadata jsonb NOT NULL DEFAULT '{}'::jsonb,
  integrity_hash text NOT NULL,
  previous_chain_hash text,
  chain_hash text NOT NULL,
  was_interrupted boolean NOT NULL DEFAULT false,
  created_at timestamptz NOT NULL,
  UNIQUE (trace_id, step_index)
);
-- Rollback preview, rollback and compensation plans ask for "the ACTION steps of a tenant in a time
-- window"; side-effecting steps are a small share of all steps, so a partial index serves them.
CREATE INDEX trace_steps_actions_idx ON trace_steps (tenant_id, created_at, step_index) WHERE type = 'ACTION';

CREATE TABLE compensation_plans (
  id text PRIMARY KEY,
  tenant_id text NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
  -- Set when a rollback created the plan; null for a plan made through POST /v1/compensations/preview.
  rollback_id text REFERENCES rollbacks (id) ON DELETE CASCADE,
  -- The window (rollback_to, rollback_from]: the plan covers ACTION steps created in it.
  rollback_from timestamptz NOT NULL,
  rollback_to timestamptz NOT NULL,
  status text NOT NULL CHECK (status IN ('pending', 'in_progress', 'completed')),
  action_count integer NOT NULL CHECK (action_count >= 0),
  -- More ACTION steps lay in the window than a plan holds.
  truncated boolean NOT NULL DEFAULT false,
  created_by text,
  created_at timestamptz NOT NULL,
  completed_at timestamptz,
  CHECK (rollback_to <= rollback_from),
  CHECK ((status = 'completed') = (completed_at IS NOT NULL))
);
CREATE INDEX compensation_plans_tenant_idx ON compensation_plans (tenant_id, created_at DESC, id DESC);
CREATE UNIQUE INDEX compensation_plans_rollback_idx ON compensation_plans (rollback_id) WHERE rollback_id IS NOT NULL;

-- One row per ACTION step of the plan, copied from the step (a plan outlives the trace it names).
CREATE TABLE compensation_actions (
  plan_id text NOT NULL REFERENCES compensation_plans (id) ON DELETE CASCADE,
  tenant_id text NOT NULL,
  action_index integer NOT NULL CHECK (action_index >= 0),
  trace_id text NOT NULL,
  step_id text NOT NULL,
  step_index integer NOT NULL,
  agent_id text,
  step_content text NOT NULL,
  step_metadata jsonb NOT NULL DEFAULT '{}'::jsonb,
  step_at timestamptz NOT NULL,
  suggested text NOT NULL,
  status text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'completed', 'failed', 'skipped')),
  detail text,
  acknowledged_at timestamptz,
  acknowledged_by text,
  PRIMARY KEY (plan_id, action_index)
);
