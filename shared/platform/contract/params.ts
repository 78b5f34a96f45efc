import { z } from '@hono/zod-openapi';
import { invalidRange } from './errors';
import { type IdKind, idPattern, parseUrn } from './ids';
import { parsePointInTime, parseTimestamp } from './time';

/**
 * Shared zod primitives for route inputs, so every family validates ids, times and ranges the
 * same way and the OpenAPI document describes them the same way.
 */

const URN_EXAMPLE = 'urn:uuid:01935f6e-8a2b-7c3d-9e4f-5a6b7c8d9e0f';

/*
 * A client cannot know our id formats, so an id that is not of our shape is an id that names
 * nothing: the schemas below give the verb a value that finds nothing, and the verb answers it as
 * it answers any unknown id, not as bad input.
 */

/** Longer than any id we issue; a longer one names nothing either. */
const MAX_ID_LENGTH = 256;

/**
 * The id a malformed `urn:uuid:` is looked up as: the nil UUID, which no uuidv7 we issue can be, so
 * the verb finds nothing and answers it exactly as it answers any id that names nothing (404 for
 * the resource addressed, the route's own answer for a reference in a body, no rows for a filter).
 */
const NIL_UUID = '00000000-0000-0000-0000-000000000000';

/**
 * `urn:uuid:<uuid>` (or a bare uuid), given to the verb as the bare lowercase uuid. Anything else
 * names nothing, whatever its shape.
 */
export const UrnId = (description = 'Identifier (urn:uuid:<uuid>)') =>
  z
    .string()
    .transform((v) => (v.length <= MAX_ID_LENGTH && parseUrn(v)) || NIL_UUID)
    .openapi({ description, example: URN_EXAMPLE });

/** What a prefixed id longer than any we issue is looked up as: a string no id of ours can be. */
const NO_SUCH_ID = '-';

/**
 * A `<prefix>_<base62>` identifier of one kind (`comp_...`, `ten_...`). Any string is looked up, so
 * one of another shape, or longer than any we issue, is answered by the verb as every unknown id
 * is (404 for the resource addressed, or the route's own answer for a reference in a body, like
 * INVALID_TOKEN for an invitation).
 */
export const PrefixedId = (kind: IdKind, description?: string) => {
  const { example } = idPattern(kind);
  return z
    .string()
    .transform((v) => (v.length <= MAX_ID_LENGTH ? v : NO_SUCH_ID))
    .openapi({ description, example });
};

/** An absolute ISO 8601 time (calendar-checked; without an offset it is UTC), given to the verb as a Date. */
export const Timestamp = (description: string) =>
  z
    .string()
    .max(64)
    .refine((v) => parseTimestamp(v) !== null, 'must be an ISO 8601 timestamp, e.g. 2026-11-22T10:00:00Z')
    .transform((v) => parseTimestamp(v) as Date)
    .openapi({ description, example: '2026-11-22T10:00:00Z' });

/**
 * ISO 8601 or `N minutes|hours|days ago`. The schema checks the syntax; the verb reads it against
 * its request clock with `pointInTime` (shared/platform/contract/time.ts), so "1 hour ago" means the
 * request's hour, in tests too.
 */
export const PointInTime = (description: string, example = '2026-11-01T10:00:00Z') =>
  z
    .string()
    .max(64)
    .refine((v) => parsePointInTime(v, new Date(0)) !== null, 'must be an ISO 8601 timestamp (e.g. 2026-11-22T10:00:00Z) or `N minutes|hours|days ago`')
    .openapi({ description, example });

/**
 * A query or body object whose `start` must not lie after its `end` (both absolute Timestamps):
 * a violation is 422 INVALID_RANGE, raised by the router's validation hook.
 */
export function withRange<T extends z.ZodObject>(shape: T, start: string, end: string) {
  return shape.superRefine((value, ctx) => {
    const v = value as Record<string, unknown>;
    const [from, to] = [v[start], v[end]];
    if (from instanceof Date && to instanceof Date && from > to) {
      ctx.addIssue({ code: 'custom', path: [start], message: `must not be after ${end}`, params: { code: 'INVALID_RANGE', end } });
    }
  });
}

/** The same rule for times resolved in the verb (relative times): 422 INVALID_RANGE naming both fields. */
export function assertRange(from: Date | undefined, to: Date | undefined, start: string, end: string): void {
  if (from && to && from > to) throw invalidRange(start, end);
}

/** Comma-separated list query parameter of known values (deduplicated, lowercased). */
export const CsvEnum = <const T extends readonly [string, ...string[]]>(values: T, description: string, example: string) =>
  z
    .string()
    .max(200)
    .transform((v) =>
      v
        .split(',')
        .map((t) => t.trim().toLowerCase())
        .filter(Boolean),
    )
    .refine((list) => list.length > 0 && list.every((t) => (values as readonly string[]).includes(t)), {
      message: `must be a comma-separated list of ${values.join(', ')}`,
    })
    .transform((list) => [...new Set(list)] as T[number][])
    .openapi({ description, example });

/**
 * The caps of a caller's free-form `metadata` object: its size as UTF-8 JSON, and how deep it nests
 * (JSON.stringify recurses: a few thousand levels, well inside the body limit, overflow the stack).
 */
export const MAX_METADATA_BYTES = 16 * 1024;
export const MAX_METADATA_DEPTH = 32;
const utf8Bytes = (s: string) => new TextEncoder().encode(s).length;

/** Whether a parsed JSON value nests at most `max` levels (a scalar is 0), walked without recursion. */
export function nestsAtMost(root: unknown, max: number): boolean {
  const stack: [unknown, number][] = [[root, 0]];
  while (stack.length) {
    const [value, depth] = stack.pop()!;
    if (!value || typeof value !== 'object') continue;
    if (depth + 1 > max) return false;
    for (const child of Object.values(value)) stack.push([child, depth + 1]);
  }
  return true;
}

/**
 * A free-form JSON object of at most `maxBytes` (as UTF-8 JSON; MAX_METADATA_BYTES unless a family
 * names a larger cap, like an action's params) and MAX_METADATA_DEPTH levels; else 400 VALIDATION_ERROR.
 */
export const Metadata = (description: string, example: Record<string, unknown>, maxBytes = MAX_METADATA_BYTES) =>
  z
    .record(z.string(), z.unknown())
    .refine((m) => nestsAtMost(m, MAX_METADATA_DEPTH), { message: `must nest at most ${MAX_METADATA_DEPTH} levels deep`, abort: true })
    .refine((m) => utf8Bytes(JSON.stringify(m)) <= maxBytes, `must be at most ${maxBytes} bytes as JSON`)
    .openapi({ description: `${description} Any JSON object, up to ${maxBytes / 1024} KB as JSON and ${MAX_METADATA_DEPTH} levels deep.`, example });
