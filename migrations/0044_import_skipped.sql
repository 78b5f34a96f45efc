-- What an import left out on purpose, by why (docs/portability.md#mem0): mem0 items marked deleted
-- or already expired, and graph relations a tier without the knowledge graph cannot hold.
ALTER TABLE imports ADD COLUMN skipped jsonb NOT NULL DEFAULT '{}'::jsonb;
