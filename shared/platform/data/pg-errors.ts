import { AppError } from '../contract/errors';

/** A Postgres error as the drivers give it: its SQLSTATE, message, and the table or constraint it names, if any. */
export interface PgError {
  code: string;
  message: string;
  table?: string;
  constraint?: string;
}

/** The Postgres error in `err`, wherever the driver put it (`pg` and PGlite on the error, drizzle on its `cause`). */
export function pgError(err: unknown): PgError | null {
  for (let e = err as (Partial<PgError> & { cause?: unknown }) | undefined, i = 0; e && i < 4; e = e.cause as typeof e, i++) {
    if (typeof e.code === 'string' && /^[0-9A-Z]{5}$/.test(e.code)) return e as PgError;
  }
  return null;
}

/** The SQLSTATE of a Postgres error, wherever the driver put it. */
export const sqlState = (err: unknown): string | null => pgError(err)?.code ?? null;

/**
 * A Postgres unique_violation (SQLSTATE 23505) that surfaces from a check-then-insert race: two
 * requests both saw no row and both inserted. The loser gets 409 CONFLICT naming the constraint
 * (a schema name, never the conflicting value, which Postgres puts in `detail`). Drivers differ in
 * where the code sits: `pg` and PGlite on the error, drizzle on its `cause`.
 */
export function uniqueViolation(err: unknown): AppError | null {
  for (let e = err as { code?: unknown; constraint?: unknown; cause?: unknown } | undefined, i = 0; e && i < 4; e = e.cause as typeof e, i++) {
    if (e.code === '23505') {
      const constraint = typeof e.constraint === 'string' && /^\w{1,63}$/.test(e.constraint) ? e.constraint : null;
      return new AppError(
        'CONFLICT',
        `A concurrent request created the same record first${constraint ? ` (unique constraint ${constraint})` : ''}; retry to see it`,
      );
    }
  }
  return null;
}
