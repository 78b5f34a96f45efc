-- A memory.created stream event of a store names its memory instead of carrying the whole memory:
-- the same snapshot is the memory's create event in memory_events. Such a row keeps in payload only
-- the rest of the event's data; the body the stream and the webhooks send is put together from the
-- row and the create event when read (shared/jobs/events.ts eventBodySql), identical to the one
-- stored whole before. Rows written before keep their whole body (memory_id null) and are read as
-- they are, until the 30-day retention removes them.
ALTER TABLE events ADD COLUMN memory_id uuid;
