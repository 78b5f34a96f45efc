import { eq, sql } from 'drizzle-orm';
import { apiKeys, signupAttempts, signupTokens, tenants } from '../../schema';
import { insertTenant, issueKey, normalizeEmail } from '../../shared/accounts';
import { appendAudit } from '../../shared/audit';
import type { Actor, AuthContext } from '../../shared/context';
import { randomBase62, sha256Hex } from '../../shared/crypto';
import { isDisposableEmail } from '../../shared/disposable';
import { AppError, notFound, validationError } from '../../shared/errors';
import { newId } from '../../shared/ids';
import { sendMail } from '../../shared/mail';
import type { Services } from '../../shared/services';
import { DAY, HOUR } from '../../shared/time';
import * as q from './queries';
import { toKeyDto } from './schemas';

export const VERIFICATION_TTL_MS = 24 * HOUR;
export const ROTATION_GRACE_MS = 24 * HOUR;
export const SIGNUPS_PER_IP = 2;
export const SIGNUP_WINDOW_MS = 30 * DAY;

const signupLimited = () =>
  new AppError('RATE_LIMITED', `At most ${SIGNUPS_PER_IP} signups per IP address every 30 days`, {
    retry_after: Math.round(SIGNUP_WINDOW_MS / 1000),
  });

/**
 * Signup: creates (or finds) the unverified tenant and mails a single-use token. An address that
 * is already verified gets a notice instead of a token, and the caller sees the same answer
 * either way, so signup cannot be used to learn who has an account.
 */
export async function signup(services: Services, input: { email: string; clientIp: string | null }) {
  const email = normalizeEmail(input.email);
  if (isDisposableEmail(email)) throw validationError('email', 'disposable e-mail domains are not accepted');
  const now = services.clock.now();
  const ipHash = await sha256Hex(`signup-ip:${input.clientIp ?? 'unknown'}`);
  const member = newId('token');
  const redisKey = `engram:signup:${ipHash}`;
  if (services.redis) {
    const count = await services.redis.addToSlidingWindow(redisKey, member, now.getTime(), SIGNUP_WINDOW_MS);
    if (count > SIGNUPS_PER_IP) {
      // Over the limit: take our entry back out so refused attempts do not extend the window.
      await services.redis.removeFromSlidingWindow(redisKey, member);
      throw signupLimited();
    }
  }
  try {
    const tenant = await services.db.transaction(async (tx) => {
      if (!services.redis) {
        // Serialize signups from one address so two concurrent ones cannot both see a free slot.
        await tx.execute(sql`SELECT pg_advisory_xact_lock(hashtextextended(${ipHash}, 0))`);
        const recent = await q.countRecentSignups(tx, ipHash, new Date(now.getTime() - SIGNUP_WINDOW_MS));
        if (recent >= SIGNUPS_PER_IP) throw signupLimited();
        await tx.insert(signupAttempts).values({ ipHash, createdAt: now });
      }
      const existing = await q.findTenantByEmail(tx, email);
      if (existing?.emailVerifiedAt) {
        await sendMail(tx, services.config, {
          to: email,
          subject: 'Your engram account already exists',
          text: 'Someone asked to sign up with this address, which already has a verified account. If it was you, use your existing key or rotate it. No action is needed otherwise.',
        }, now);
        return existing;
      }
      const tenant = existing ?? (await insertTenant(tx, { email, tier: 'free', verified: false, at: now }));
      // A new token replaces any earlier unused one.
      await tx
        .update(signupTokens)
        .set({ usedAt: now })
        .where(sql`${signupTokens.tenantId} = ${tenant.id} AND ${signupTokens.usedAt} IS NULL`);
      const token = `vt_${randomBase62(32)}`;
      await tx.insert(signupTokens).values({
        id: newId('token'),
        tenantId: tenant.id,
        tokenHash: await sha256Hex(token),
        expiresAt: new Date(now.getTime() + VERIFICATION_TTL_MS),
        createdAt: now,
      });
      await sendMail(tx, services.config, {
        to: email,
        subject: 'Verify your engram account',
        text: `Your verification token: ${token}\n\nSend it with your e-mail to POST /v1/verify within 24 hours to receive your API key.`,
        token,
      }, now);
      return tenant;
    });
    services.notifyJobs();
    return {
      api_key: null,
      tier: 'free' as const,
      created_at: tenant.createdAt.toISOString(),
      message: 'Check your e-mail for a verification token, then call POST /v1/verify with it.',
      requires_verification: true as const,
    };
  } catch (err) {
    // The slot was taken before the transaction; give it back when no signup happened.
    if (services.redis && !(err instanceof AppError && err.code === 'RATE_LIMITED')) {
      await services.redis.removeFromSlidingWindow(redisKey, member).catch(() => undefined);
    }
    throw err;
  }
}

