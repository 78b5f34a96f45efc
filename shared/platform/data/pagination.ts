import { z } from '@hono/zod-openapi';
import type { SQL } from 'drizzle-orm';
import { sql } from './db';
import { type DbOrTx, rows } from './db';

/** Deepest offset any list accepts: beyond it a client should narrow the query, not page. */
export const MAX_OFFSET = 1_000_000;

export interface PageInput {
  limit: number;
  offset: number;
}

/** `limit`/`offset` query fields with the route's own default and cap (docs/architecture.md#pages-and-totals). */
export function PageQuery({ max, default: fallback }: { max: number; default: number }) {
  return z.object({
    limit: z.coerce
      .number()
      .int()
      .min(1)
      .max(max)
      .default(fallback)
      .openapi({ description: `Page size, 1 to ${max} (default ${fallback})`, example: fallback }),
    offset: z.coerce.number().int().min(0).max(MAX_OFFSET).default(0).openapi({ description: 'Items to skip', example: 0 }),
  });
}

type TotalName = 'total' | 'total_count';
const Count = z.number().int().openapi({ example: 42 });

/**
 * The page fields a list answers with, declared once per route so the schema and the body cannot
 * drift: the contract names the total `total` on some routes and `total_count` on others (both where
 * existing clients read both), and gives `has_more` to some. `limit` and `offset` are echoed.
 */
export function paging<const T extends readonly TotalName[], const H extends boolean>(opts: { totals: T; hasMore: H }) {
  const totals = Object.fromEntries(opts.totals.map((name) => [name, Count])) as { [K in T[number]]: typeof Count };
  const fields = {
    ...totals,
    ...((opts.hasMore ? { has_more: z.boolean().openapi({ description: 'More items after this page' }) } : {}) as H extends true
      ? { has_more: z.ZodBoolean }
      : object),
    limit: z.number().int().openapi({ example: 20 }),
    offset: z.number().int().openapi({ example: 0 }),
  };
  type Meta = { [K in T[number]]: number } & (H extends true ? { has_more: boolean } : object) & { limit: number; offset: number };
  return {
    fields,
    /** The page fields of a body: totals, `has_more` when declared, and the echoed limit and offset. */
    meta(total: number, page: PageInput, returned: number): Meta {
      const meta: Record<string, unknown> = Object.fromEntries(opts.totals.map((name) => [name, total]));
      if (opts.hasMore) meta.has_more = page.offset + returned < total;
      return { ...meta, limit: page.limit, offset: page.offset } as Meta;
    },
  };
}

/** A page of `select` (which must have its ORDER BY) and the count of `countOf` (a `SELECT count(*) AS n ...`). */
export async function pageRows<T>(db: DbOrTx, select: SQL, countOf: SQL, page: PageInput): Promise<{ page: T[]; total: number }> {
  const [found, [{ n }]] = await Promise.all([
    rows<T>(db, sql`${select} LIMIT ${page.limit} OFFSET ${page.offset}`),
    rows<{ n: number | string }>(db, countOf),
  ]);
  return { page: found, total: Number(n) };
}
