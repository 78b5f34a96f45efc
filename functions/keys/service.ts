import { insertTenant, issueKey, normalizeEmail } from '../../shared/platform/data/accounts';
import type { Ctx, TenantCtx } from '../../shared/platform/contract/context';
import { type Work, write } from '../../shared/platform/data/unit-of-work';
import { randomBase62, sha256Hex } from '../../shared/platform/contract/crypto';
import { isDisposableEmail } from './disposable';
import { forgetKeys } from '../../shared/platform/http/auth';
import { isLoopbackHost } from '../../shared/platform/contract/config';
import { AppError, notFound, validationError } from '../../shared/platform/contract/errors';
import { newId, toUrn } from '../../shared/platform/contract/ids';
import { requireUnrestricted, unrestrictedOnly } from '../../shared/platform/contract/scopes';
import { admitRestriction, checkedRestriction, issueRestrictedKey, lockManagingKey } from '../../shared/platform/data/restricted-keys';
import { sendMail } from '../../shared/jobs/mail';
import { DAY, HOUR } from '../../shared/platform/contract/time';
import * as q from './queries';
import { type RestrictedKeyBody, toKeyDto } from './schemas';
import type { z } from '@hono/zod-openapi';

export const VERIFICATION_TTL_MS = 24 * HOUR;
export const ROTATION_GRACE_MS = 24 * HOUR;
export const SIGNUPS_PER_IP = 2;
export const SIGNUP_WINDOW_MS = 30 * DAY;
/**
 * The window for a loopback client of a server on embedded storage: someone trying the service on
 * their own machine, who would otherwise be locked out of signup for a month after two tries. Two
 * signups an hour still bounds a proxy on the same host that hides its clients behind 127.0.0.1;
 * with DATABASE_URL (a real deployment) the full window applies to every address.
 */
export const LOCAL_SIGNUP_WINDOW_MS = HOUR;

const inWords = (ms: number) => (ms % DAY === 0 ? `${ms / DAY} days` : ms === HOUR ? 'hour' : `${ms / HOUR} hours`);

/** The window for this client: short only for a loopback client of the embedded default. */
function signupWindowMs(ctx: Ctx, clientIp: string | null): number {
  return ctx.services.storage === 'embedded' && clientIp !== null && isLoopbackHost(clientIp) ? LOCAL_SIGNUP_WINDOW_MS : SIGNUP_WINDOW_MS;
}

/** The 429: the limit, when this address may sign up again, and the way around it on one's own server. */
function signupLimited(now: Date, windowMs: number, resetsAt: Date | null) {
  const at = resetsAt ?? new Date(now.getTime() + windowMs);
  return new AppError(
    'RATE_LIMITED',
    `At most ${SIGNUPS_PER_IP} signups per client IP address in any ${inWords(windowMs)}; this address may sign up again ${resetsAt ? 'at' : 'by'} ${at.toISOString()}. On a server of your own, the operator API (POST /admin/v1/tenants with ADMIN_TOKEN) creates tenants and keys without this limit.`,
    { retry_after: Math.max(1, Math.ceil((at.getTime() - now.getTime()) / 1000)) },
  );
}

/**
 * With Redis, a signup takes a slot in the address's sliding window before its transaction and
 * `release` gives it back when no signup happened; without Redis the window is counted inside the
 * transaction (`countSignupInTx`). Refused attempts never extend the window.
 */
async function claimRedisSlot(ctx: Ctx, ipHash: string, windowMs: number) {
  const redis = ctx.services.redis!;
  const key = `engram:signup:${ipHash}`;
  const member = newId('token');
  const count = await redis.addToSlidingWindow(key, member, ctx.now.getTime(), windowMs);
  const release = () => redis.removeFromSlidingWindow(key, member).catch(() => undefined);
  if (count > SIGNUPS_PER_IP) {
    await release();
    throw signupLimited(ctx.now, windowMs, null);
  }
  return release;
}

async function countSignupInTx(work: Work, ipHash: string, windowMs: number) {
  // Serialize signups from one address so two concurrent ones cannot both see a free slot.
  await work.lock(ipHash);
  const recent = await q.recentSignups(work.tx, ipHash, new Date(work.ctx.now.getTime() - windowMs));
  if (recent.count >= SIGNUPS_PER_IP) throw signupLimited(work.ctx.now, windowMs, recent.oldest && new Date(recent.oldest.getTime() + windowMs));
  await q.recordSignupAttempt(work.tx, ipHash, work.ctx.now);
}

