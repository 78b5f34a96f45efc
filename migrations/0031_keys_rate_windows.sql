-- Request windows that belong to no tenant (verification attempts per client address and per
-- e-mail) on Postgres without Redis: usage_counters rows belong to a tenant. Expired rows are purged
-- by maintenance.
CREATE TABLE rate_windows (
  subject text NOT NULL,
  window_start timestamptz NOT NULL,
  hits integer NOT NULL,
  expires_at timestamptz NOT NULL,
  PRIMARY KEY (subject, window_start)
);
CREATE INDEX rate_windows_expiry_idx ON rate_windows (expires_at);
