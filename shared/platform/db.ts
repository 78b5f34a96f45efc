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

const statementNames = new Map<string, string>();
/** Past this many distinct texts, statements run unnamed (texts that vary with a batch's shape must not grow the map forever). */
const MAX_NAMED_STATEMENTS = 200;

/**
 * `rows` for a fixed-shape statement on a hot path, run as a named prepared statement: drivers that
 * support names (node-postgres, Neon's Pool) parse and plan it once per connection and then reuse
 * the plan. The store path's statements are CTEs whose planning costs more than running them
 * (about 1.5 ms each on Postgres 15). PGlite ignores the name. Same results as `rows`.
 */
export async function preparedRows<T>(db: DbOrTx, query: SQL): Promise<T[]> {
  const internal = db as unknown as {
    dialect: { sqlToQuery(q: SQL): { sql: string; params: unknown[] } };
    session: { prepareQuery(q: { sql: string; params: unknown[] }, fields: undefined, name: string | undefined, arrayMode: boolean): { execute(): Promise<unknown> } };
  };
  const compiled = internal.dialect.sqlToQuery(query);
  let name = statementNames.get(compiled.sql);
  if (!name && statementNames.size < MAX_NAMED_STATEMENTS) statementNames.set(compiled.sql, (name = `engram_s${statementNames.size}`));
  const result = (await internal.session.prepareQuery(compiled, undefined, name, false).execute()) as { rows: T[] };
  return result.rows;
}
