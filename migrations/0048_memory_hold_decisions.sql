-- Held memories follow the approval modes of held actions (docs/governed-memories.md): the rules
-- of an enterprise-mode approval as they stood when the memory was held, and each decision taken so
-- far (enterprise mode collects several), kept on the held row and gone with it.
ALTER TABLE memory_holds ADD COLUMN approval_rules jsonb;
ALTER TABLE memory_holds ADD COLUMN decisions jsonb NOT NULL DEFAULT '[]'::jsonb;
