-- Teams: an owner, members with roles, and e-mail-bound single-use invitations.
CREATE TABLE teams (
  id text PRIMARY KEY,
  owner_tenant_id text NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
  name text NOT NULL,
  created_at timestamptz NOT NULL,
  updated_at timestamptz NOT NULL
);
CREATE INDEX teams_owner_idx ON teams (owner_tenant_id);

-- Every member, the owner included (role 'owner'), so "teams I am in" is one index lookup.
CREATE TABLE team_members (
  team_id text NOT NULL REFERENCES teams (id) ON DELETE CASCADE,
  tenant_id text NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
  role text NOT NULL CHECK (role IN ('owner', 'admin', 'member', 'readonly')),
  joined_at timestamptz NOT NULL,
  PRIMARY KEY (team_id, tenant_id)
);
CREATE INDEX team_members_tenant_idx ON team_members (tenant_id);

CREATE TABLE team_invitations (
  id text PRIMARY KEY,
  team_id text NOT NULL REFERENCES teams (id) ON DELETE CASCADE,
  email text NOT NULL,                -- normalized; only a tenant with this verified e-mail may join
  role text NOT NULL CHECK (role IN ('admin', 'member', 'readonly')),
  invited_by text,
  created_at timestamptz NOT NULL,
  expires_at timestamptz NOT NULL,
  used_at timestamptz,
  used_by text
);
CREATE INDEX team_invitations_team_idx ON team_invitations (team_id);
