import { sql } from 'drizzle-orm';
import type { Context, MiddlewareHandler } from 'hono';
import type { AppEnv, AuthContext } from './context';
import { sha256Hex } from './crypto';
import { rows } from './db';
import { AppError } from './errors';
import type { KeyRecord } from './key-cache';
import type { Services } from './services';
import { type Feature, requireFeature, tiers, type Tier } from './tiers';
import { MINUTE } from './time';
import { consumeApiCall, usageSnapshotForError } from './usage';

const unauthorized = (why: string) => new AppError('UNAUTHORIZED', why);

export function bearerToken(header: string | undefined): string | null {
  if (!header) return null;
  const match = /^Bearer\s+(\S+)\s*$/i.exec(header);
  return match ? match[1] : null;
}

async function lookupKey(services: Services, secret: string): Promise<KeyRecord | null> {
  const hash = services.hashSecret?.(secret) ?? (await sha256Hex(secret));
  const cached = services.keyCache?.get(hash);
  if (cached) return cached;
  const generation = services.keyCache?.generation ?? 0;
  const [row] = await rows<{
    key_id: string;
    tenant_id: string;
    tier: Tier;
    email: string;
    status: KeyRecord['status'];
    expires_at: string | Date | null;
    grace_expires_at: string | Date | null;
  }>(
    services.db,
    sql`SELECT k.id AS key_id, k.tenant_id, t.tier, t.email, k.status, k.expires_at, k.grace_expires_at
        FROM api_keys k JOIN tenants t ON t.id = k.tenant_id
        WHERE k.key_hash = ${hash}`,
  );
  if (!row) return null;
  const record: KeyRecord = {
    keyId: row.key_id,
    tenantId: row.tenant_id,
    tier: row.tier,
    email: row.email,
    status: row.status,
    expiresAt: row.expires_at ? new Date(row.expires_at) : null,
    graceExpiresAt: row.grace_expires_at ? new Date(row.grace_expires_at) : null,
  };
  services.keyCache?.set(hash, record, generation);
  return record;
}

/** Resolves a bearer secret to its tenant, or throws 401 for missing, unknown, revoked or expired keys. */
export async function authenticate(services: Services, header: string | undefined): Promise<AuthContext> {
  const secret = bearerToken(header);
  if (!secret) throw unauthorized('Missing API key: send Authorization: Bearer <API_KEY>');
  // Our secrets are sk_ + 43 base62 chars; anything else cannot match, so skip the lookup.
  if (!/^sk_[0-9A-Za-z]{20,100}$/.test(secret)) throw unauthorized('Invalid API key');
  const key = await lookupKey(services, secret);
  if (!key) throw unauthorized('Invalid API key');
  const now = services.clock.now();
  if (key.status === 'revoked') throw unauthorized('API key has been revoked');
  if (key.expiresAt && key.expiresAt <= now) throw unauthorized('API key has expired');
  if (key.status === 'grace' && key.graceExpiresAt && key.graceExpiresAt <= now) {
    throw unauthorized('API key has expired (rotation grace period ended)');
  }
  return { tenantId: key.tenantId, keyId: key.keyId, tier: key.tier, email: key.email, keyStatus: key.status === 'grace' ? 'grace' : 'active' };
}

/**
 * Protected routes: authenticate, then the per-key request rate, then the monthly api_calls quota.
 * Refusals are 429 RATE_LIMITED with `usage` and `Retry-After`.
 */
export const requireKey: MiddlewareHandler<AppEnv> = async (c, next) => {
  const services = c.get('services');
  const auth = await authenticate(services, c.req.header('authorization'));
  c.set('auth', auth);
  const now = services.clock.now();
  const limit = Math.max(1, Math.floor(tiers[auth.tier].limits.requests_per_minute * services.config.RATE_LIMIT_SCALE));
  const rate = await services.rateLimiter.hit({ tenantId: auth.tenantId, keyId: auth.keyId, limit, windowMs: MINUTE }, now);
  c.header('X-RateLimit-Limit', String(limit));
  c.header('X-RateLimit-Remaining', String(rate.remaining));
  if (!rate.allowed) {
    const retryAfter = Math.max(1, Math.ceil((rate.resetAt.getTime() - now.getTime()) / 1000));
    throw new AppError('RATE_LIMITED', `Rate limit of ${limit} requests per minute exceeded for this key`, {
      retry_after: retryAfter,
      usage: { current: limit - rate.remaining, limit, plan: auth.tier, resets_at: rate.resetAt.toISOString() },
      upgrade_url: services.config.UPGRADE_URL,
    });
  }
  const quota = await consumeApiCall(services, auth, now);
  c.set('counted', quota);
  if (!quota.allowed) {
    throw new AppError('RATE_LIMITED', 'Monthly API call quota exhausted', {
      ...usageSnapshotForError(services, auth.tier, 'api_calls', quota.value, now),
    });
  }
  await next();
};

/** Public routes that show more to a caller with a valid key (health, status). No quota is spent. */
export const optionalKey: MiddlewareHandler<AppEnv> = async (c, next) => {
  if (c.req.header('authorization')) c.set('auth', await authenticate(c.get('services'), c.req.header('authorization')));
  await next();
};

/**
 * The gate of an experimental route (`keyRoute({ experimental: true })`): after `requireKey`, before
 * the tier gate. Unless SVC_ENABLE_EXPERIMENTAL is on, every such route is 403
 * `svc_ram.v1.experimental.disabled` (spec §4.13), whatever the caller's tier.
 */
export const EXPERIMENTAL_DISABLED = 'svc_ram.v1.experimental.disabled';
export const experimentalGate: MiddlewareHandler<AppEnv> = async (c, next) => {
  if (!c.get('services').config.SVC_ENABLE_EXPERIMENTAL) {
    throw new AppError(EXPERIMENTAL_DISABLED, 'This experimental endpoint is not enabled on this deployment (SVC_ENABLE_EXPERIMENTAL=1 enables it)', {}, 403);
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
