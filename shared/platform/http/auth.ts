import { sql } from '../data/db';
import type { Context, MiddlewareHandler } from 'hono';
import type { AppEnv, AuthContext } from '../contract/context';
import { sha256Hex } from '../contract/crypto';
import { rows } from '../data/db';
import { AppError, limitReached } from '../contract/errors';
import type { KeyRecord } from '../data/key-cache';
import { type LimitState, setLimitHeaders } from '../limits/rate-limit-headers';
import type { Services } from '../contract/services';
import { type Feature, requireFeature, tiers, type Tier } from '../contract/tiers';
import { consumeApiCall, DAILY_CALLS, postgresReportCounters, REPORT_PATHS, quotaExhausted } from '../data/usage';
import { dayOf, MINUTE } from '../contract/time';

const unauthorized = (why: string) => new AppError('UNAUTHORIZED', why);

export function bearerToken(header: string | undefined): string | null {
  if (!header) return null;
  const match = /^Bearer\s+(\S+)\s*$/i.exec(header);
  return match ? match[1] : null;
}

async function readKey(services: Services, hash: string): Promise<KeyRecord | null> {
  const [row] = await rows<{
    key_id: string;
    tenant_id: string;
    tier: Tier;
    email: string;
    status: KeyRecord['status'];
    expires_at: string | Date | null;
    grace_expires_at: string | Date | null;
    scopes: string[] | null;
    agent_id: string | null;
    space_ids: string[] | null;
  }>(
    services.db,
    sql`SELECT k.id AS key_id, k.tenant_id, t.tier, t.email, k.status, k.expires_at, k.grace_expires_at,
               k.scopes, k.agent_id, k.space_ids
        FROM api_keys k JOIN tenants t ON t.id = k.tenant_id
        WHERE k.key_hash = ${hash}`,
  );
  if (!row) return null;
  return {
    keyId: row.key_id,
    tenantId: row.tenant_id,
    tier: row.tier,
    email: row.email,
    status: row.status,
    expiresAt: row.expires_at ? new Date(row.expires_at) : null,
    graceExpiresAt: row.grace_expires_at ? new Date(row.grace_expires_at) : null,
    ...(row.scopes ? { restriction: { scopes: pgList(row.scopes)!, agentId: row.agent_id, spaceIds: pgList(row.space_ids) } } : {}),
  };
}

/** A text[] or uuid[] column as an array (a driver may hand back the literal `{a,b}`). */
function pgList(value: string[] | string | null): string[] | null {
  if (value === null || Array.isArray(value)) return value;
  const inner = value.replace(/^\{|\}$/g, '');
  return inner ? inner.split(',').map((v) => v.replace(/^"|"$/g, '')) : [];
}

/**
 * The key of a secret hash, from the cache when it holds it. With the Redis gate a record read here
 * carries its tenant's key epoch, read between two reads of the row: a change committed before the
 * second read shows in it, and one committed after it replaces the epoch, so the record can never
 * be newer-looking than it is.
 */
async function lookupKey(services: Services, hash: string, fresh = false): Promise<{ key: KeyRecord | null; cached: boolean }> {
  const cache = services.keyCache;
  if (fresh) cache?.drop(hash);
  const cached = cache?.get(hash);
  if (cached) return { key: cached, cached: true };
  const generation = cache?.generation ?? 0;
  let record = await readKey(services, hash);
  if (record && services.gate) {
    const epoch = await services.gate.epochOf(record.tenantId);
    record = await readKey(services, hash);
    if (record) record.epoch = epoch;
  }
  if (record) cache?.set(hash, record, generation);
  return { key: record, cached: false };
}

function secretHash(services: Services, header: string | undefined): string | Promise<string> {
  const secret = bearerToken(header);
  if (!secret) throw unauthorized('Missing API key: send Authorization: Bearer <API_KEY>');
  // Our secrets are sk_ (API keys) or eat_ (OAuth access tokens, functions/oauth: the secret of
  // a grant's restricted key) + 43 base62 chars; anything else cannot match, so skip the lookup.
  if (!/^(sk|eat)_[0-9A-Za-z]{20,100}$/.test(secret)) throw unauthorized(secret.startsWith('eat_') ? 'Invalid access token' : 'Invalid API key');
  return services.hashSecret?.(secret) ?? sha256Hex(secret);
}

/** Throws 401 for unknown, revoked or expired keys. */
function admitKey(key: KeyRecord | null, now: Date): AuthContext {
  if (!key) throw unauthorized('Invalid API key');
  if (key.status === 'revoked') throw unauthorized('API key has been revoked');
  if (key.expiresAt && key.expiresAt <= now) throw unauthorized('API key has expired');
  if (key.status === 'grace' && key.graceExpiresAt && key.graceExpiresAt <= now) {
    throw unauthorized('API key has expired (rotation grace period ended)');
  }
  const auth: AuthContext = {
    tenantId: key.tenantId,
    keyId: key.keyId,
    tier: key.tier,
    email: key.email,
    keyStatus: key.status === 'grace' ? 'grace' : 'active',
  };
  if (key.restriction) auth.restriction = key.restriction;
  if (key.epoch !== undefined) auth.keyEpoch = key.epoch;
  return auth;
}

