import type { PgDatabase, PgQueryResultHKT } from 'drizzle-orm/pg-core';
import { is, type SQL } from 'drizzle-orm';
import { PgTransaction } from 'drizzle-orm/pg-core';
import { COMMIT_WITH, compile, hooksOf, KEEP_PLAN, placeLiterals, SEND_WITH_NEXT, sessionOf, SHORTCUTS, sql, sqlLiteral } from './driver';

/** drizzle's `sql` tag, built without its per-chunk table check (driver/sql.ts): what the hot paths' queries are written with. */
export { sql };

/**
 * Any of our three drivers (PGlite, node-postgres, Neon serverless) behind drizzle. Without the
 * relational schema: nothing uses `db.query.*`, and drizzle would build a query builder per table
 * for every transaction (and, on Workers, map the whole schema for every request).
 */
export type Db = PgDatabase<PgQueryResultHKT>;
/** A transaction handle has the same query surface as the database. */
export type Tx = Parameters<Parameters<Db['transaction']>[0]>[0];
export type DbOrTx = Db | Tx;

export type StorageKind = 'embedded' | 'postgres' | 'neon';

export { compile, sqlLiteral } from './driver';

/**
 * Runs raw SQL and returns its rows, as `db.execute` does (every driver answers with `{ rows }`).
 * With the driver shortcuts (shared/platform/data/driver/), through the session with our compile.
 */
export async function rows<T>(db: DbOrTx, query: SQL): Promise<T[]> {
  if (!hooksOf(db)[SHORTCUTS]) return ((await db.execute(query)) as unknown as { rows: T[] }).rows;
  const result = (await sessionOf(db).prepareQuery(compile(db, query), undefined, undefined, false).execute()) as { rows: T[] };
  return result.rows;
}

/**
 * A Postgres array literal for one bound parameter (`${pgArray(xs)}::text[]`). drizzle would expand
 * a JS array into a list of parameters, so arrays travel as their text form, which every driver binds.
 */
export function pgArray(values: readonly (string | number | null)[]): string {
  return `{${values.map((v) => (v === null ? 'NULL' : quoteElement(String(v)))).join(',')}}`;
}

// A store's postings are arrays of many plain words: most elements need no escaping, so the
// replace (a regexp pass and a new string) runs only for one that does.
const ELEMENT_ESCAPES = /["\\]/;
const quoteElement = (v: string) => (ELEMENT_ESCAPES.test(v) ? `"${v.replace(/["\\]/g, '\\$&')}"` : `"${v}"`);

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
 * the plan. The store path's statements are CTEs whose planning costs more than running them.
 * PGlite's driver sends no names: there the handle's KEEP_PLAN
 * prepares it. Same results as `rows`.
 */
export async function preparedRows<T>(db: DbOrTx, query: SQL): Promise<T[]> {
  const hooks = hooksOf(db);
  if (!hooks[SHORTCUTS]) return rows<T>(db, query);
  const compiled = compile(db, query);
  const name = statementName(compiled.sql);
  const kept = name ? hooks[KEEP_PLAN]?.(compiled, name) : null;
  if (kept) return (await kept) as T[];
  const result = (await sessionOf(db).prepareQuery(compiled, undefined, name, false).execute()) as { rows: T[] };
  return result.rows;
}

function statementName(text: string): string | undefined {
  let name = statementNames.get(text);
  if (!name && statementNames.size < MAX_NAMED_STATEMENTS) statementNames.set(text, (name = `engram_s${statementNames.size}`));
  return name;
}

/**
 * `preparedRows` (or, with `planEachTime`, `rows`), but sent with the transaction's next statement
 * where the driver can: one round trip fewer, for a statement whose rows nothing needs before the
 * next one is sent. Its failure fails that next statement too. The promise is marked handled (a
 * transaction that fails before sending it rejects it); await it after the next statement to see
 * its rows or its error. Rows that travelled with another statement come as the driver parses them.
 */
export function preparedRowsWithNext<T>(tx: Tx, query: SQL, opts: { planEachTime?: boolean } = {}): Promise<T[]> {
  const sendWithNext = hooksOf(tx)[SEND_WITH_NEXT];
  const compiled = sendWithNext && compile(tx, query);
  const waiting = compiled && (sendWithNext(compiled, { name: statementName(compiled.sql), planEachTime: opts.planEachTime }) as Promise<T[]> | null);
  const result = waiting ?? (opts.planEachTime ? rows<T>(tx, query) : preparedRows<T>(tx, query));
  result.catch(() => undefined);
  return result;
}

/** The rows of `query`, run as the last statement of `tx` and committed with it; null where the driver cannot. */
export async function rowsAndCommit<T>(tx: Tx, query: SQL): Promise<T[] | null> {
  const commitWith = hooksOf(tx)[COMMIT_WITH];
  return commitWith ? ((await commitWith(compile(tx, query))) as T[] | null) : null;
}

/**
 * `column = ANY(values)`, or `column = value` when there is one. A named statement's generic plan
 * (PostgreSQL's choice after five runs) counts a bound array as ten elements and its probes ten
 * times over, so it loses to a plan made afresh at every run, which costs more than the run itself
 * on the store path; the scalar form keeps the common single-value case on the cached plan.
 */
export function inList(column: SQL, values: readonly string[], type: string): SQL {
  return values.length === 1 ? sql`${column} = ${values[0]}::${sql.raw(type)}` : sql`${column} = ANY(${pgArray(values)}::${sql.raw(type)}[])`;
}

/** `values` as a one-column row source for FROM, aliased `as(column)`; see inList for why one value is not an array. */
export function rowsOf(values: readonly string[], type: string, as: string): SQL {
  const t = sql.raw(type);
  const alias = sql.raw(`${as}(${as})`);
  return values.length === 1 ? sql`(VALUES (${values[0]}::${t})) ${alias}` : sql`unnest(${pgArray(values)}::${t}[]) ${alias}`;
}

/**
 * A read that needs planner settings of its own (`set_config(name, value, true)`: until the end of
 * its transaction). On Postgres (node-postgres, Neon's Pool) the settings and the query travel as
 * one simple-protocol message, which Postgres runs as one implicit transaction, its parameters
 * written as literals (sqlLiteral): one round trip where BEGIN, the settings, the query and COMMIT
 * took four. PGlite (in process, no round trips to save, and its driver sends one statement a
 * message), a caller already inside a transaction, and a database without the driver shortcuts run
 * them as statements of a transaction.
 */
export async function readWithSettings<T>(db: DbOrTx, storage: StorageKind, settings: Record<string, string>, query: SQL): Promise<T[]> {
  const set = Object.entries(settings).map(([name, value]) => sql`set_config(${name}, ${value}, true)`);
  const settingsSql = sql`SELECT ${sql.join(set, sql`, `)}`;
  if (storage === 'embedded' || is(db, PgTransaction) || !hooksOf(db)[SHORTCUTS]) {
    return db.transaction(async (tx) => {
      await tx.execute(settingsSql);
      return rows<T>(tx, query);
    });
  }
  const script = [settingsSql, query].map((q) => {
    const { sql: text, params } = compile(db, q);
    return placeLiterals(text, params.map(sqlLiteral));
  });
  const results = (await db.execute(sql.raw(script.join(';\n')))) as unknown as { rows: T[] }[];
  return results[1].rows;
}
