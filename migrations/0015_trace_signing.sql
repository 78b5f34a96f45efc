-- Signed traces: the API that fills the trace tables of 0005.
--
-- A trace records which signing key sealed it, and every key that ever signed keeps its public half
-- here, so a trace stays verifiable after the operator rotates TRACE_SIGNING_KEY (its certificate
-- carries the key of its own key_id). `last_chain_hash` is the chain head a new step extends, read
-- under the trace row's lock instead of the last step; `last_activity_at` finds idle active traces.
ALTER TABLE traces
  ADD COLUMN key_id text,
  ADD COLUMN last_chain_hash text,
  ADD COLUMN last_activity_at timestamptz;
UPDATE traces SET last_activity_at = created_at;
ALTER TABLE traces ALTER COLUMN last_activity_at SET NOT NULL;

UPDATE traces t SET last_chain_hash = s.chain_hash
FROM trace_steps s WHERE s.trace_id = t.id AND s.step_index = t.step_count - 1;

CREATE INDEX traces_agent_idx ON traces (tenant_id, agent_id, created_at DESC, id DESC);
CREATE INDEX traces_idle_idx ON traces (last_activity_at) WHERE status = 'active';

CREATE TABLE trace_signing_keys (
  -- Hex SHA-256 of the public key's SPKI DER: `openssl pkey -pubin -outform DER | sha256sum`.
  key_id text PRIMARY KEY,
  public_key text NOT NULL,
  algorithm text NOT NULL,
  first_used_at timestamptz NOT NULL
);
