import { sql } from './db';
import type { Context, MiddlewareHandler } from 'hono';
import type { ContentfulStatusCode } from 'hono/utils/http-status';
import type { AppEnv, IdempotencyClaim } from '../contract/context';
import { sha256Hex } from '../contract/crypto';
import { type DbOrTx, rows } from './db';
import { errorFields } from '../contract/error-fields';
import { AppError, validationError } from '../contract/errors';
import type { Services } from '../contract/services';
import { DAY, MINUTE } from '../contract/time';

/**
 * `Idempotency-Key` on every POST route that needs a key (`keyRoute` adds this middleware):
 *
 * - The first request with a key inserts a `running` row for (tenant, key) holding a hash of the
 *   request (method, path, query, body). The primary key lets exactly one of several concurrent
 *   requests insert it; that one does the work.
 * - When the handler returns a response itself, its status, body and content type are kept 24 h
 *   and the row becomes `done`. A repeat with the same hash replays them with
 *   `Idempotent-Replayed: true`; a repeat with another hash is 422 VALIDATION_ERROR.
 * - A thrown error (any 4xx/5xx the error handler renders) is not kept: every write runs in one
 *   transaction, so a thrown request changed nothing and the row is deleted for the retry to run
 *   again. Responses that are not JSON (streams) or larger than 1 MiB are not kept either.
 * - A repeat while the first is still running waits up to WAIT_MS for its result, then answers 409
 *   CONFLICT with Retry-After. A `running` row whose request died (crash, lost connection) may be
 *   taken over by a request with the same hash after LOCK_MS.
 *
 * The work's own transaction marks the row `committed` (`write` in unit-of-work.ts), and the kept
 * response is written after it commits. A crash between the two leaves a `committed` row without a
 * response: a retry then gets 409 CONFLICT saying the work was done and its answer lost, never the
 * work done twice.
 *
 * A kept body may hold a secret (a rotated API key, a share token, which are otherwise stored only
 * hashed), so the table holds the key's SHA-256 and the body AES-GCM-encrypted under a key derived
 * (HKDF) from the Idempotency-Key itself: only a client that holds the key can have it replayed.
 */
export const IDEMPOTENCY_HEADER = 'Idempotency-Key';
/** Set on the 409 of a repeat whose first request is still running (and on no other answer). */
export const IN_PROGRESS_HEADER = 'Idempotency-Status';
const REPLAYED_HEADER = 'Idempotent-Replayed';
export const IDEMPOTENCY_TTL_MS = DAY;
const LOCK_MS = 2 * MINUTE;
const WAIT_MS = 5_000;
const POLL_MS = 50;
const MAX_KEPT_BYTES = 1024 * 1024;
const KEY = /^[\x21-\x7e]{1,255}$/;
/** Response headers a replay repeats (besides its own X-Request-Id and rate-limit headers). */
const KEPT_HEADERS = ['content-type', 'location'];

/** The OpenAPI header parameter `keyRoute` documents on POST routes. */
export const idempotencyParameter = {
  name: IDEMPOTENCY_HEADER,
  in: 'header' as const,
  required: false,
  description:
    'Makes a retry safe: 1 to 255 visible ASCII characters, unique per operation. The first response (status and body) is kept for 24 hours per tenant and key; a repeat with the same method, path, query and body replays it with `Idempotent-Replayed: true` without doing the work again; a repeat with a different request is 422 VALIDATION_ERROR; a repeat while the first is still running waits for it or answers 409 CONFLICT with `Idempotency-Status: in-progress` and Retry-After (the one 409 to retry as it is). Error responses are not kept (nothing was written), so a retry after one runs again.',
  schema: { type: 'string' as const, minLength: 1, maxLength: 255, pattern: '^[\\x21-\\x7E]+$' },
};

interface KeptRow {
  request_hash: string;
  status: 'running' | 'committed' | 'done';
  locked_until: Date | string;
  response_status: number | null;
  response_headers: Record<string, string> | string | null;
  response_body: string | null;
}

/** One request's claim on a key: the tenant, the key's hash, the request's hash, the body cipher key. */
interface Claim extends IdempotencyClaim {
  cipher: CryptoKey;
}

