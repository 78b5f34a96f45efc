import { assertRange } from '../../shared/platform/contract/params';
import { pastPointInTime, pointInTime } from '../../shared/platform/contract/time';

/** What list and search take of time (docs/memories.md#event-time), read against the request clock. */
export interface TimeQuery {
  occurred_after?: string;
  occurred_before?: string;
  as_of?: string;
}

/**
 * The event-time window and the `as_of` moment of a read: relative times count from the request's
 * `now`; a window that starts after it ends is 422 INVALID_RANGE, an `as_of` in the future 400.
 */
export function timesOf(query: TimeQuery, now: Date) {
  const occurredAfter = query.occurred_after === undefined ? undefined : pointInTime('occurred_after', query.occurred_after, now);
  const occurredBefore = query.occurred_before === undefined ? undefined : pointInTime('occurred_before', query.occurred_before, now);
  assertRange(occurredAfter, occurredBefore, 'occurred_after', 'occurred_before');
  const asOf = query.as_of === undefined ? undefined : pastPointInTime('as_of', query.as_of, now);
  return { occurredAfter, occurredBefore, asOf };
}
