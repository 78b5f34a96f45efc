import { parseUrn, toUrn } from '../../shared/platform/contract/ids';
import type { z } from '@hono/zod-openapi';
import { normalizeEmail } from '../../shared/platform/data/accounts';
import type { AuthContext, Ctx, TenantCtx } from '../../shared/platform/contract/context';
import { randomBase62, sha256Hex } from '../../shared/platform/contract/crypto';
import type { DbOrTx } from '../../shared/platform/data/db';
import { AppError, forbidden, notFound, validationError } from '../../shared/platform/contract/errors';
import { sendMail } from '../../shared/jobs/mail';
import { requireFeature } from '../../shared/platform/contract/tiers';
import { DAY } from '../../shared/platform/contract/time';
import { write } from '../../shared/platform/data/unit-of-work';
import * as q from './queries';
import { type ShareBody, type ShareRow, shareStatus, toShareEntry } from './schemas';

export const SHARE_TTL_MS = 30 * DAY;
export const TOKEN_PREFIX_LENGTH = 10;

const newShareId = () => `shr_${randomBase62(22)}`;

async function newToken(now: Date) {
  const token = `st_${randomBase62(40)}`;
  return { token, hash: await sha256Hex(token), prefix: token.slice(0, TOKEN_PREFIX_LENGTH), expiresAt: new Date(now.getTime() + SHARE_TTL_MS) };
}

/**
 * `{SHARE_BASE_URL | PUBLIC_URL | listening address}/join?token=...`; `origin` is the route's
 * `publicBase`, never the request's Host; without any of them the link is the path alone.
 */
function shareUrl({ services }: Ctx, origin: string, token: string) {
  const base = (services.config.SHARE_BASE_URL ?? services.config.PUBLIC_URL ?? origin).replace(/\/+$/, '');
  return `${base}/join?token=${encodeURIComponent(token)}`;
}

/**
 * The link in an invitation mail comes only from configuration, never from the request (its Host
 * header is the caller's to choose); without SHARE_BASE_URL or PUBLIC_URL the mail carries the token
 * and no link, and start-up warns (shared/platform/http/startup.ts).
 */
const mailUrl = (ctx: Ctx, token: string) => (ctx.services.config.SHARE_BASE_URL || ctx.services.config.PUBLIC_URL ? shareUrl(ctx, '', token) : null);

const invalidToken = (why: string) => new AppError('INVALID_TOKEN', `Share token ${why}`);

function invitationMail(owner: AuthContext, share: ShareRow, token: string, url: string | null) {
  const what = share.kind === 'space' ? `the context space ${share.tag}` : `the tag "${share.tag}"`;
  return {
    to: share.sharedWithEmail,
    subject: `${owner.email} shared ${share.kind === 'space' ? 'a context space' : `"${share.tag}"`} with you on engram`,
    text:
      `${owner.email} (tenant ${owner.tenantId}) shared ${what} with you, with ${share.permission} access.\n\n` +
      `Accept it with the engram account registered to this address before ${share.expiresAt?.toISOString()}:\n` +
      (url ? `${url}\n\nor call` : 'call') +
      ` POST /v1/spaces/join with {"token": "${token}"}.`,
    token,
  };
}

function createdBody(ctx: Ctx, origin: string, share: ShareRow, token: string, message: string) {
  return {
    share_id: share.id,
    token,
    token_prefix: share.tokenPrefix,
    share_url: shareUrl(ctx, origin, token),
    tag: share.tag,
    kind: share.kind,
    space_id: share.spaceId ? toUrn(share.spaceId) : null,
    shared_with_email: share.sharedWithEmail,
    permission: share.permission,
    expires_at: share.expiresAt!.toISOString(),
    message,
  };
}