/** Resolves a bearer secret to its tenant, or throws 401 for missing, unknown, revoked or expired keys. */
export async function authenticate(services: Services, header: string | undefined): Promise<AuthContext> {
  return authenticateHash(services, await secretHash(services, header));
}

/** `authenticate` for a key known by the hash of its secret (the console's session: functions/console). */
export async function authenticateHash(services: Services, hash: string): Promise<AuthContext> {
  let { key, cached } = await lookupKey(services, hash);
  // Routes that count nothing (health, status) still check a cached key's epoch.
  if (cached && key?.epoch !== undefined && services.gate && (await services.gate.epochOf(key.tenantId)) !== key.epoch) {
    ({ key } = await lookupKey(services, hash, true));
  }
  return admitKey(key, services.clock.now());
}

function rateLimited(services: Services, auth: AuthContext, limit: number, count: number, resetAt: Date, now: Date): AppError {
  const usage = { metric: 'requests_per_minute', current: Math.min(count, limit), limit, plan: auth.tier, resets_at: resetAt.toISOString() };
  return limitReached(`Rate limit of ${limit} requests per minute exceeded for this key`, usage, { now, upgradeUrl: services.config.UPGRADE_URL });
}

const apiCallsExhausted = (services: Services, auth: AuthContext, value: number, now: Date): AppError =>
  quotaExhausted(services, auth.tier, 'api_calls', value, now, 'Monthly API call quota exhausted');

/**
 * Protected routes: authenticate, then the per-key request rate, then the monthly api_calls quota.
 * Refusals are 429 RATE_LIMITED with `usage` and `Retry-After`.
 */
export const requireKey: MiddlewareHandler<AppEnv> = async (c, next) =>
  admitKeyHash(c, next, await secretHash(c.get('services'), c.req.header('authorization')));

/**
 * `requireKey` for a key known by the hash of its secret: the console admits each request of a
 * session this way, so it passes the same key check, rate window and quota as the API.
 */
export async function admitKeyHash(c: Context<AppEnv>, next: () => Promise<void>, hash: string): Promise<void> {
  const services = c.get('services');
  if (services.gate) return gatedKey(c, next, hash);
  const auth = await authenticateHash(services, hash);
  c.set('auth', auth);
  const now = services.clock.now();
  const limit = rateLimitOf(services, auth.tier);
  const rate = await services.rateLimiter.hit({ tenantId: auth.tenantId, keyId: auth.keyId, limit, windowMs: MINUTE }, now);
  const window = { limit, remaining: rate.remaining, resetAt: rate.resetAt };
  setLimitHeaders(c, { rate: window, now });
  if (!rate.allowed) throw rateLimited(services, auth, limit, limit - rate.remaining, rate.resetAt, now);
  const quota = await consumeApiCall(services, auth, now);
  c.set('counted', quota);
  setLimitHeaders(c, { rate: window, quota: { limit: tiers[auth.tier].limits.api_calls, used: quota.value }, now });
  if (!quota.allowed) throw apiCallsExhausted(services, auth, quota.value, now);
  await next();
}

/**
 * A request that counts no API call but must not run unbounded (MCP's own messages: initialize,
 * tools/list, ping): the key's own rate window for `purpose`, at the tier's requests per minute.
 * `messages` is how many the request carries (a JSON-RPC batch counts each of its messages), so
 * a batch larger than what is left of the window is refused as one message past it is. Answers
 * the window (for the answer's RateLimit headers) and, past it, the 429 RATE_LIMITED to answer.
 */
export async function countUncounted(
  services: Services,
  auth: AuthContext,
  purpose: string,
  messages = 1,
): Promise<{ window: LimitState; refusal: AppError | null }> {
  const now = services.clock.now();
  const limit = rateLimitOf(services, auth.tier);
  // Past the limit a batch is refused whatever its size: a window never needs more than limit + 1.
  const hits = Math.max(1, Math.min(messages, limit + 1));
  const rate = await services.rateLimiter.hit({ tenantId: auth.tenantId, keyId: `${purpose}:${auth.keyId}`, limit, windowMs: MINUTE, hits }, now);
  const window = { rate: { limit, remaining: rate.remaining, resetAt: rate.resetAt }, now };
  return { window, refusal: rate.allowed ? null : rateLimited(services, auth, limit, limit - rate.remaining, rate.resetAt, now) };
}

const rateLimitOf = (services: Services, tier: Tier) => Math.max(1, Math.floor(tiers[tier].limits.requests_per_minute * services.config.RATE_LIMIT_SCALE));

/**
 * `requireKey` with Redis: the cached key, its epoch check, the rate window and the counts in one
 * Redis call (request-gate.ts). A stale epoch counts nothing and sends the key back to Postgres.
 */
