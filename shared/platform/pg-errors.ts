import { AppError } from './errors';

/** The SQLSTATE of a Postgres error, wherever the driver put it (`pg` and PGlite on the error, drizzle on its `cause`). */
export function sqlState(err: unknown): string | null {
  for (let e = err as { code?: unknown; cause?: unknown } | undefined, i = 0; e && i < 4; e = e.cause as typeof e, i++) {
    if (typeof e.code === 'string' && /^[0-9A-Z]{5}$/.test(e.code)) return e.code;
  }
  return null;
}

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
