import type { PgDatabase, PgQueryResultHKT } from 'drizzle-orm/pg-core';
import type { SQL } from 'drizzle-orm';
import type * as schema from '../../schema';

/** Any of our three drivers (PGlite, node-postgres, Neon serverless) behind drizzle. */
export type Db = PgDatabase<PgQueryResultHKT, typeof schema>;
/** A transaction handle has the same query surface as the database. */
export type Tx = Parameters<Parameters<Db['transaction']>[0]>[0];
export type DbOrTx = Db | Tx;

export type StorageKind = 'embedded' | 'postgres' | 'neon';

/** Runs raw SQL and returns its rows; every driver answers `execute` with `{ rows }`. */
export async function rows<T>(db: DbOrTx, query: SQL): Promise<T[]> {
  const result = (await db.execute(query)) as unknown as { rows: T[] };
  return result.rows;
}

/**
 * A Postgres array literal for one bound parameter (`${pgArray(xs)}::text[]`). drizzle would expand
 * a JS array into a list of parameters, so arrays travel as their text form, which every driver binds.
 */
export function pgArray(values: readonly (string | number | null)[]): string {
  const quote = (v: string | number) => `"${String(v).replace(/\\/g, '\\\\').replace(/"/g, '\\"')}"`;
  return `{${values.map((v) => (v === null ? 'NULL' : quote(v))).join(',')}}`;
}

/**
 * A driver's own `query(text, params)`, bypassing drizzle's per-query overhead (about half the
 * cost of a small statement on PGlite). Only for the hot path's fixed statements.
 */
export type RawQuery = <T>(text: string, params: unknown[]) => Promise<T[]>;
