-- Cortex (experimental): per-tenant maintenance config and the last run's stats. A
-- tenant without a row has the defaults (threshold 0.90, decay after 30 days, off).

CREATE TABLE cortex_configs (
  tenant_id text PRIMARY KEY REFERENCES tenants (id) ON DELETE CASCADE,
  enabled boolean NOT NULL DEFAULT false,
  consolidation_enabled boolean NOT NULL DEFAULT true,
  consolidation_threshold real NOT NULL DEFAULT 0.9,
  reinforcement_enabled boolean NOT NULL DEFAULT true,
  decay_enabled boolean NOT NULL DEFAULT true,
  decay_age_days integer NOT NULL DEFAULT 30,
  insight_generation_enabled boolean NOT NULL DEFAULT false,
  last_run_at timestamptz,
  run_stats jsonb NOT NULL DEFAULT '{}'::jsonb,
  updated_at timestamptz NOT NULL
);
CREATE INDEX cortex_configs_enabled_idx ON cortex_configs (last_run_at) WHERE enabled;
