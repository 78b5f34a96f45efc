import { eq, lt, sql } from 'drizzle-orm';
import type { Context } from 'hono';
import { deleteCookie, getCookie, setCookie } from 'hono/cookie';
import { consoleSessions } from '../../schema';
import type { AppEnv } from '../../shared/platform/contract/context';
import { randomBase62, sha256Hex } from '../../shared/platform/contract/crypto';
import { rows } from '../../shared/platform/data/db';
import type { Services } from '../../shared/platform/contract/services';
import { HOUR } from '../../shared/platform/contract/time';
import { endSessionStreams } from './live';

export const CONSOLE_PATH = '/console';
export const SESSION_COOKIE = 'engram_console';
export const SESSION_TTL_MS = 12 * HOUR;

/** A live session as a request sees it: who, which key (by the hash of its secret), its CSRF token. */
export interface Session {
  idHash: string;
  tenantId: string;
  keyId: string;
  keyHash: string;
  csrfToken: string;
}

/** Loopback over plain http (a developer's machine): the only place the cookie goes without Secure. */
function secureCookie(c: Context<AppEnv>): boolean {
  const url = new URL(c.req.url);
  if (url.protocol === 'https:') return true;
  return !['127.0.0.1', 'localhost', '[::1]'].includes(url.hostname);
}

/** Starts a session for the key `keyId` of `tenantId` and sets its cookie. */
export async function startSession(c: Context<AppEnv>, tenantId: string, keyId: string): Promise<void> {
  const services = c.get('services');
  const id = randomBase62(43);
  const now = services.clock.now();
  await services.db.insert(consoleSessions).values({
    idHash: await sha256Hex(id),
    tenantId,
    keyId,
    csrfToken: randomBase62(43),
    createdAt: now,
    expiresAt: new Date(now.getTime() + SESSION_TTL_MS),
  });
  setCookie(c, SESSION_COOKIE, id, {
    httpOnly: true,
    sameSite: 'Strict',
    path: CONSOLE_PATH,
    secure: secureCookie(c),
    maxAge: SESSION_TTL_MS / 1000,
  });
}

/** The session the request's cookie names, unexpired, with its key's hash; null without one. */
export async function sessionOf(c: Context<AppEnv>): Promise<Session | null> {
  const id = getCookie(c, SESSION_COOKIE);
  if (!id || !/^[0-9A-Za-z]{43}$/.test(id)) return null;
  const services = c.get('services');
  const idHash = await sha256Hex(id);
  const [row] = await rows<{ tenant_id: string; key_id: string; csrf_token: string; key_hash: string }>(
    services.db,
    sql`SELECT s.tenant_id, s.key_id, s.csrf_token, k.key_hash
        FROM console_sessions s JOIN api_keys k ON k.id = s.key_id
        WHERE s.id_hash = ${idHash} AND s.expires_at > ${services.clock.now().toISOString()}`,
  );
  if (!row) return null;
  return { idHash, tenantId: row.tenant_id, keyId: row.key_id, keyHash: row.key_hash, csrfToken: row.csrf_token };
}

/** Whether the session `idHash` is still open (not signed out, not expired): a live stream asks this as it runs. */
export async function sessionOpen(services: Services, idHash: string): Promise<boolean> {
  const found = await rows<{ one: number }>(
    services.db,
    sql`SELECT 1 AS one FROM console_sessions WHERE id_hash = ${idHash} AND expires_at > ${services.clock.now().toISOString()}`,
  );
  return found.length > 0;
}

/** Ends the session (sign-out, or its key no longer valid) and clears the cookie. */
export async function endSession(c: Context<AppEnv>, idHash: string | null): Promise<void> {
  const services = c.get('services');
  if (idHash) {
    await services.db.delete(consoleSessions).where(eq(consoleSessions.idHash, idHash));
    endSessionStreams(services.eventBus, idHash);
  }
  deleteCookie(c, SESSION_COOKIE, { path: CONSOLE_PATH, secure: secureCookie(c), httpOnly: true, sameSite: 'Strict' });
}

/** Maintenance: sessions past their 12 hours. */
export async function deleteExpiredSessions({ db, now }: { db: Services['db']; now: Date }): Promise<number> {
  const deleted = await db.delete(consoleSessions).where(lt(consoleSessions.expiresAt, now)).returning({ id: consoleSessions.idHash });
  return deleted.length;
}
