-- Governed actions and approvals. 0017 holds the custom policies.

-- One row per submitted action; its id is also its approval id. `status` moves along:
-- allowed | blocked | pending_review → approved | denied → executed | failed (an allowed action may
-- report executed | failed too). `outcome` is what evaluation decided (in shadow mode the would-be
-- status, while `status` is allowed). `reviewable` marks actions that were ever pending review:
-- the approval queue. `last_seq` is the sequence number of the latest audit entry about the action
-- in its tenant's chain: the queue is ordered by it. `approval_mode` and `approval_rules` are the
-- tenant's settings when the action was submitted, so a later settings change does not move the
-- goal posts of a pending decision.
CREATE TABLE actions (
  id text PRIMARY KEY,
  tenant_id text NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
  agent_id text,
  action text NOT NULL,
  connector text,
  operation text NOT NULL,
  params jsonb NOT NULL,
  status text NOT NULL,
  outcome text NOT NULL,
  evaluation_mode text NOT NULL,
  approval_mode text,
  approval_rules jsonb,
  policy_result jsonb NOT NULL,
  risk_score double precision,
  violation_count integer NOT NULL DEFAULT 0,
  reviewable boolean NOT NULL,
  submitted_at timestamptz NOT NULL,
  submitted_by text,
  decided_at timestamptz,
  reason text,
  result_detail jsonb,
  result_at timestamptz,
  last_seq bigint NOT NULL
);
-- The approval queue (all, or one status), in audit order.
CREATE INDEX actions_queue_idx ON actions (tenant_id, last_seq) WHERE reviewable;
CREATE INDEX actions_queue_status_idx ON actions (tenant_id, status, last_seq) WHERE reviewable;
-- Expiry: pending actions, oldest first, across tenants (maintenance).
CREATE INDEX actions_pending_idx ON actions (submitted_at) WHERE status = 'pending_review';
-- The dashboard's window and an agent's violation history.
CREATE INDEX actions_submitted_idx ON actions (tenant_id, submitted_at);
CREATE INDEX actions_agent_idx ON actions (tenant_id, agent_id, submitted_at);

-- One row per decision on an action (enterprise mode accumulates several). `tenant_id` is the
-- action's tenant; the approver may be another tenant (a team member).
CREATE TABLE action_decisions (
  id text PRIMARY KEY,
  tenant_id text NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
  action_id text NOT NULL REFERENCES actions (id) ON DELETE CASCADE,
  approver_tenant_id text NOT NULL,
  approver_key_id text,
  approver_id text NOT NULL,
  approver_role text,
  decision text NOT NULL,
  reason text,
  created_at timestamptz NOT NULL
);
CREATE INDEX action_decisions_action_idx ON action_decisions (action_id, created_at);

-- A tenant's approval and evaluation settings; no row means the defaults.
CREATE TABLE control_settings (
  tenant_id text PRIMARY KEY REFERENCES tenants (id) ON DELETE CASCADE,
  approval_mode text NOT NULL,
  evaluation_mode text NOT NULL,
  min_approvals integer NOT NULL,
  require_manager boolean NOT NULL,
  allowed_roles text[] NOT NULL,
  updated_at timestamptz NOT NULL
);

-- An action's audit trail (explain): its entries in its tenant's chain, in order.
CREATE INDEX audit_log_action_idx ON audit_log (tenant_id, resource_id, seq) WHERE resource_type = 'action';