/** A share's audit entry: in the owner's chain unless `tenantId` names the recipient's. */
const shareAudit = (share: ShareRow, operation: string, metadata: Record<string, unknown> = {}, tenantId = share.ownerTenantId) => ({
  tenantId,
  operation,
  resourceType: 'share',
  resourceId: share.id,
  metadata: { kind: share.kind, tag: share.tag, permission: share.permission, ...metadata },
});

export async function createShare(ctx: TenantCtx, input: z.infer<typeof ShareBody> & { origin: string }) {
  const { auth, now } = ctx;
  const email = normalizeEmail(input.email);
  if (email === normalizeEmail(auth.email)) throw validationError('email', 'cannot share with your own address');
  const token = await newToken(now);
  const share = await write(ctx, async (work) => {
    const { tx } = work;
    const parsed = parseUrn(input.tag);
    const spaceId = parsed && (await q.ownSpaceExists(tx, auth.tenantId, parsed)) ? parsed : null;
    // Sharing a space is one of the space features that need Pro+ (§4.3).
    if (spaceId) requireFeature(auth.tier, 'spaces');
    const share = await q.insertShare(tx, {
      id: newShareId(),
      ownerTenantId: auth.tenantId,
      kind: spaceId ? 'space' : 'tag',
      tag: spaceId ? toUrn(spaceId) : input.tag,
      spaceId,
      sharedWithEmail: email,
      permission: input.permission,
      tokenHash: token.hash,
      tokenPrefix: token.prefix,
      accepted: false,
      createdAt: now,
      expiresAt: token.expiresAt,
    });
    await sendMail(work, invitationMail(auth, share, token.token, mailUrl(ctx, token.token)));
    await work.audit(
      shareAudit(share, 'share.created', { space_id: share.spaceId ? toUrn(share.spaceId) : null, shared_with_email: email, token_prefix: token.prefix }),
    );
    await work.milestone('first_share', { share_id: share.id });
    return share;
  });
  return createdBody(ctx, input.origin, share, token.token, `Invitation sent to ${email}. It expires on ${share.expiresAt!.toISOString()}.`);
}

export async function listShares(ctx: TenantCtx) {
  const { auth, now } = ctx;
  const [byMe, withMe] = await Promise.all([q.listByOwner(ctx.db, auth.tenantId), q.listForRecipient(ctx.db, auth.tenantId, normalizeEmail(auth.email), now)]);
  return { shared_by_me: byMe.map((s) => toShareEntry(s, now)), shared_with_me: withMe.map((s) => toShareEntry(s, now)) };
}

/** Public: what a token is worth, without saying anything about tokens the caller does not hold. */
export async function checkToken(ctx: Ctx, input: { token: string }) {
  const { now } = ctx;
  const share = await q.findByTokenHash(ctx.db, await sha256Hex(input.token));
  if (!share) return { valid: false, already_accepted: false, expires_at: null, error: 'not_found' as const };
  const status = shareStatus(share, now);
  const base = { already_accepted: share.accepted, expires_at: share.expiresAt?.toISOString() ?? null };
  if (status === 'revoked' || status === 'expired') return { valid: false, ...base, error: status };
  // Once accepted, the token has done its work: whoever else holds it (a forwarded mail, a logged
  // URL) learns neither whose share it is nor what it grants; the recipient sees both in its shares.
  if (share.accepted) return { valid: true, ...base, error: null };
  return { valid: true, owner_tenant_id: share.ownerTenantId, tag: share.tag, permission: share.permission, ...base, error: null };
}

/**
 * Join binds the share to the caller's tenant. Only the tenant registered with the invited address
 * may join; a second join by the same tenant is a no-op success. Audited in both chains, appended
 * in tenant-id order so two tenants joining each other's shares cannot deadlock on the chain heads.
 */
