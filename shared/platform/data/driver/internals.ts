import type { SQL } from 'drizzle-orm';
import type { Db, DbOrTx, Tx } from '../db';

/**
 * Every read or write of drizzle's private surface, in one place. drizzle keeps these fields
 * internal (`@internal` in its sources), so a drizzle upgrade may rename or reshape them without
 * notice: test/driver.test.ts checks each of them against the installed drizzle and
 * names what moved. The version below is the one they were last checked against.
 */
export const DRIZZLE_VERSION_CHECKED = '0.45.4';

/** A compiled statement: its text with `$n` placeholders, and the values they stand for. */
export type Compiled = { sql: string; params: unknown[] };

/** What of a drizzle session the shortcuts call: `prepareQuery(query, fields, name, arrayMode)`. */
export interface Session {
  prepareQuery(q: Compiled, fields: undefined, name: string | undefined, arrayMode: boolean): { execute(): Promise<unknown> };
}
export interface Dialect {
  sqlToQuery(q: SQL): Compiled;
}

type Internals = { session?: Session & { options?: unknown; client?: unknown }; dialect?: Dialect; transaction: Db['transaction'] };
const internalsOf = (db: DbOrTx | { dialect: Dialect }) => db as unknown as Internals;

/** A database or transaction handle's session (`db.session`). */
export const sessionOf = (db: DbOrTx): Session => internalsOf(db).session!;
/** Its SQL dialect (`db.dialect`), drizzle's compiler. */
export const dialectOf = (db: DbOrTx | { dialect: Dialect }): Dialect => internalsOf(db).dialect!;
/** The options the database's session was built with (logger, cache): a new session of ours gets the same. */
export const sessionOptionsOf = (db: Db): unknown => internalsOf(db).session!.options;
/** `sql.inlineParams()` was called on it: its values go into the text, which drizzle's compiler does. */
export const inlinesParams = (query: SQL): boolean => (query as unknown as { shouldInlineParams: boolean }).shouldInlineParams;
/** The driver's client under a PGlite transaction handle (`tx.session.client`: PGlite's own Transaction). */
export const transactionClientOf = <C>(tx: Tx): C => internalsOf(tx).session!.client as C;

/**
 * Replaces `db.transaction` on this one handle (an own property shadowing drizzle's method);
 * `wrap` gets drizzle's, bound to the handle.
 */
export function replaceTransaction(db: Db, wrap: (drizzleTransaction: Db['transaction']) => Db['transaction']): void {
  const internals = internalsOf(db);
  internals.transaction = wrap(internals.transaction.bind(db));
}

/** drizzle's session and transaction classes of a driver, built as drizzle builds them for a transaction. */
export type SessionClass = new (client: never, dialect: never, schema: undefined, options: never) => object;
export type TransactionClass = new (dialect: never, session: never, schema: undefined) => object;

/** A transaction handle over `client` (an object with the driver client's `query`), as the driver's own `transaction` makes one. */
export function transactionOver(db: Db, driver: { Session: SessionClass; Transaction: TransactionClass }, client: object): Tx {
  const session = new driver.Session(client as never, dialectOf(db) as never, undefined, sessionOptionsOf(db) as never);
  return new driver.Transaction(dialectOf(db) as never, session as never, undefined) as Tx;
}

/**
 * What of the above this handle lacks, one line each (empty when all is there): checked when the
 * shortcuts are installed, so a drizzle that moved them fails at start with a message, not later
 * with `undefined is not a function` in the middle of a request.
 */
export function missingInternals(db: Db): string[] {
  const internals = internalsOf(db);
  const problems: string[] = [];
  if (typeof internals.session?.prepareQuery !== 'function') problems.push('db.session.prepareQuery is not a function');
  if (typeof internals.dialect?.sqlToQuery !== 'function') problems.push('db.dialect.sqlToQuery is not a function');
  if (internals.session && !('options' in internals.session)) problems.push('db.session.options is missing');
  if (typeof internals.transaction !== 'function') problems.push('db.transaction is not a function');
  return problems;
}
