-- Certificates that sign everything they show (docs/change-control.md#the-hashes). A trace keeps the
-- certificate version it was started with: version 1 (every trace before this migration) hashes a
-- step without its created_at and signs only the root hash; version 2 hashes every field of a step
-- and adds certificate_signature, over the whole certificate, written when the trace is sealed.
ALTER TABLE traces ADD COLUMN certificate_version integer NOT NULL DEFAULT 1;
ALTER TABLE traces ALTER COLUMN certificate_version SET DEFAULT 2;
ALTER TABLE traces ADD COLUMN certificate_signature text;
