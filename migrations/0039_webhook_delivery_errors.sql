-- A delivery log keeps no text of the receiver's answer (docs/teams-and-webhooks.md#retries-and-redelivery): an error
-- page may quote the event, so a memory's text, and the log outlives the memory's erasure. Drops
-- the excerpts earlier attempts kept after their status ("receiver answered 500: <excerpt>").

UPDATE webhook_deliveries
SET error = split_part(error, ': ', 1)
WHERE error LIKE 'receiver answered %: %' OR error LIKE 'redirect not followed: %';