/** Verify: spends the token, marks the address verified and issues the first key. */
export async function verify(services: Services, input: { token: string; email: string; requestId: string }) {
  const email = normalizeEmail(input.email);
  const now = services.clock.now();
  const tokenHash = await sha256Hex(input.token);
  const result = await services.db.transaction(async (tx) => {
    const tenant = await q.findTenantByEmail(tx, email);
    if (!tenant) throw notFound('Account');
    const token = await q.consumeSignupToken(tx, tenant.id, tokenHash, now);
    if (!token) throw new AppError('INVALID_TOKEN', 'Verification token is invalid, expired or already used');
    await tx.update(tenants).set({ emailVerifiedAt: now, updatedAt: now }).where(eq(tenants.id, tenant.id));
    const key = await issueKey(tx, { tenantId: tenant.id, at: now, actor: 'signup', requestId: input.requestId, reason: 'verify' });
    return { tenant, key };
  });
  return {
    api_key: result.key.secret,
    key_id: result.key.keyId,
    tier: result.tenant.tier,
    message: 'Account verified. Store this key now: it is not shown again.',
  };
}

/** Rotate: a new active key; the calling key keeps working until the grace period ends. */
export async function rotate(services: Services, auth: AuthContext, actor: Actor, input: { expiresAt?: Date }) {
  const now = services.clock.now();
  if (input.expiresAt && input.expiresAt <= now) throw validationError('expires_at', 'must be in the future');
  const result = await services.db.transaction(async (tx) => {
    const current = await q.lockKey(tx, auth.tenantId, auth.keyId);
    if (!current || current.status === 'revoked') throw new AppError('UNAUTHORIZED', 'API key has been revoked');
    const key = await issueKey(tx, {
      tenantId: auth.tenantId,
      at: now,
      expiresAt: input.expiresAt ?? null,
      actor: auth.keyId,
      requestId: actor.requestId,
      reason: 'rotate',
    });
    let graceExpiresAt = current.graceExpiresAt;
    if (current.status === 'active') {
      graceExpiresAt = new Date(now.getTime() + ROTATION_GRACE_MS);
      await tx
        .update(apiKeys)
        .set({ status: 'grace', graceExpiresAt, replacedBy: key.keyId })
        .where(eq(apiKeys.id, current.id));
    }
    await appendAudit(tx, {
      tenantId: auth.tenantId,
      operation: 'key.rotated',
      resourceType: 'api_key',
      resourceId: current.id,
      actor: auth.keyId,
      requestId: actor.requestId,
      metadata: { old_key_id: current.id, new_key_id: key.keyId, grace_expires_at: graceExpiresAt?.toISOString() ?? null },
      at: now,
    });
    return { key, graceExpiresAt };
  });
  services.keyCache?.forgetTenant(auth.tenantId);
  return {
    new_key: result.key.secret,
    key_id: result.key.keyId,
    grace_expires_at: result.graceExpiresAt?.toISOString() ?? null,
    message: result.graceExpiresAt
      ? `New key issued. The previous key keeps working until ${result.graceExpiresAt.toISOString()}.`
      : 'New key issued.',
  };
}

export async function list(services: Services, auth: AuthContext) {
  const now = services.clock.now();
  const keys = await q.listKeys(services.db, auth.tenantId);
  return { keys: keys.map((k) => toKeyDto(k, auth.tier, now)) };
}

/** Revoke by id or prefix; immediate. Revoking an already revoked key is a no-op that says so. */
export async function revoke(services: Services, auth: AuthContext, actor: Actor, input: { keyId: string }) {
  const now = services.clock.now();
  const result = await services.db.transaction(async (tx) => {
    const matches = await q.lockKeyByIdOrPrefix(tx, auth.tenantId, input.keyId);
    if (matches.length === 0) throw notFound('API key');
    if (matches.length > 1) throw validationError('key_id', 'prefix matches several keys; use the key id');
    const [key] = matches;
    if (key.status === 'revoked') return { key, already: true };
    await tx.update(apiKeys).set({ status: 'revoked', revokedAt: now }).where(eq(apiKeys.id, key.id));
    await appendAudit(tx, {
      tenantId: auth.tenantId,
      operation: 'key.revoked',
      resourceType: 'api_key',
      resourceId: key.id,
      actor: auth.keyId,
      requestId: actor.requestId,
      metadata: { key_prefix: key.keyPrefix, self: key.id === auth.keyId },
      at: now,
    });
    return { key, already: false };
  });
  services.keyCache?.forgetTenant(auth.tenantId);
  return {
    revoked_key_id: result.key.id,
    message: result.already ? 'Key was already revoked.' : 'Key revoked; it stops working immediately.',
  };
}
