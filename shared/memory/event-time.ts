import { validationError } from '../platform/contract/errors';

/**
 * A memory's event time (`occurred_at`, docs/memories.md#event-time) may lie in the past or, for a
 * planned event, in the future, between the year 1900 and a century from now; outside that it is
 * a mistake (a unit error, a zero date), answered 400 naming the field.
 */
const EARLIEST = Date.UTC(1900, 0, 1);
const AHEAD_MS = 100 * 365.25 * 24 * 3_600_000;

export function occurredAtOf(value: string | null | undefined, now: Date, field = 'occurred_at'): Date | null {
  if (value === null || value === undefined) return null;
  const at = new Date(value);
  if (Number.isNaN(at.getTime())) throw validationError(field, 'must be an ISO 8601 time');
  if (at.getTime() < EARLIEST || at.getTime() > now.getTime() + AHEAD_MS) throw validationError(field, 'must fall between 1900 and a hundred years from now');
  return at;
}

/** An absolute expiry (`expires_at`) is one way to say it, `ttl_seconds` the other; it must lie ahead. */
export function expiryOf(input: { expires_at?: string; ttl_seconds?: number }, now: Date): void {
  if (input.expires_at === undefined) return;
  if (input.ttl_seconds !== undefined) throw validationError('expires_at', 'send expires_at or ttl_seconds, not both');
  if (!(new Date(input.expires_at).getTime() > now.getTime())) throw validationError('expires_at', 'must be in the future');
}
