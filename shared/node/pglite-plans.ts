import type { PGlite, Transaction } from '@electric-sql/pglite';
import { types } from '@electric-sql/pglite';
import { type Compiled, type Db, KEEP_PLAN, type KeepPlan, sqlLiteral } from '../platform/db';

/** drizzle's PGlite driver leaves timestamps, intervals, dates and numeric arrays as text: so do kept plans. */
const asText = (value: string) => value;
const RESULT_OPTIONS = {
  rowMode: 'object' as const,
  parsers: Object.fromEntries([types.TIMESTAMP, types.TIMESTAMPTZ, types.INTERVAL, types.DATE, 1231, 1115, 1185, 1187, 1182].map((oid) => [oid, asText])),
};

/**
 * Kept plans on PGlite. Its driver parses and plans every statement afresh (it sends no statement
 * names), and the store path's statements cost more to plan than to run. Here a statement that
 * asks for a kept plan (db.preparedRows, by name) is prepared once per PGlite instance with SQL
 * `PREPARE` and then run as `EXECUTE name(literals)`: one simple-protocol message. A prepared
 * statement is not undone by a rollback. A statement first asked for while another caller is
 * preparing it runs as usual; one whose preparation failed gets a fresh name next time (the
 * `PREPARE` may have stood even though its `EXECUTE` failed).
 */
export function keepPglitePlans(db: Db, client: PGlite): void {
  const prepared = new Map<string, string>();
  const preparing = new Set<string>();
  let attempts = 0;
  const keepOn =
    (target: PGlite | Transaction): KeepPlan =>
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
  const internals = db as unknown as Record<symbol, KeepPlan> & { transaction: Db['transaction'] };
  internals[KEEP_PLAN] = keepOn(client);
  const transaction = internals.transaction.bind(db);
  internals.transaction = ((fn: (tx: never) => Promise<unknown>, config?: unknown) =>
    transaction(
      (tx) => {
        const handle = tx as unknown as Record<symbol, KeepPlan> & { session: { client: Transaction } };
        handle[KEEP_PLAN] = keepOn(handle.session.client);
        return fn(tx as never);
      },
      config as never,
    )) as Db['transaction'];
}