/** A fresh single-use token, replacing any earlier unused one, mailed to the address. */
async function mailVerificationToken(work: Work, tenantId: string, email: string) {
  const token = `vt_${randomBase62(32)}`;
  await q.replaceSignupToken(
    work.tx,
    { id: newId('token'), tenantId, tokenHash: await sha256Hex(token), expiresAt: new Date(work.ctx.now.getTime() + VERIFICATION_TTL_MS) },
    work.ctx.now,
  );
  await sendMail(work, {
    to: email,
    subject: 'Verify your engram account',
    text: `Your verification token: ${token}\n\nSend it with your e-mail to POST /v1/verify within 24 hours to receive your API key.`,
    token,
  });
}

const alreadyVerifiedMail = (email: string) => ({
  to: email,
  subject: 'Your engram account already exists',
  text: 'Someone asked to sign up with this address, which already has a verified account. If it was you, use your existing key or rotate it. No action is needed otherwise.',
});

/**
 * Signup: creates (or finds) the unverified tenant and mails a single-use token. An address that
 * is already verified gets a notice instead of a token, and the caller sees the same answer
 * either way, so signup cannot be used to learn who has an account.
 */
export async function signup(ctx: Ctx, input: { email: string; clientIp: string | null }) {
  const email = normalizeEmail(input.email);
  if (isDisposableEmail(email)) throw validationError('email', 'disposable e-mail domains are not accepted');
  const ipHash = await sha256Hex(`signup-ip:${input.clientIp ?? 'unknown'}`);
  const windowMs = signupWindowMs(ctx, input.clientIp);
  const release = ctx.services.redis ? await claimRedisSlot(ctx, ipHash, windowMs) : null;
  try {
    await write(ctx, async (work) => {
      if (!release) await countSignupInTx(work, ipHash, windowMs);
      const existing = await q.findTenantByEmail(work.tx, email);
      if (existing?.emailVerifiedAt) {
        await sendMail(work, alreadyVerifiedMail(email));
        return;
      }
      const tenant = existing ?? (await insertTenant(work.tx, { email, tier: 'free', verified: false, at: ctx.now }));
      await mailVerificationToken(work, tenant.id, email);
    });
    // The time of this signup, never a stored one: an existing account's creation time would tell
    // the caller that the account exists and how old it is.
    return {
      api_key: null,
      tier: 'free' as const,
      created_at: ctx.now.toISOString(),
      message: 'Check your e-mail for a verification token, then call POST /v1/verify with it.',
      requires_verification: true as const,
    };
  } catch (err) {
    await release?.(); // the slot was taken before the transaction; give it back, no signup happened
    throw err;
  }
}

export const VERIFY_WINDOW_MS = HOUR;
export const VERIFIES_PER_IP = 20;
export const VERIFIES_PER_EMAIL = 10;

/**
 * Verification attempts per client address and per e-mail, each in an hourly window of the rate
 * limiter (memory, Postgres or Redis, as the deployment counts requests): guessing tokens or probing
 * which addresses have accounts is throttled, from one address or spread over many.
 */
async function throttleVerify(ctx: Ctx, email: string, clientIp: string | null) {
  const windows = [
    { subject: `verify-ip:${await sha256Hex(`verify-ip:${clientIp ?? 'unknown'}`)}`, limit: VERIFIES_PER_IP, per: 'client IP address' },
    { subject: `verify-email:${await sha256Hex(`verify-email:${email}`)}`, limit: VERIFIES_PER_EMAIL, per: 'e-mail address' },
  ];
  for (const w of windows) {
    const rate = await ctx.services.rateLimiter.hit({ tenantId: null, keyId: w.subject, limit: w.limit, windowMs: VERIFY_WINDOW_MS }, ctx.now);
    if (!rate.allowed) {
      throw new AppError('RATE_LIMITED', `At most ${w.limit} verification attempts per ${w.per} every hour`, {
        retry_after: Math.max(1, Math.ceil((rate.resetAt.getTime() - ctx.now.getTime()) / 1000)),
      });
    }
  }
}

/** Verify: spends the token, marks the address verified and issues the first key. */
export async function verify(ctx: Ctx, input: { token: string; email: string; clientIp: string | null }) {
  const { now } = ctx;
  const email = normalizeEmail(input.email);
  await throttleVerify(ctx, email, input.clientIp);
  const tokenHash = await sha256Hex(input.token);
  const result = await write(ctx, async (work) => {
    const { tx } = work;
    const tenant = await q.findTenantByEmail(tx, email);
    if (!tenant) throw notFound('Account');
    const token = await q.consumeSignupToken(tx, tenant.id, tokenHash, now);
    if (!token) throw new AppError('INVALID_TOKEN', 'Verification token is invalid, expired or already used');
    await q.markVerified(tx, tenant.id, now);
    const key = await issueKey(work, { tenantId: tenant.id, reason: 'verify' });
    return { tenant, key };
  });
  return {
    api_key: result.key.secret,
    key_id: result.key.keyId,
    tier: result.tenant.tier,
    message: 'Account verified. Store this key now: it is not shown again.',
  };
}

