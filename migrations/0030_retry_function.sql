-- A statement that finds its transaction must not commit raises serialization_failure (40001), and
-- the unit of work runs the write again (shared/platform/data/unit-of-work.ts). A store's last statement
-- uses it: sent together with its COMMIT, it cannot hand a "no" back to the caller first.
CREATE FUNCTION engram_retry(reason text) RETURNS boolean LANGUAGE plpgsql VOLATILE AS $$
BEGIN
  RAISE EXCEPTION USING ERRCODE = 'serialization_failure', MESSAGE = reason;
END $$;