/** In the work's transaction (unit-of-work.ts): the write this key stands for is done. */
export async function markCommitted(tx: DbOrTx, { tenantId, keyHash, hash }: IdempotencyClaim): Promise<void> {
  await tx.execute(
    sql`UPDATE idempotency_keys SET status = 'committed'
        WHERE tenant_id = ${tenantId} AND key_hash = ${keyHash} AND request_hash = ${hash} AND status = 'running'`,
  );
}

const encoder = new TextEncoder();

async function cipherKey(tenantId: string, key: string): Promise<CryptoKey> {
  const material = await crypto.subtle.importKey('raw', encoder.encode(key), 'HKDF', false, ['deriveKey']);
  return crypto.subtle.deriveKey(
    { name: 'HKDF', hash: 'SHA-256', salt: encoder.encode(tenantId), info: encoder.encode('engram idempotent response v1') },
    material,
    { name: 'AES-GCM', length: 256 },
    false,
    ['encrypt', 'decrypt'],
  );
}

function toBase64(bytes: Uint8Array): string {
  let binary = '';
  for (let i = 0; i < bytes.length; i += 0x8000) binary += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  return btoa(binary);
}

const fromBase64 = (text: string) => Uint8Array.from(atob(text), (ch) => ch.charCodeAt(0));

async function seal(cipher: CryptoKey, body: string): Promise<string> {
  const iv = crypto.getRandomValues(new Uint8Array(12));
  const sealed = new Uint8Array(await crypto.subtle.encrypt({ name: 'AES-GCM', iv }, cipher, encoder.encode(body)));
  const out = new Uint8Array(iv.length + sealed.length);
  out.set(iv);
  out.set(sealed, iv.length);
  return toBase64(out);
}

async function open(cipher: CryptoKey, stored: string): Promise<string> {
  const bytes = fromBase64(stored);
  const plain = await crypto.subtle.decrypt({ name: 'AES-GCM', iv: bytes.subarray(0, 12) }, cipher, bytes.subarray(12));
  return new TextDecoder().decode(plain);
}

async function requestHash(c: Context<AppEnv>): Promise<string> {
  const url = new URL(c.req.url);
  const body = await c.req.text();
  return sha256Hex(`${c.req.method}\n${url.pathname}\n${url.search}\n${body}`);
}

/** Inserts the `running` row, or takes over an expired one or a dead run of the same request. */
async function claim(services: Services, { tenantId, keyHash, hash }: Claim): Promise<boolean> {
  const now = services.clock.now();
  const claimed = await rows<{ key_hash: string }>(
    services.db,
    sql`INSERT INTO idempotency_keys AS k (tenant_id, key_hash, request_hash, status, locked_until, created_at, expires_at)
        VALUES (${tenantId}, ${keyHash}, ${hash}, 'running', ${new Date(now.getTime() + LOCK_MS).toISOString()},
                ${now.toISOString()}, ${new Date(now.getTime() + IDEMPOTENCY_TTL_MS).toISOString()})
        ON CONFLICT (tenant_id, key_hash) DO UPDATE
          SET request_hash = EXCLUDED.request_hash, status = 'running', locked_until = EXCLUDED.locked_until,
              response_status = NULL, response_headers = NULL, response_body = NULL,
              created_at = EXCLUDED.created_at, expires_at = EXCLUDED.expires_at
          WHERE k.expires_at <= EXCLUDED.created_at
             OR (k.status = 'running' AND k.locked_until <= EXCLUDED.created_at AND k.request_hash = EXCLUDED.request_hash)
        RETURNING k.key_hash`,
  );
  return claimed.length > 0;
}

async function read(services: Services, { tenantId, keyHash }: Claim): Promise<KeptRow | null> {
  const [row] = await rows<KeptRow>(
    services.db,
    sql`SELECT request_hash, status, locked_until, response_status, response_headers, response_body
        FROM idempotency_keys WHERE tenant_id = ${tenantId} AND key_hash = ${keyHash}`,
  );
  return row ?? null;
}

