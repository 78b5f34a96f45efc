import { AppError } from './errors';

/**
 * SQLSTATEs and driver errors that mean "the database is not reachable right now", not "this
 * request is wrong": connection exceptions (class 08), admin/crash shutdown and "cannot connect now"
 * (57P01-57P03), too many connections (53300), and the socket-level failures of `pg` and the Neon driver.
 */
const SQLSTATES = new Set(['57P01', '57P02', '57P03', '53300']);
const SOCKET_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'EHOSTUNREACH', 'ENETUNREACH', 'ENOTFOUND', 'EAI_AGAIN']);
const MESSAGES = /connection terminated|timeout exceeded when trying to connect|connection error and is not queryable|cannot use a pool after calling end|terminating connection due to|the database system is (starting up|shutting down|in recovery mode)|server closed the connection unexpectedly/i;

/** True when `err`, or any error in its `cause` chain (drizzle wraps driver errors), says the database is away. */
export function isDatabaseUnavailable(err: unknown): boolean {
  for (let e = err as { code?: unknown; message?: unknown; cause?: unknown } | undefined, depth = 0; e && depth < 5; e = e.cause as typeof e, depth++) {
    if (typeof e !== 'object') return false;
    const code = typeof e.code === 'string' ? e.code : '';
    if (SQLSTATES.has(code) || code.startsWith('08') || SOCKET_CODES.has(code)) return true;
    if (typeof e.message === 'string' && MESSAGES.test(e.message)) return true;
  }
  return false;
}

export const databaseUnavailable = () =>
  new AppError('SERVICE_UNAVAILABLE', 'The database is unavailable; retry shortly', { retry_after: 5 });