/**
 * Rotate: a new active key; the calling key keeps working until the grace period ends. At most one
 * key is in grace: a key still in grace from an earlier rotation stops working now, so rotating
 * again and again never leaves a trail of working keys behind.
 */
export async function rotate(ctx: TenantCtx, input: { expiresAt?: Date }) {
  const { auth, now } = ctx;
  requireUnrestricted(auth, 'rotate keys');
  if (input.expiresAt && input.expiresAt <= now) throw validationError('expires_at', 'must be in the future');
  const result = await write(ctx, async (work) => {
    const current = await lockManagingKey(work.tx, auth);
    const ended = await q.endGrace(work.tx, auth.tenantId, now);
    const key = await issueKey(work, { tenantId: auth.tenantId, expiresAt: input.expiresAt ?? null, reason: 'rotate' });
    const graceExpiresAt = new Date(now.getTime() + ROTATION_GRACE_MS);
    await q.moveToGrace(work.tx, auth.tenantId, current.id, { graceExpiresAt, replacedBy: key.keyId });
    await work.audit({
      operation: 'key.rotated',
      resourceType: 'api_key',
      resourceId: current.id,
      metadata: { old_key_id: current.id, new_key_id: key.keyId, grace_expires_at: graceExpiresAt.toISOString(), grace_ended_key_ids: ended },
    });
    return { key, graceExpiresAt };
  });
  await forgetKeys(ctx.services, auth.tenantId);
  return {
    new_key: result.key.secret,
    key_id: result.key.keyId,
    grace_expires_at: result.graceExpiresAt.toISOString(),
    message: `New key issued. The previous key keeps working until ${result.graceExpiresAt.toISOString()}; it can no longer manage keys.`,
  };
}

export async function list(ctx: TenantCtx) {
  const keys = await q.listKeys(ctx.db, ctx.tenantId);
  return { keys: keys.map((k) => toKeyDto(k, ctx.tier, ctx.now)) };
}

/** Revoke by id or prefix; immediate. Revoking an already revoked key is a no-op that says so. */
export async function revoke(ctx: TenantCtx, input: { keyId: string }) {
  const { auth, now } = ctx;
  const result = await write(ctx, async (work) => {
    const { tx } = work;
    await lockManagingKey(tx, auth);
    const matches = await q.lockKeyByIdOrPrefix(tx, auth.tenantId, input.keyId);
    if (matches.length === 0) throw notFound('API key');
    if (matches.length > 1) throw validationError('key_id', 'prefix matches several keys; use the key id');
    const [key] = matches;
    // A restricted key may not lock its owner out: it revokes only restricted keys.
    if (auth.restriction && !key.restricted) throw unrestrictedOnly('revoke an unrestricted key');
    if (key.status === 'revoked') return { key, already: true };
    await q.markRevoked(tx, auth.tenantId, key.id, now);
    await work.audit({
      operation: 'key.revoked',
      resourceType: 'api_key',
      resourceId: key.id,
      metadata: { key_prefix: key.keyPrefix, self: key.id === auth.keyId },
    });
    return { key, already: false };
  });
  await forgetKeys(ctx.services, auth.tenantId);
  return {
    revoked_key_id: result.key.id,
    message: result.already ? 'Key was already revoked.' : 'Key revoked; it stops working immediately.',
  };
}

/**
/**
 * A restricted key's refusals that read nothing (shared/platform/data/restricted-keys.ts, the
 * machinery an OAuth grant shares). The cap is the create verb's (`restrictedKeyLimit`, counted
 * under a lock of the account: functions/keys/verbs.ts).
 */
export function admitRestricted(ctx: TenantCtx, body: z.infer<typeof RestrictedKeyBody>) {
  admitRestriction(ctx, body);
}

export async function createRestricted(ctx: TenantCtx, body: z.infer<typeof RestrictedKeyBody>) {
  const { now } = ctx;
  const restriction = await checkedRestriction(ctx, body);
  const key = await write(ctx, (work) => issueRestrictedKey(work, restriction, { expiresAt: body.expires_at ?? null, reason: 'restricted' }));
  return {
    key_id: key.keyId,
    api_key: key.secret,
    name: restriction.name,
    scopes: restriction.scopes,
    agent_id: restriction.agentId,
    space_ids: restriction.spaceIds?.map(toUrn) ?? null,
    expires_at: key.expiresAt?.toISOString() ?? null,
    created_at: now.toISOString(),
  };
}