async function keep(services: Services, { tenantId, keyHash, hash, cipher }: Claim, res: Response): Promise<boolean> {
  const contentType = res.headers.get('content-type') ?? '';
  if (res.body && !/^application\/(?:[\w.+-]+\+)?json\b/i.test(contentType)) return false;
  const body = res.body ? await res.clone().text() : '';
  if (body.length > MAX_KEPT_BYTES) return false;
  const headers = Object.fromEntries(KEPT_HEADERS.flatMap((h) => (res.headers.has(h) ? [[h, res.headers.get(h)!]] : [])));
  await services.db.execute(
    sql`UPDATE idempotency_keys SET status = 'done', response_status = ${res.status},
          response_headers = ${JSON.stringify(headers)}::jsonb, response_body = ${body ? await seal(cipher, body) : null}
        WHERE tenant_id = ${tenantId} AND key_hash = ${keyHash} AND request_hash = ${hash} AND status IN ('running', 'committed')`,
  );
  return true;
}

/**
 * Gives the key back when nothing was written (still `running`: a retry runs afresh). A `committed`
 * row stays, unlocked at once: its write happened, so a retry is told so instead of repeating it.
 */
async function release(services: Services, { tenantId, keyHash, hash }: Claim): Promise<void> {
  const mine = sql`tenant_id = ${tenantId} AND key_hash = ${keyHash} AND request_hash = ${hash}`;
  await services.db.execute(sql`DELETE FROM idempotency_keys WHERE ${mine} AND status = 'running'`);
  await services.db.execute(sql`UPDATE idempotency_keys SET locked_until = ${services.clock.now().toISOString()} WHERE ${mine} AND status = 'committed'`);
}

async function replay(c: Context<AppEnv>, row: KeptRow, cipher: CryptoKey): Promise<Response> {
  const kept = typeof row.response_headers === 'string' ? JSON.parse(row.response_headers) : (row.response_headers ?? {});
  const headers = { ...kept, [REPLAYED_HEADER]: 'true' };
  const status = row.response_status as ContentfulStatusCode;
  return row.response_body ? c.body(await open(cipher, row.response_body), status, headers) : c.body(null, status, headers);
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export const idempotency: MiddlewareHandler<AppEnv> = async (c, next) => {
  const key = c.req.header(IDEMPOTENCY_HEADER);
  if (key === undefined) return next();
  if (!KEY.test(key)) throw validationError(IDEMPOTENCY_HEADER, 'must be 1 to 255 visible ASCII characters');
  const services = c.get('services');
  const auth = c.get('auth');
  if (!auth) return next();
  const own: Claim = { tenantId: auth.tenantId, keyHash: await sha256Hex(key), hash: await requestHash(c), cipher: await cipherKey(auth.tenantId, key) };

  const deadline = Date.now() + WAIT_MS;
  for (;;) {
    if (await claim(services, own)) break;
    const row = await read(services, own);
    if (row && row.request_hash !== own.hash) {
      throw new AppError(
        'VALIDATION_ERROR',
        `${IDEMPOTENCY_HEADER} was already used with a different request (method, path, query or body)`,
        {
          details: [{ path: IDEMPOTENCY_HEADER, message: 'already used with a different request' }],
        },
        422,
      );
    }
    if (row?.status === 'done') return replay(c, row, own.cipher);
    if (row?.status === 'committed' && new Date(row.locked_until).getTime() <= services.clock.now().getTime()) {
      throw new AppError('CONFLICT', `The request with this ${IDEMPOTENCY_HEADER} was completed, but its response was lost; it was not repeated`, {
        details: [{ path: IDEMPOTENCY_HEADER, message: 'completed; the response was lost' }],
      });
    }
    // Still running (or just released: the next claim takes it).
    if (Date.now() >= deadline) {
      // The one 409 a client may retry as it is: clients tell it from other conflicts by this header.
      c.header(IN_PROGRESS_HEADER, 'in-progress');
      const running = new AppError('CONFLICT', `A request with this ${IDEMPOTENCY_HEADER} is still in progress; retry it later`, { retry_after: 1 });
      running.retryable = true;
      throw running;
    }
    await sleep(POLL_MS);
  }

  c.set('idempotency', own);
  try {
    await next();
  } catch (err) {
    await release(services, own).catch(() => undefined);
    throw err;
  }
  try {
    if (c.error || !(await keep(services, own, c.res))) await release(services, own);
  } catch (err) {
    // The work is done and answered; a retry after LOCK_MS would run it again.
    services.log.warn('could not keep an idempotent response', { request_id: c.get('requestId'), ...errorFields(err) });
  }
};
