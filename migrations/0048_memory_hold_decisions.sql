-- Held memories decided in enterprise mode collect approvals before the one that completes them
-- (docs/governed-memories.md): each decision taken so far, kept on the held row and gone with it.
ALTER TABLE memory_holds ADD COLUMN decisions jsonb NOT NULL DEFAULT '[]'::jsonb;