export async function join(ctx: TenantCtx, input: { token: string }) {
  const { auth, now } = ctx;
  const tokenHash = await sha256Hex(input.token);
  const { share, already } = await write(ctx, async ({ tx, audit }) => {
    const share = await q.findByTokenHash(tx, tokenHash, true);
    if (!share) throw invalidToken('is invalid');
    const status = shareStatus(share, now);
    if (status === 'revoked') throw invalidToken('has been revoked');
    if (status === 'expired') throw invalidToken('has expired');
    if (share.ownerTenantId === auth.tenantId) throw invalidToken('belongs to your own share');
    if (normalizeEmail(share.sharedWithEmail) !== normalizeEmail(auth.email)) throw invalidToken('was issued to another e-mail address');
    if (share.accepted) {
      if (share.acceptedByTenant === auth.tenantId) return { share, already: true };
      throw invalidToken('has already been used');
    }
    const accepted = await q.markAccepted(tx, share.id, auth.tenantId, now);
    const entries = [
      shareAudit(accepted, 'share.accepted', { accepted_by_tenant: auth.tenantId }),
      shareAudit(accepted, 'share.joined', { owner_tenant_id: share.ownerTenantId }, auth.tenantId),
    ];
    for (const e of entries.sort((a, b) => (a.tenantId < b.tenantId ? -1 : 1))) await audit(e);
    return { share: accepted, already: false };
  });
  return {
    success: true as const,
    share_id: share.id,
    tag: share.tag,
    kind: share.kind,
    space_id: share.spaceId ? toUrn(share.spaceId) : null,
    owner_tenant_id: share.ownerTenantId,
    permission: share.permission,
    expires_at: share.expiresAt?.toISOString() ?? null,
    message: already
      ? 'You had already joined this share.'
      : `Joined. ${share.permission === 'write' ? 'You can read and write' : 'You can read'} the shared memories (scope=shared on /v1/memories).`,
  };
}

/** The owner's live share by token or share id: 404 when unknown or revoked, 403 when someone else's. */
async function lockOwned(tx: DbOrTx, auth: AuthContext, ref: string) {
  const share = await q.lockByRef(tx, ref.startsWith('shr_') ? { id: ref } : { tokenHash: await sha256Hex(ref) });
  if (!share) throw notFound('Share');
  if (share.ownerTenantId !== auth.tenantId) throw forbidden('Only the owner of a share may rotate or revoke it');
  return share;
}

/**
 * Rotate: a new token with a fresh 30-day lifetime; the old token stops working at once. An accepted
 * share stays bound to its recipient; an unaccepted one is mailed again with the new token.
 */
export async function rotate(ctx: TenantCtx, input: { ref: string; origin: string }) {
  const { auth, now } = ctx;
  const token = await newToken(now);
  const share = await write(ctx, async (work) => {
    const old = await lockOwned(work.tx, auth, input.ref);
    if (old.revokedAt) throw notFound('Share (revoked)');
    const share = await q.replaceToken(work.tx, auth.tenantId, old.id, token);
    if (!share.accepted) await sendMail(work, invitationMail(auth, share, token.token, mailUrl(ctx, token.token)));
    await work.audit(shareAudit(share, 'share.rotated', { old_token_prefix: old.tokenPrefix, token_prefix: token.prefix }));
    return share;
  });
  const message = share.accepted
    ? 'Token rotated; the old one no longer works. The recipient who joined keeps access.'
    : `Token rotated; the old one no longer works. A new invitation was sent to ${share.sharedWithEmail}.`;
  return createdBody(ctx, input.origin, share, token.token, message);
}

/** Revoke: the recipient loses access at once. Revoking twice is a quiet no-op. Always allowed, even after a downgrade. */
export async function revoke(ctx: TenantCtx, input: { ref: string }) {
  const { auth, now } = ctx;
  await write(ctx, async ({ tx, audit }) => {
    const share = await lockOwned(tx, auth, input.ref);
    if (share.revokedAt) return;
    await q.markRevoked(tx, auth.tenantId, share.id, now);
    await audit(shareAudit(share, 'share.revoked', { accepted_by_tenant: share.acceptedByTenant }));
  });
}
