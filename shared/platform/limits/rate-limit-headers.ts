import type { Context } from 'hono';
import type { AppEnv } from '../contract/context';
import { periodResetsAt } from '../contract/time';

/** The per-key request window and the monthly API-call quota, as one response sees them. */
export interface LimitState {
  /** Requests per minute of the key's tier, and what is left of the current window. */
  rate: { limit: number; remaining: number; resetAt: Date };
  /** The monthly api_calls quota; absent for a tier without one (or before it was counted). */
  quota?: { limit: number | null; used: number };
  now: Date;
}

const secondsUntil = (at: Date, now: Date) => Math.max(0, Math.ceil((at.getTime() - now.getTime()) / 1000));

/**
 * `RateLimit-Policy` and `RateLimit` (IETF httpapi RateLimit header fields, structured-field
 * lists: a quoted policy name with `q` quota and `w` window in seconds; `r` remaining and `t`
 * seconds to reset), from the same numbers the limiter enforces, plus the older
 * `X-RateLimit-Limit` / `X-RateLimit-Remaining` pair. The month has no fixed window, so its policy
 * carries no `w`; its `t` is the time to the period's reset.
 */
export function setLimitHeaders(c: Context<AppEnv>, state: LimitState): void {
  for (const [name, value] of limitHeaders(state)) c.header(name, value);
}

/** The header names `setLimitHeaders` sets, to carry them from one answer to another. */
export const LIMIT_HEADER_NAMES = ['RateLimit-Policy', 'RateLimit', 'X-RateLimit-Limit', 'X-RateLimit-Remaining'] as const;

/** `setLimitHeaders`'s headers as name and value pairs, for an answer built without the context. */
export function limitHeaders(state: LimitState): [string, string][] {
  const { rate, quota, now } = state;
  const remaining = Math.max(0, rate.remaining);
  const policies = [`"minute";q=${rate.limit};w=60`];
  const counters = [`"minute";r=${remaining};t=${secondsUntil(rate.resetAt, now)}`];
  if (quota && quota.limit !== null) {
    policies.push(`"month";q=${quota.limit}`);
    counters.push(`"month";r=${Math.max(0, quota.limit - quota.used)};t=${secondsUntil(periodResetsAt(now), now)}`);
  }
  return [
    ['RateLimit-Policy', policies.join(', ')],
    ['RateLimit', counters.join(', ')],
    ['X-RateLimit-Limit', String(rate.limit)],
    ['X-RateLimit-Remaining', String(remaining)],
  ];
}
