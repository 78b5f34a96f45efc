-- Keyword search: each tenant's BM25 collection statistics (memory count and total
-- tsvector length) as running totals, so a search over a whole store reads a few rows instead of
-- scanning every memory. Append-only deltas written by triggers in the writing transaction (a
-- rolled-back write leaves none; concurrent writers insert, never update one hot row); a search
-- that finds many rows for its tenant folds them into one (functions/memories/queries.ts).

CREATE TABLE memory_corpus_stats (
  id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  tenant_id text NOT NULL,
  docs bigint NOT NULL,
  lexemes bigint NOT NULL
);
CREATE INDEX memory_corpus_stats_tenant_idx ON memory_corpus_stats (tenant_id) INCLUDE (docs, lexemes);

INSERT INTO memory_corpus_stats (tenant_id, docs, lexemes)
SELECT tenant_id, count(*), coalesce(sum(length(search_tsv)), 0) FROM memories GROUP BY tenant_id;

CREATE FUNCTION memory_corpus_stats_added() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO memory_corpus_stats (tenant_id, docs, lexemes)
  SELECT tenant_id, count(*), coalesce(sum(length(search_tsv)), 0) FROM added GROUP BY tenant_id;
  RETURN NULL;
END $$;

CREATE FUNCTION memory_corpus_stats_removed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO memory_corpus_stats (tenant_id, docs, lexemes)
  SELECT tenant_id, -count(*), -coalesce(sum(length(search_tsv)), 0) FROM removed GROUP BY tenant_id;
  RETURN NULL;
END $$;

-- Only a change of the text moves the totals (recall bookkeeping and links do not fire this).
CREATE FUNCTION memory_corpus_stats_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO memory_corpus_stats (tenant_id, docs, lexemes)
  VALUES (NEW.tenant_id, 0, length(NEW.search_tsv) - length(OLD.search_tsv));
  RETURN NULL;
END $$;

CREATE TRIGGER memory_corpus_stats_insert AFTER INSERT ON memories
  REFERENCING NEW TABLE AS added FOR EACH STATEMENT EXECUTE FUNCTION memory_corpus_stats_added();
CREATE TRIGGER memory_corpus_stats_delete AFTER DELETE ON memories
  REFERENCING OLD TABLE AS removed FOR EACH STATEMENT EXECUTE FUNCTION memory_corpus_stats_removed();
CREATE TRIGGER memory_corpus_stats_update AFTER UPDATE OF observation, context ON memories
  FOR EACH ROW WHEN (length(OLD.search_tsv) <> length(NEW.search_tsv)) EXECUTE FUNCTION memory_corpus_stats_changed();
