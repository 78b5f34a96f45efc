import { and, eq } from 'drizzle-orm';
import { sql } from './db';
import { apiKeys } from '../../../schema';
import { allowedInSpace } from '../../memory/access';
import { type IssuedKey, issueKey, type Restriction } from './accounts';
import type { TenantCtx } from '../contract/context';
import { type DbOrTx, pgArray, rows } from './db';
import { AppError, forbidden, validationError } from '../contract/errors';
import { parseUrn } from '../contract/ids';
import { requireUnrestricted, unknownScopes } from '../contract/scopes';
import type { VerbLimit } from '../http/verb';
import type { Work } from './unit-of-work';

/**
 * Restricted keys as one machinery (docs/architecture.md#verbs): POST /v1/keys/restricted
 * (keys.createRestricted) and an OAuth grant (functions/oauth, the consent page) mint them through
 * these steps, so a grant gets every rule a restricted key has: known scopes, readable spaces, an
 * expiry in the future, an active unrestricted key minting it, and the per-account cap, declared
 * once as `restrictedKeyLimit` and enforced by the verb machinery (`enforceLimit`).
 */
export const MAX_RESTRICTED_KEYS = 50;

/** At most MAX_RESTRICTED_KEYS live restricted keys per account (connected apps count too), under the account's lock. */
export const restrictedKeyLimit: VerbLimit<unknown> = {
  metric: 'restricted_keys',
  max: () => MAX_RESTRICTED_KEYS,
  lock: (ctx) => `restricted-keys:${ctx.tenantId}`,
  count: (tx, ctx) => countLiveRestricted(tx, ctx.tenantId, ctx.now),
  message: (max) => `At most ${max} live restricted keys per account (connected apps count too); revoke one first`,
};

export interface RestrictionRequest {
  name: string;
  scopes: string[];
  agent_id?: string | null;
  space_ids?: string[];
  expires_at?: Date | null;
}

/**
 * The refusals that read nothing: only an unrestricted key may mint one, with scopes of the app's
 * families (ctx.registry, docs/architecture.md#registries-belong-to-the-app) and an expiry ahead.
 */
export function admitRestriction(ctx: TenantCtx, body: RestrictionRequest, what = 'create keys'): void {
  requireUnrestricted(ctx.auth, what);
  const families = ctx.registry?.scopeFamilies ?? new Set<string>();
  const unknown = unknownScopes(body.scopes, families);
  if (unknown.length) {
    const which = `unknown scope${unknown.length > 1 ? 's' : ''} ${unknown.join(', ')}`;
    throw validationError('scopes', `${which}: use <family>:read, <family>:write or *, with a family of ${[...families].sort().join(', ')}`);
  }
  if (body.expires_at && body.expires_at <= ctx.now) throw validationError('expires_at', 'must be in the future');
}

/** The restriction asked for, checked: 400 naming an unknown scope, a past expiry or a space the caller may not read. */
export async function checkedRestriction(ctx: TenantCtx, body: RestrictionRequest, what = 'create keys'): Promise<Restriction> {
  admitRestriction(ctx, body, what);
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
 * Issues the restricted key inside the caller's unit of work, from an active key. The cap is the
 * caller's to enforce before (`restrictedKeyLimit`: the keys verb declares it, the consent page
 * enforces it with `enforceLimit`), so the count and the mint share one lock and one transaction.
 */
export async function issueRestrictedKey(
  work: Work<TenantCtx>,
  restriction: Restriction,
  opts: { expiresAt: Date | null; reason: string },
): Promise<IssuedKey> {
  await lockManagingKey(work.tx, work.ctx.auth);
  return issueKey(work, { tenantId: work.ctx.auth.tenantId, expiresAt: opts.expiresAt, reason: opts.reason, restriction });
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
