import { validationError } from './errors';

export interface Clock {
  now(): Date;
}

export const systemClock: Clock = { now: () => new Date() };

/**
 * A frozen clock for tests: time stands still until a test sets or advances it, so a test can
 * assert exact timestamps. The service only ever reads time through `Clock`.
 */
export class ManualClock implements Clock {
  private at: number;
  constructor(start: Date | string | number = Date.now()) {
    this.at = new Date(start).getTime();
  }
  now(): Date {
    return new Date(this.at);
  }
  set(at: Date | string | number): void {
    this.at = new Date(at).getTime();
  }
  advance(ms: number): void {
    this.at += ms;
  }
}

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
// ISO 8601 date or date-time; a date-time without an offset is read as UTC (as every timestamp here).
const ISO_8601 = /^(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2})(?::(\d{2})(?:[.,](\d{1,9}))?)?(Z|([+-])(\d{2}):?(\d{2})?)?)?$/i;

/**
 * Strict ISO 8601, calendar-checked: 2026-02-30, hour 24 and year 0 are refused (Date.parse would
 * roll the first over to March and accept the others). Returns null when it is not one.
 */
export function parseTimestamp(value: string): Date | null {
  const m = ISO_8601.exec(value.trim());
  if (!m) return null;
  const [, y, mo, d, h = '0', mi = '0', s = '0', frac = '', zone, sign, oh = '0', om = '0'] = m;
  const [year, month, day, hour, minute, second] = [y, mo, d, h, mi, s].map(Number);
  if (year < 1 || month < 1 || month > 12 || hour > 23 || minute > 59 || second > 59 || Number(oh) > 23 || Number(om) > 59) return null;
  const date = new Date(0);
  date.setUTCFullYear(year, month - 1, day); // Date.UTC would read years 0-99 as 1900-1999
  date.setUTCHours(hour, minute, second, Number(frac.padEnd(3, '0').slice(0, 3)));
  if (date.getUTCDate() !== day || date.getUTCMonth() !== month - 1) return null;
  const offsetMin = zone && sign ? (sign === '-' ? -1 : 1) * (Number(oh) * 60 + Number(om)) : 0;
  const at = new Date(date.getTime() - offsetMin * 60_000);
  return inYearRange(at) ? at : null;
}

/**
 * The years a timestamp may fall in: 0001 to 9999, what ISO 8601 writes without an expanded year
 * and what Postgres stores (it has no year 0; JavaScript dates reach 275760 and go negative).
 */
export const inYearRange = (d: Date): boolean => {
  const year = d.getUTCFullYear();
  return year >= 1 && year <= 9999;
};

function parseAny(value: string, now: Date): Date | null {
  const relative = RELATIVE.exec(value);
  if (relative) {
    const unit = relative[2].toLowerCase();
    const ms = unit.startsWith('m') ? MINUTE : unit.startsWith('h') ? HOUR : DAY;
    return new Date(now.getTime() - Number(relative[1]) * ms);
  }
  return parseTimestamp(value);
}

/**
 * A point in time given as ISO 8601 (a time without an offset is UTC) or as `N minutes|hours|days
 * ago`, read against `now`. Returns null when it is neither, or when it falls outside the years 0001-9999.
 */
export function parsePointInTime(value: string, now: Date): Date | null {
  const at = parseAny(value, now);
  return at && inYearRange(at) ? at : null;
}

/** A validated point-in-time field read against the request clock: unparseable or out of range is 400 naming `field`. */
export function pointInTime(field: string, value: string, now: Date): Date {
  const at = parseAny(value, now);
  if (!at) throw validationError(field, 'must be an ISO 8601 time or "N minutes|hours|days ago"');
  if (!inYearRange(at)) throw validationError(field, 'must fall between the years 0001 and 9999');
  return at;
}

/** A point in time the caller looks back to: as `pointInTime`, and in the future is 400 too. */
export function pastPointInTime(field: string, value: string, now: Date): Date {
  const at = pointInTime(field, value, now);
  if (at.getTime() > now.getTime()) throw validationError(field, 'must not be in the future');
  return at;
}
