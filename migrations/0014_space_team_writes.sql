-- Team writes (docs/architecture.md#consent-for-shared-spaces): a space that grants `team:<team_id>` in allowed_tenant_ids lets members of
-- that team with role owner, admin or member store memories into it (into the space owner's store)
-- when its owner opts in. Off by default, so every existing space keeps its behaviour: granted
-- tenants and teams read, only the owner writes.
ALTER TABLE context_spaces ADD COLUMN team_write boolean NOT NULL DEFAULT false;
