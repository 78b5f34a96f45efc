import type { Db, Tx } from '../db';
import { hooksOf, KEEP_PLAN, type KeepPlan, SHORTCUTS } from './hooks';
import { type Compiled, replaceTransaction, transactionClientOf } from './internals';
import { sqlLiteral } from './literals';

/**
 * drizzle's PGlite driver leaves timestamps, intervals, dates and numeric arrays as text: so do kept
 * plans. By type oid: timestamp, timestamptz, interval, date, and the arrays of numeric, timestamp,
 * timestamptz, interval and date.
 */
const asText = (value: string) => value;
const RESULT_OPTIONS = {
  rowMode: 'object' as const,
  parsers: Object.fromEntries([1114, 1184, 1186, 1082, 1231, 1115, 1185, 1187, 1182].map((oid) => [oid, asText])),
};

/** What of PGlite (and of its Transaction) this uses; structural, so this file stays importable on Workers. */
export interface PgliteExec {
  exec(query: string, options?: typeof RESULT_OPTIONS): Promise<{ rows: unknown[] }[]>;
}

/**
 * Kept plans on PGlite. Its driver parses and plans every statement afresh (it sends no statement
 * names), and the store path's statements cost more to plan than to run. Here a statement that
 * asks for a kept plan (db.preparedRows, by name) is prepared once per PGlite instance with SQL
 * `PREPARE` and then run as `EXECUTE name(literals)`: one simple-protocol message. A prepared
 * statement is not undone by a rollback. A statement first asked for while another caller is
 * preparing it runs as usual; one whose preparation failed gets a fresh name next time (the
 * `PREPARE` may have stood even though its `EXECUTE` failed).
 */
export function keepPglitePlans(db: Db, client: PgliteExec): void {
  const prepared = new Map<string, string>();
  const preparing = new Set<string>();
  let attempts = 0;
  const keepOn =
    (target: PgliteExec): KeepPlan =>
    (query: Compiled, name: string) => {
      let literals: string[];
      try {
        literals = query.params.map(sqlLiteral);
      } catch {
        return null; // a parameter with no literal form: the statement runs as usual
      }
      const args = literals.length ? `(${literals.join(', ')})` : '';
      // A failure names the statement as drizzle's would (its text with placeholders), not the EXECUTE with its values.
      const named = (err: unknown): never => {
        if (err && typeof err === 'object') Object.assign(err, { query: query.sql });
        throw err;
      };
      const ready = prepared.get(name);
      if (ready) return target.exec(`EXECUTE ${ready}${args}`, RESULT_OPTIONS).then(([r]) => r.rows, named);
      if (preparing.has(name)) return null;
      preparing.add(name);
      const actual = `${name}_p${attempts++}`;
      return target.exec(`PREPARE ${actual} AS ${query.sql}; EXECUTE ${actual}${args}`, RESULT_OPTIONS).then(
        (results) => {
          preparing.delete(name);
          prepared.set(name, actual);
          return results[results.length - 1].rows;
        },
        (err: unknown) => {
          preparing.delete(name);
          return named(err);
        },
      );
    };
  const hooks = hooksOf(db);
  hooks[KEEP_PLAN] = keepOn(client);
  hooks[SHORTCUTS] = true;
  replaceTransaction(
    db,
    (transaction) =>
      ((fn: (tx: never) => Promise<unknown>, config?: unknown) =>
        transaction((tx: Tx) => {
          const txHooks = hooksOf(tx);
          txHooks[KEEP_PLAN] = keepOn(transactionClientOf<PgliteExec>(tx));
          txHooks[SHORTCUTS] = true;
          return fn(tx as never);
        }, config as never)) as Db['transaction'],
  );
}
