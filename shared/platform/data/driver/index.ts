import type { Db } from '../db';
import { missingInternals, type SessionClass, type TransactionClass } from './internals';
import { keepPglitePlans, type PgliteExec } from './pglite-plans';
import { type Pool, shortTransactions } from './short-transactions';

/**
 * The driver shortcuts: the places where engram goes around drizzle (and, with it, around the
 * drivers' usual way of sending statements) because the usual way cost more than the statement.
 * They all live in this folder, and the rest of the code reaches them only through shared/platform/data/db.ts,
 * which falls back to drizzle's public API on a handle without them.
 *
 * - `compile` (compile.ts): our own compiler for the raw SQL the query helpers build. drizzle's
 *   walks every chunk through its `is()` checks; on the store path that was the largest single part
 *   of Node's time. Gives drizzle's exact text and parameters and hands anything else to drizzle.
 *   A statement of a shape seen before gets the text kept from its first compile (the same string).
 * - `rows`/`preparedRows` through the session (db.ts): a statement runs as
 *   `session.prepareQuery(compiled, ..., name)`, skipping `db.execute`'s second compile, and with a
 *   statement name that node-postgres and Neon's Pool parse and plan once per connection (the store
 *   path's CTEs cost more to plan than to run).
 * - Kept plans on PGlite (pglite-plans.ts): PGlite's driver sends no statement names, so a named
 *   statement is prepared once with SQL `PREPARE` and run as `EXECUTE name(literals)`.
 * - Short transactions (short-transactions.ts): on a node-postgres-shaped pool (node-postgres, Neon's
 *   Pool on Workers), BEGIN travels with the first statement and COMMIT with the last, and a
 *   statement whose rows nothing needs yet travels with the next: a store takes two round trips
 *   instead of four or more, and holds its tenant's audit chain head only while it runs.
 * - The literal quoter (literals.ts): the one-message forms above, and a read with planner settings
 *   sent as one script (db.ts `readWithSettings`), write parameters as literals; `sqlLiteral` quotes
 *   one as a text-format bind parameter would arrive.
 * - The `sql` tag (sql.ts): drizzle's, without the table check its SQL constructor makes of every
 *   chunk, and with a template's text chunks made once and shared. Public API only (an SQL built
 *   empty, then its `queryChunks`), so it stays on with `DB_DRIVER_SHORTCUTS=off`: the objects it
 *   builds are the ones drizzle's tag builds.
 *
 * What they touch of drizzle that drizzle does not promise (`db.session`, `db.dialect`,
 * `session.options`, `tx.session.client`, `SQL.shouldInlineParams`, the Session and Transaction
 * constructors, `db.transaction` replaced on the handle) is read and written only in internals.ts;
 * test/driver.test.ts fails, naming the field, when an upgrade moves any of it.
 *
 * `DB_DRIVER_SHORTCUTS=off` installs none of them: transactions are drizzle's own, every statement
 * goes through `db.execute`, nothing is prepared by name. Slower, and independent of drizzle's
 * private surface: the way out when an upgrade breaks it before this folder is brought up to date.
 */

export { compile } from './compile';
export { COMMIT_WITH, hooksOf, KEEP_PLAN, SEND_WITH_NEXT, SHORTCUTS } from './hooks';
export { DRIZZLE_VERSION_CHECKED, sessionOf } from './internals';
export { placeLiterals, sqlLiteral } from './literals';
export { sql } from './sql';

/** Where the shortcuts go: an embedded PGlite, or a node-postgres-shaped pool with its drizzle driver's classes. */
export type ShortcutTarget =
  | { kind: 'pglite'; client: PgliteExec }
  | { kind: 'pool'; pool: Pool; Session: SessionClass; Transaction: TransactionClass; prepare: boolean };

/**
 * Installs the shortcuts that fit `target` on `db` (`enabled` false: none, drizzle's own ways
 * throughout). Refuses, saying what is missing, when drizzle's internals are not where they are expected.
 */
export function installShortcuts(db: Db, target: ShortcutTarget, enabled = true): void {
  if (!enabled) return;
  const missing = missingInternals(db);
  if (missing.length) {
    throw new Error(
      `drizzle's internals moved (${missing.join('; ')}): shared/platform/data/driver/internals.ts needs updating for this drizzle-orm; DB_DRIVER_SHORTCUTS=off runs without them meanwhile`,
    );
  }
  if (target.kind === 'pglite') keepPglitePlans(db, target.client);
  else shortTransactions(db, target.pool, target);
}
