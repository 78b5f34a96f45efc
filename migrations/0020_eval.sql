-- Eval (experimental): stored eval runs (history, daily limits, drift) and the
-- per-tenant baselines that drive recall_consistency.

CREATE TABLE eval_runs (
  id text PRIMARY KEY,
  tenant_id text NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
  health_score integer NOT NULL,
  breakdown jsonb NOT NULL,
  memory_count integer NOT NULL,
  conflict_count integer NOT NULL,
  stale_count integer NOT NULL,
  min_score real,
  passed boolean,
  drift_detail jsonb,
  created_at timestamptz NOT NULL
);
CREATE INDEX eval_runs_tenant_idx ON eval_runs (tenant_id, created_at DESC, id DESC);
CREATE INDEX eval_runs_created_idx ON eval_runs (created_at);

CREATE TABLE eval_baselines (
  id text PRIMARY KEY,
  tenant_id text NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
  query text NOT NULL,
  expected_observation text NOT NULL,
  expected_score real,
  created_at timestamptz NOT NULL
);
CREATE INDEX eval_baselines_tenant_idx ON eval_baselines (tenant_id, created_at, id);
