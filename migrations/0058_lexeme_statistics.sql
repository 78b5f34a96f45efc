-- A big tenant's keyword search counted every posting of its words on each query (an index-only
-- walk of tens of thousands of entries for a common word) to learn their document frequencies.
-- Those counts are now kept per (tenant, lexeme) for the memories up to a mark, and the query counts
-- only the postings after it: the tail of each word's range in the postings key (tenant, lexeme,
-- memory). Memory ids are UUIDv7, so the tail is what was stored since the mark.
--
-- The maintenance moves the mark forward (memory_lexeme_fold). Exactness rests on one rule: a
-- memory at or below its tenant's mark is counted in memory_lexeme_stats, one above it is not. The
-- writers (the postings triggers) hold the tenant's fold lock shared until they commit, and a fold
-- takes it exclusive: it waits for the memories being written and sees them, and a writer that
-- comes after it compares its memory with the new mark (an import keeping its ids, or a memory whose
-- id was taken before the fold and written after, is counted by the writer itself). Deletions and
-- changed texts of memories at or below the mark are subtracted and added by the writer. A
-- statistic's largest frequency and shortest memory are only ever widened: they bound a word's
-- score (keyword-stages.ts), and stay valid bounds after deletions.
--
-- The lock is the two-key advisory lock (7261058, tenant_no), apart from the one-key locks.

CREATE TABLE memory_lexeme_stats (
  tenant_no integer NOT NULL,
  df integer NOT NULL,
  max_tf smallint NOT NULL,
  min_len smallint NOT NULL,
  lexeme text NOT NULL,
  CONSTRAINT memory_lexeme_stats_pkey PRIMARY KEY (tenant_no, lexeme)
);

CREATE TABLE memory_lexeme_folds (
  tenant_no integer PRIMARY KEY,
  -- The largest memory id counted in memory_lexeme_stats.
  through uuid NOT NULL
);

-- Adds (sign 1) or subtracts (sign -1) the lexemes of the memories `ids` of `n` (tsvectors `tsvs`)
-- that are at or below the tenant's mark.
CREATE FUNCTION memory_lexeme_count(n integer, ids uuid[], tsvs tsvector[], sign integer) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO memory_lexeme_stats AS s (tenant_no, lexeme, df, max_tf, min_len)
  SELECT n, u.lexeme, sign * count(*), max(coalesce(array_length(u.positions, 1), 1)), min(length(d.tsv))
  FROM unnest(ids, tsvs) d(id, tsv) JOIN memory_lexeme_folds f ON f.tenant_no = n AND d.id <= f.through, unnest(d.tsv) u
  GROUP BY u.lexeme
  ON CONFLICT (tenant_no, lexeme) DO UPDATE
    SET df = s.df + excluded.df, max_tf = greatest(s.max_tf, excluded.max_tf), min_len = least(s.min_len, excluded.min_len);
END $$;

CREATE OR REPLACE FUNCTION memory_postings_added() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE tenant_rows record;
BEGIN
  FOR tenant_rows IN
    SELECT t.tenant_no, array_agg(a.id) AS ids, array_agg(a.search_tsv) AS tsvs
    FROM added a JOIN tenants t ON t.id = a.tenant_id GROUP BY t.tenant_no ORDER BY t.tenant_no
  LOOP
    PERFORM pg_advisory_xact_lock_shared(7261058, tenant_rows.tenant_no);
    PERFORM memory_lexeme_count(tenant_rows.tenant_no, tenant_rows.ids, tenant_rows.tsvs, 1);
  END LOOP;
  INSERT INTO memory_postings (tenant_no, memory_id, tf, len, lexeme)
  SELECT t.tenant_no, a.id, coalesce(array_length(u.positions, 1), 1), length(a.search_tsv), u.lexeme
  FROM added a JOIN tenants t ON t.id = a.tenant_id, unnest(a.search_tsv) u;
  RETURN NULL;
END $$;