async function gatedKey(c: Context<AppEnv>, next: () => Promise<void>, hash: string): Promise<void> {
  const services = c.get('services');
  const gate = services.gate!;
  const now = services.clock.now();
  let { key, cached } = await lookupKey(services, hash);
  const report = REPORT_PATHS.has(c.req.path) ? postgresReportCounters(now) : null;
  for (;;) {
    const auth = admitKey(key, now);
    const limit = rateLimitOf(services, auth.tier);
    const outcome = await gate.admit({
      tenantId: auth.tenantId,
      keyId: auth.keyId,
      // Only a cached record is checked: one read from Postgres during this request saw every change
      // committed before the request began, and a change after that is concurrent with the request.
      epoch: cached ? (key!.epoch ?? '') : null,
      rateLimit: limit,
      windowMs: MINUTE,
      quotaLimit: tiers[auth.tier].limits.api_calls,
      now,
      writes: c.req.method !== 'GET' && c.req.method !== 'HEAD',
    });
    if (outcome.kind === 'stale') {
      ({ key, cached } = await lookupKey(services, hash, true));
      continue;
    }
    // Keys or governance changed since this request read its key: it uses no kept copy of them.
    if (outcome.epoch !== key!.epoch) delete auth.keyEpoch;
    c.set('auth', auth);
    setLimitHeaders(c, {
      rate: { limit, remaining: limit - outcome.rate.count, resetAt: outcome.rate.resetAt },
      ...(outcome.rate.allowed ? { quota: { limit: tiers[auth.tier].limits.api_calls, used: outcome.quota.value } } : {}),
      now,
    });
    if (!outcome.rate.allowed) throw rateLimited(services, auth, limit, outcome.rate.count, outcome.rate.resetAt, now);
    if (!outcome.quota.allowed) throw apiCallsExhausted(services, auth, outcome.quota.value, now);
    // An admitted write is one of the tenant's writers until it ends, answered or failed.
    const write = outcome.usageWrite;
    if (write) c.set('usageWrite', write);
    try {
      const today = dayOf(now);
      const values = new Map<string, number>([[`${DAILY_CALLS} ${today}`, outcome.today]]);
      if (report) {
        // The report's Postgres-held counters: this instance's copy while no write changed them (the
        // usage epoch came with the count), else read now, after that epoch was read, and kept only
        // if no write was in flight then (one could commit after this read).
        const cacheKey = `${auth.tenantId} ${report.buckets}`;
        const at = Date.now();
        let read = gate.cachedReport(cacheKey, outcome.usageEpoch, at);
        if (!read) {
          read = await services.counters.read(auth.tenantId, report.counters);
          if (outcome.usageWriters === 0) gate.rememberReport(cacheKey, outcome.usageEpoch, read, at);
        }
        for (let i = 0; i < read.length; i++) values.set(`${report.counters[i].metric} ${report.counters[i].bucket}`, read[i]);
      }
      c.set('counted', {
        allowed: outcome.quota.allowed,
        value: outcome.quota.value,
        reading: (metric, bucket) => values.get(`${metric} ${bucket}`),
      });
      return await next();
    } finally {
      if (write) gate.writeEnded(write);
    }
  }
}

/**
 * After a commit that changed a tenant's keys or tier, before the answer: this instance forgets
 * the tenant's cached keys, and with Redis every instance's cached keys of the tenant go stale.
 */
export async function forgetKeys(services: Services, tenantId: string): Promise<void> {
  services.keyCache?.forgetTenant(tenantId);
  await services.gate?.bumpKeyEpoch(tenantId);
}

/** Public routes that show more to a caller with a valid key (health, status). No quota is spent. */
export const optionalKey: MiddlewareHandler<AppEnv> = async (c, next) => {
  if (c.req.header('authorization')) c.set('auth', await authenticate(c.get('services'), c.req.header('authorization')));
  await next();
};

/**
 * The gate of an experimental route (`keyRoute({ experimental: true })`): after `requireKey`, before
 * the tier gate. Unless SVC_ENABLE_EXPERIMENTAL is on, every such route is 403
 * `svc_ram.v1.experimental.disabled`, whatever the caller's tier.
 */
export const EXPERIMENTAL_DISABLED = 'svc_ram.v1.experimental.disabled' as const;
export const experimentalGate: MiddlewareHandler<AppEnv> = async (c, next) => {
  if (!c.get('services').config.SVC_ENABLE_EXPERIMENTAL) {
    throw new AppError(EXPERIMENTAL_DISABLED, 'This experimental endpoint is not enabled on this deployment (SVC_ENABLE_EXPERIMENTAL=1 enables it)');
  }
  await next();
};

/** The tier gate a route declares with `feature`: runs after `requireKey`, before the handler. */
export const featureGate =
  (feature: Feature): MiddlewareHandler<AppEnv> =>
  async (c, next) => {
    requireFeature(authOf(c).tier, feature);
    await next();
  };

export function authOf(c: Context<AppEnv>): AuthContext {
  const auth = c.get('auth');
  if (!auth) throw unauthorized('Missing API key');
  return auth;
}
