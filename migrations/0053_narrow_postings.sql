-- Keyword postings (migrations/0026) in narrower rows. Each posting is a heap row and a primary-key
-- entry holding the tenant, the lexeme and the memory; the tenant's text id (27 bytes) was the
-- widest part of both. A tenant now has a number (tenants.tenant_no, never reused: an identity),
-- and its postings are keyed by that number: one tenant's postings are still one range of the
-- key, under the tenant alone. A lexeme's frequency is at most 256 (the positions a tsvector
-- keeps) and a memory's length at most about 10,000 lexemes (20,000 characters of observation and
-- context): both fit a smallint. Columns in the order that wastes no alignment. Postings are
-- inserted and deleted, never updated: the heap is filled whole. BM25 reads the same numbers.

ALTER TABLE tenants ADD COLUMN tenant_no integer GENERATED ALWAYS AS IDENTITY;
ALTER TABLE tenants ADD CONSTRAINT tenants_tenant_no_key UNIQUE (tenant_no);

CREATE TABLE memory_postings_narrow (
  tenant_no integer NOT NULL,
  memory_id uuid NOT NULL,
  tf smallint NOT NULL,
  len smallint NOT NULL,
  lexeme text NOT NULL,
  -- tf and len in the index: a query reads its postings index-only, never the heap.
  CONSTRAINT memory_postings_narrow_pkey PRIMARY KEY (tenant_no, lexeme, memory_id) INCLUDE (tf, len)
) WITH (fillfactor = 100, autovacuum_analyze_scale_factor = 0.02, autovacuum_vacuum_insert_scale_factor = 0.02);

-- The same postings, rewritten under the lock on memories that stops writers meanwhile.
LOCK TABLE memories IN SHARE MODE;
INSERT INTO memory_postings_narrow (tenant_no, memory_id, tf, len, lexeme)
SELECT t.tenant_no, p.memory_id, p.tf, p.len, p.lexeme FROM memory_postings p JOIN tenants t ON t.id = p.tenant_id;
DROP TABLE memory_postings;
ALTER TABLE memory_postings_narrow RENAME TO memory_postings;
ALTER TABLE memory_postings RENAME CONSTRAINT memory_postings_narrow_pkey TO memory_postings_pkey;

CREATE OR REPLACE FUNCTION memory_postings_added() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO memory_postings (tenant_no, memory_id, tf, len, lexeme)
  SELECT t.tenant_no, a.id, coalesce(array_length(u.positions, 1), 1), length(a.search_tsv), u.lexeme
  FROM added a JOIN tenants t ON t.id = a.tenant_id, unnest(a.search_tsv) u;
  RETURN NULL;
END $$;

-- Found through the primary key: the removed row's own lexemes name its postings. A tenant's
-- deletion removes its postings first (below): its rows are gone when this runs.
CREATE OR REPLACE FUNCTION memory_postings_removed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  DELETE FROM memory_postings p
  USING (SELECT t.tenant_no, r.id, unnest(tsvector_to_array(r.search_tsv)) AS lexeme FROM removed r JOIN tenants t ON t.id = r.tenant_id) g
  WHERE p.tenant_no = g.tenant_no AND p.lexeme = g.lexeme AND p.memory_id = g.id;
  RETURN NULL;
END $$;

CREATE OR REPLACE FUNCTION memory_postings_changed() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE n integer := (SELECT tenant_no FROM tenants WHERE id = NEW.tenant_id);
BEGIN
  DELETE FROM memory_postings p
  WHERE p.tenant_no = n AND p.lexeme = ANY (tsvector_to_array(OLD.search_tsv)) AND p.memory_id = OLD.id;
  INSERT INTO memory_postings (tenant_no, memory_id, tf, len, lexeme)
  SELECT n, NEW.id, coalesce(array_length(u.positions, 1), 1), length(NEW.search_tsv), u.lexeme
  FROM unnest(NEW.search_tsv) u;
  RETURN NULL;
END $$;

CREATE FUNCTION memory_postings_tenant_deleted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  DELETE FROM memory_postings WHERE tenant_no = OLD.tenant_no;
  RETURN OLD;
END $$;

CREATE TRIGGER memory_postings_tenant_delete BEFORE DELETE ON tenants
  FOR EACH ROW EXECUTE FUNCTION memory_postings_tenant_deleted();