CREATE OR REPLACE FUNCTION memory_postings_removed() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE tenant_rows record;
BEGIN
  FOR tenant_rows IN
    SELECT t.tenant_no, array_agg(r.id) AS ids, array_agg(r.search_tsv) AS tsvs
    FROM removed r JOIN tenants t ON t.id = r.tenant_id GROUP BY t.tenant_no ORDER BY t.tenant_no
  LOOP
    PERFORM pg_advisory_xact_lock_shared(7261058, tenant_rows.tenant_no);
    PERFORM memory_lexeme_count(tenant_rows.tenant_no, tenant_rows.ids, tenant_rows.tsvs, -1);
  END LOOP;
  DELETE FROM memory_postings p
  USING (SELECT t.tenant_no, r.id, unnest(tsvector_to_array(r.search_tsv)) AS lexeme FROM removed r JOIN tenants t ON t.id = r.tenant_id) g
  WHERE p.tenant_no = g.tenant_no AND p.lexeme = g.lexeme AND p.memory_id = g.id;
  RETURN NULL;
END $$;

CREATE OR REPLACE FUNCTION memory_postings_changed() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE n integer := (SELECT tenant_no FROM tenants WHERE id = NEW.tenant_id);
BEGIN
  PERFORM pg_advisory_xact_lock_shared(7261058, n);
  PERFORM memory_lexeme_count(n, ARRAY[OLD.id], ARRAY[OLD.search_tsv], -1);
  PERFORM memory_lexeme_count(n, ARRAY[NEW.id], ARRAY[NEW.search_tsv], 1);
  DELETE FROM memory_postings p
  WHERE p.tenant_no = n AND p.lexeme = ANY (tsvector_to_array(OLD.search_tsv)) AND p.memory_id = OLD.id;
  INSERT INTO memory_postings (tenant_no, memory_id, tf, len, lexeme)
  SELECT n, NEW.id, coalesce(array_length(u.positions, 1), 1), length(NEW.search_tsv), u.lexeme
  FROM unnest(NEW.search_tsv) u;
  RETURN NULL;
END $$;

CREATE OR REPLACE FUNCTION memory_postings_tenant_deleted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  DELETE FROM memory_postings WHERE tenant_no = OLD.tenant_no;
  DELETE FROM memory_lexeme_stats WHERE tenant_no = OLD.tenant_no;
  DELETE FROM memory_lexeme_folds WHERE tenant_no = OLD.tenant_no;
  RETURN OLD;
END $$;

-- Counts the tenant's next memories after its mark, at most `at_most` of them, into
-- memory_lexeme_stats and moves the mark to the last one; nothing when fewer than `at_least` are
-- there. Each statement of a function sees what committed before it started: the ones after the
-- lock see every memory whose writer held the lock. Returns how many memories it counted.
CREATE FUNCTION memory_lexeme_fold(n integer, at_least integer, at_most integer) RETURNS integer LANGUAGE plpgsql AS $$
DECLARE
  tenant text := (SELECT id FROM tenants WHERE tenant_no = n);
  mark uuid := coalesce((SELECT through FROM memory_lexeme_folds WHERE tenant_no = n), '00000000-0000-0000-0000-000000000000');
  upto uuid;
  counted integer;
BEGIN
  IF (SELECT count(*) FROM (SELECT 1 FROM memories WHERE tenant_id = tenant AND id > mark LIMIT at_least) x) < at_least THEN
    RETURN 0;
  END IF;
  PERFORM pg_advisory_xact_lock(7261058, n);
  mark := coalesce((SELECT through FROM memory_lexeme_folds WHERE tenant_no = n), '00000000-0000-0000-0000-000000000000');
  -- (uuid has no max aggregate)
  SELECT (array_agg(id ORDER BY id DESC))[1], count(*) INTO upto, counted FROM (SELECT id FROM memories WHERE tenant_id = tenant AND id > mark ORDER BY id LIMIT at_most) x;
  IF upto IS NULL THEN
    RETURN 0;
  END IF;
  INSERT INTO memory_lexeme_stats AS s (tenant_no, lexeme, df, max_tf, min_len)
  SELECT n, u.lexeme, count(*), max(coalesce(array_length(u.positions, 1), 1)), min(length(m.search_tsv))
  FROM memories m, unnest(m.search_tsv) u
  WHERE m.tenant_id = tenant AND m.id > mark AND m.id <= upto
  GROUP BY u.lexeme
  ON CONFLICT (tenant_no, lexeme) DO UPDATE
    SET df = s.df + excluded.df, max_tf = greatest(s.max_tf, excluded.max_tf), min_len = least(s.min_len, excluded.min_len);
  INSERT INTO memory_lexeme_folds (tenant_no, through) VALUES (n, upto)
  ON CONFLICT (tenant_no) DO UPDATE SET through = excluded.through;
  RETURN counted;
END $$;
