-- The version of what a tenant's memory policies are judged from (docs/governed-memories.md): its
-- policies and its control settings. A store judges with a copy of them kept in the process and
-- checks, in the first statement of its transaction, that this version is still the one it judged
-- with. Every change to those rows takes a new version, whoever writes them (the policy verbs,
-- import, erasure, tenant deletion), from one sequence: a version is never reused, not even for a
-- tenant deleted and created again.
CREATE SEQUENCE governance_version_seq;

CREATE TABLE governance_versions (
  tenant_id text PRIMARY KEY REFERENCES tenants (id) ON DELETE CASCADE,
  version bigint NOT NULL
);

-- Tenants that already have policies or settings start with a version (none is 0, what a store reads for a tenant without a row).
INSERT INTO governance_versions (tenant_id, version)
SELECT tenant_id, nextval('governance_version_seq') FROM (SELECT tenant_id FROM policies UNION SELECT tenant_id FROM control_settings) t;

-- Deferred to commit: the version row is locked last, for the moment of commit only, so two
-- transactions changing policies of one tenant never hold it while waiting for each other's policy
-- rows (no deadlock), and stores only read it. A tenant deleted in the same transaction (its rows
-- go by cascade) gets no row back.
CREATE FUNCTION governance_changed() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  tenant text := CASE WHEN TG_OP = 'DELETE' THEN OLD.tenant_id ELSE NEW.tenant_id END;
BEGIN
  INSERT INTO governance_versions (tenant_id, version)
  SELECT tenant, nextval('governance_version_seq') WHERE EXISTS (SELECT 1 FROM tenants WHERE id = tenant)
  ON CONFLICT (tenant_id) DO UPDATE SET version = EXCLUDED.version;
  IF TG_OP = 'UPDATE' AND OLD.tenant_id IS DISTINCT FROM NEW.tenant_id THEN
    INSERT INTO governance_versions (tenant_id, version)
    SELECT OLD.tenant_id, nextval('governance_version_seq') WHERE EXISTS (SELECT 1 FROM tenants WHERE id = OLD.tenant_id)
    ON CONFLICT (tenant_id) DO UPDATE SET version = EXCLUDED.version;
  END IF;
  RETURN NULL;
END $$;

CREATE CONSTRAINT TRIGGER policies_governance_changed AFTER INSERT OR UPDATE OR DELETE ON policies
  DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION governance_changed();
CREATE CONSTRAINT TRIGGER control_settings_governance_changed AFTER INSERT OR UPDATE OR DELETE ON control_settings
  DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION governance_changed();
