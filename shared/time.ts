import { validationError } from './errors';

export interface Clock {
  now(): Date;
}

export const systemClock: Clock = { now: () => new Date() };

/** A clock tests can move; the service only ever reads time through `Clock`. */
export class ManualClock implements Clock {
  private offsetMs = 0;
  now(): Date {
    return new Date(Date.now() + this.offsetMs);
  }
  advance(ms: number): void {
    this.offsetMs += ms;
  }
}

export const iso = (d: Date): string => d.toISOString();
export const isoOrNull = (d: Date | null | undefined): string | null => (d ? d.toISOString() : null);

/**
 * The UTC day of the last date asked about: every request names its period and day several
 * times, and toISOString is the costly part. A date outside that day (or an invalid one, which
 * toISOString rejects) computes afresh.
 */
let lastDay = { from: 0, to: -1, day: '', period: '' };
function utcDay(d: Date) {
  const t = d.getTime();
  if (!(t >= lastDay.from && t < lastDay.to)) {
    const day = d.toISOString().slice(0, 10);
    const from = Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate());
    lastDay = { from, to: from + DAY, day, period: day.slice(0, 7) };
  }
  return lastDay;
}

/** Billing period `YYYY-MM` (UTC). */
export const periodOf = (d: Date): string => utcDay(d).period;
export const dayOf = (d: Date): string => utcDay(d).day;

export function periodResetsAt(d: Date): Date {
  return new Date(Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 1));
}

export const MINUTE = 60_000;
export const HOUR = 60 * MINUTE;
export const DAY = 24 * HOUR;

const RELATIVE = /^\s*(\d{1,6})\s*(minute|minutes|min|hour|hours|h|day|days|d)\s+ago\s*$/i;
const ISO = /^\d{4}-\d{2}-\d{2}(T\d{2}:\d{2}(:\d{2}(\.\d{1,6})?)?(Z|[+-]\d{2}:?\d{2})?)?$/;

/**
 * A point in time given as ISO 8601 (a time without an offset is UTC) or as `N minutes|hours|days
 * ago`. Returns null when it is neither.
 */
export function parsePointInTime(value: string, now: Date): Date | null {
  const relative = RELATIVE.exec(value);
  if (relative) {
    const unit = relative[2].toLowerCase();
    const ms = unit.startsWith('m') ? MINUTE : unit.startsWith('h') ? HOUR : DAY;
    return new Date(now.getTime() - Number(relative[1]) * ms);
  }
  if (!ISO.test(value.trim())) return null;
  const text = /T.*(Z|[+-]\d{2}:?\d{2})$/.test(value) || !value.includes('T') ? value : `${value}Z`;
  const t = Date.parse(text);
  return Number.isNaN(t) || !isCalendarDate(value) ? null : new Date(t);
}

/** A point in time the caller looks back to: unparseable or in the future is 400 naming `field`. */
export function pastPointInTime(field: string, value: string, now: Date): Date {
  const at = parsePointInTime(value, now);
  if (!at) throw validationError(field, 'must be an ISO 8601 time or "N minutes|hours|days ago"');
  if (at.getTime() > now.getTime()) throw validationError(field, 'must not be in the future');
  return at;
}

/** Date.parse rolls 2026-02-30 over to March 2 and accepts hour 24; a user who wrote that made a mistake. */
function isCalendarDate(value: string): boolean {
  const [y, m, d] = value.trim().slice(0, 10).split('-').map(Number);
  const hour = Number(/T(\d{2})/.exec(value)?.[1] ?? 0);
  return m >= 1 && m <= 12 && d >= 1 && d <= new Date(Date.UTC(y, m, 0)).getUTCDate() && hour <= 23;
}
