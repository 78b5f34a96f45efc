import { and, eq, sql } from 'drizzle-orm';
import { apiKeys } from '../../schema';
import { allowedInSpace } from '../memory/access';
import { type IssuedKey, issueKey, type Restriction } from './accounts';
import type { TenantCtx } from './context';
import { type DbOrTx, pgArray, rows } from './db';
import { AppError, forbidden, limitReached, validationError } from './errors';
import { parseUrn } from './ids';
import { requireUnrestricted, scopeFamilies, unknownScopes } from './scopes';
import type { Work } from './unit-of-work';

/**
 * Restricted keys as one machinery (docs/architecture.md#verbs): POST /v1/keys/restricted
 * (keys.createRestricted) and an OAuth grant (functions/oauth, the consent page) mint them through
 * these two steps, so a grant gets every rule a restricted key has: known scopes, readable spaces,
 * an expiry in the future, an active unrestricted key minting it, and the per-account cap.
 */
const MAX_RESTRICTED_KEYS = 50;

export interface RestrictionRequest {
  name: string;
  scopes: string[];
  agent_id?: string | null;
  space_ids?: string[];
  expires_at?: Date | null;
}

/** The restriction asked for, checked: 400 naming an unknown scope, a past expiry or a space the caller may not read. */
export async function checkedRestriction(ctx: TenantCtx, body: RestrictionRequest, what = 'create keys'): Promise<Restriction> {
  requireUnrestricted(ctx.auth, what);
  const unknown = unknownScopes(body.scopes);
  if (unknown.length) {
    const which = `unknown scope${unknown.length > 1 ? 's' : ''} ${unknown.join(', ')}`;
    throw validationError('scopes', `${which}: use <family>:read, <family>:write or *, with a family of ${scopeFamilies().join(', ')}`);
  }
  if (body.expires_at && body.expires_at <= ctx.now) throw validationError('expires_at', 'must be in the future');
  const spaceIds = await spacesOf(ctx, body.space_ids);
  return { name: body.name, scopes: [...new Set(body.scopes)], agentId: body.agent_id ?? null, spaceIds };
}

/** Bare uuids of the space ids given; 400 naming any that is not a space the caller may read. */
async function spacesOf(ctx: TenantCtx, given: string[] | undefined): Promise<string[] | null> {
  if (!given) return null;
  const bare = given.map((id) => parseUrn(id));
  const known = await readableSpaces(
    ctx.db,
    ctx.tenantId,
    bare.filter((id): id is string => id !== null),
  );
  const unknown = given.filter((_, i) => !bare[i] || !known.has(bare[i]!));
  if (unknown.length) throw validationError('space_ids', `no such context space: ${unknown.join(', ')}`);
  return [...new Set(bare as string[])];
}

/** Which of these spaces the tenant may read: its own live ones, and live ones that list it (or a team of it). */
async function readableSpaces(tx: DbOrTx, tenantId: string, spaceIds: string[]): Promise<Set<string>> {
  if (!spaceIds.length) return new Set();
  const found = await rows<{ id: string }>(
    tx,
    sql`SELECT cs.id::text AS id FROM context_spaces cs
        WHERE cs.id = ANY(${pgArray(spaceIds)}::uuid[]) AND cs.deleted_at IS NULL
          AND (cs.owner_tenant_id = ${tenantId} OR ${allowedInSpace(tenantId)})`,
  );
  return new Set(found.map((r) => r.id));
}

/**
 * Only an active key manages keys: a key in its rotation grace period may still read and write
 * data until it expires, but cannot rotate, revoke or mint, so a leaked key does not outlive its
 * rotation and cannot lock the owner out. Checked on the locked row, which also serializes
 * concurrent changes of one key.
 */
export async function lockManagingKey(tx: DbOrTx, auth: TenantCtx['auth']) {
  const [current] = await tx
    .select()
    .from(apiKeys)
    .where(and(eq(apiKeys.tenantId, auth.tenantId), eq(apiKeys.id, auth.keyId)))
    .for('update');
  if (!current || current.status === 'revoked') throw new AppError('UNAUTHORIZED', 'API key has been revoked');
  if (current.status !== 'active') {
    throw forbidden('This key was rotated out: it works for data until its grace period ends, but only the key that replaced it can rotate or revoke keys');
  }
  return current;
}

/**
 * Issues the restricted key inside the caller's unit of work: at most MAX_RESTRICTED_KEYS live at
 * once, counted under a lock of the account so two concurrent mints cannot both take the last one.
 */
export async function issueRestrictedKey(
  work: Work<TenantCtx>,
  restriction: Restriction,
  opts: { expiresAt: Date | null; reason: string },
): Promise<IssuedKey> {
  const { auth, now } = work.ctx;
  await lockManagingKey(work.tx, auth);
  await work.lock(`restricted-keys:${auth.tenantId}`);
  const live = await countLiveRestricted(work.tx, auth.tenantId, now);
  if (live >= MAX_RESTRICTED_KEYS) {
    throw limitReached(
      `At most ${MAX_RESTRICTED_KEYS} live restricted keys per account (connected apps count too); revoke one first`,
      { metric: 'restricted_keys', current: live, limit: MAX_RESTRICTED_KEYS, plan: work.ctx.tier, resets_at: null },
      { now, upgradeUrl: work.ctx.services.config.UPGRADE_URL },
    );
  }
  return issueKey(work, { tenantId: auth.tenantId, expiresAt: opts.expiresAt, reason: opts.reason, restriction });
}

/** Restricted keys of the tenant that can still be used (not revoked, not expired). */
async function countLiveRestricted(tx: DbOrTx, tenantId: string, now: Date): Promise<number> {
  const [row] = await rows<{ n: number | string }>(
    tx,
    sql`SELECT count(*) AS n FROM api_keys
        WHERE tenant_id = ${tenantId} AND restricted AND status <> 'revoked'
          AND (expires_at IS NULL OR expires_at > ${now.toISOString()})`,
  );
  return Number(row?.n ?? 0);
}
