import type { Compiled } from './internals';

/**
 * What a handle with the shortcuts carries (db.ts looks for these; a handle without them runs
 * everything through drizzle's public API).
 */

/** Set on a database or transaction handle whose statements may go through drizzle's session directly (db.ts `rows`). */
export const SHORTCUTS = Symbol('driverShortcuts');

/**
 * Where a driver keeps plans only by other means than statement names (PGlite, pglite-plans.ts),
 * its database and transaction handles carry this: it runs `query` with a plan kept under `name`,
 * or answers null (the caller runs it as usual).
 */
export const KEEP_PLAN = Symbol('keepPlan');
export type KeepPlan = (query: Compiled, name: string) => Promise<unknown[]> | null;

/**
 * Where a driver can send a transaction's last statement together with its COMMIT
 * (short-transactions.ts), its transaction handle carries this: it runs the statement, commits in
 * the same round trip and answers the statement's rows; null when it cannot take this statement
 * (the caller then runs it as usual and the transaction commits as usual).
 */
export const COMMIT_WITH = Symbol('commitWith');
export type CommitWith = (query: Compiled) => Promise<unknown[] | null>;

/**
 * Where a driver can send a statement in the same message as the transaction's next one
 * (short-transactions.ts), its transaction handle carries this: the statement waits, and travels
 * with the next statement or COMMIT; its rows (or its error) come with theirs. Null when it cannot
 * (the caller runs it now).
 */
export const SEND_WITH_NEXT = Symbol('sendWithNext');
export type SendWithNext = (query: Compiled, opts?: { name?: string; planEachTime?: boolean }) => Promise<unknown[]> | null;

type Hooks = { [SHORTCUTS]?: true; [KEEP_PLAN]?: KeepPlan; [COMMIT_WITH]?: CommitWith; [SEND_WITH_NEXT]?: SendWithNext };
/** The hooks a handle carries (none on a handle drizzle made on its own). */
export const hooksOf = (handle: object) => handle as Hooks;
