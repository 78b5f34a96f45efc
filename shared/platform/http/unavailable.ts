import { AppError } from '../contract/errors';

/**
 * SQLSTATEs and driver errors that mean "the database is not reachable right now", not "this
 * request is wrong": connection exceptions (class 08), admin/crash shutdown and "cannot connect now"
 * (57P01-57P03), too many connections (53300), and the socket-level failures of `pg` and the Neon driver.
 */
const SQLSTATES = new Set(['57P01', '57P02', '57P03', '53300']);
const SOCKET_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'EHOSTUNREACH', 'ENETUNREACH', 'ENOTFOUND', 'EAI_AGAIN']);
const MESSAGES =
  /connection terminated|timeout exceeded when trying to connect|connection error and is not queryable|cannot use a pool after calling end|terminating connection due to|the database system is (starting up|shutting down|in recovery mode)|server closed the connection unexpectedly/i;

/**
 * Node's own error for a request whose client went away while its body was being read: `Error:
 * aborted` with code ECONNRESET, raised by the HTTP server for the client's socket. A database
 * socket's reset says `read ECONNRESET` instead.
 */
function isIncomingAborted(err: unknown): boolean {
  const e = err as { code?: unknown; message?: unknown } | null;
  return typeof e === 'object' && e !== null && e.code === 'ECONNRESET' && e.message === 'aborted';
}

/**
 * The client went away before its answer: the request's signal says so (Node's adapter and
 * workerd abort it when the connection closes), or the error is Node's own for a body cut short.
 * Whatever failed then failed for a client that reads no answer: it is not an outage, nor an error
 * response of the tenant's. Body readers that swallow the failure (a cut JSON body reads as
 * malformed) leave the signal to tell.
 */
export function isClientAbort(err: unknown, signal: AbortSignal | undefined): boolean {
  return signal?.aborted === true || isIncomingAborted(err);
}

/** True when `err`, or any error in its `cause` chain (drizzle wraps driver errors), says the database is away. */
export function isDatabaseUnavailable(err: unknown): boolean {
  if (isIncomingAborted(err)) return false;
  for (let e = err as { code?: unknown; message?: unknown; cause?: unknown } | undefined, depth = 0; e && depth < 5; e = e.cause as typeof e, depth++) {
    if (typeof e !== 'object') return false;
    const code = typeof e.code === 'string' ? e.code : '';
    if (SQLSTATES.has(code) || code.startsWith('08') || SOCKET_CODES.has(code)) return true;
    if (typeof e.message === 'string' && MESSAGES.test(e.message)) return true;
  }
  return false;
}

export const databaseUnavailable = () => new AppError('SERVICE_UNAVAILABLE', 'The database is unavailable; retry shortly', { retry_after: 5 });
