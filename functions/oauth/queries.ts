import { and, desc, eq, sql } from 'drizzle-orm';
import { apiKeys, oauthClients, oauthGrants } from '../../schema';
import type { DbOrTx } from '../../shared/platform/data/db';

export type GrantRow = typeof oauthGrants.$inferSelect;

export async function insertClient(db: DbOrTx, row: typeof oauthClients.$inferInsert) {
  await db.insert(oauthClients).values(row);
}

export async function findClient(db: DbOrTx, id: string) {
  const [row] = await db.select().from(oauthClients).where(eq(oauthClients.id, id)).limit(1);
  return row ?? null;
}

export async function insertGrant(db: DbOrTx, row: typeof oauthGrants.$inferInsert) {
  await db.insert(oauthGrants).values(row);
}

/** The grant of an authorization code, locked: two exchanges of one code are serialized, and only one finds it unused. */
export async function lockGrantByCode(tx: DbOrTx, codeHash: string) {
  const [row] = await tx.select().from(oauthGrants).where(eq(oauthGrants.codeHash, codeHash)).for('update');
  return row ?? null;
}

export async function lockGrantByRefresh(tx: DbOrTx, refreshHash: string) {
  const [row] = await tx.select().from(oauthGrants).where(eq(oauthGrants.refreshHash, refreshHash)).for('update');
  return row ?? null;
}

/** A grant whose refresh token was this one before it rotated: a replayed refresh token. */
export async function lockGrantByPreviousRefresh(tx: DbOrTx, refreshHash: string) {
  const [row] = await tx.select().from(oauthGrants).where(eq(oauthGrants.previousRefreshHash, refreshHash)).for('update');
  return row ?? null;
}

/** The grant whose current access token (its key's secret) has this hash. */
export async function lockGrantByAccess(tx: DbOrTx, keyHash: string) {
  const [row] = await tx
    .select({ grant: oauthGrants })
    .from(oauthGrants)
    .innerJoin(apiKeys, eq(apiKeys.id, oauthGrants.keyId))
    .where(eq(apiKeys.keyHash, keyHash))
    .for('update');
  return row?.grant ?? null;
}

export async function lockGrantOfTenant(tx: DbOrTx, tenantId: string, grantId: string) {
  const [row] = await tx
    .select()
    .from(oauthGrants)
    .where(and(eq(oauthGrants.tenantId, tenantId), eq(oauthGrants.id, grantId)))
    .for('update');
  return row ?? null;
}

export async function keyStatus(tx: DbOrTx, tenantId: string, keyId: string) {
  const [row] = await tx
    .select({ status: apiKeys.status, scopes: apiKeys.scopes, agentId: apiKeys.agentId, spaceIds: apiKeys.spaceIds })
    .from(apiKeys)
    .where(and(eq(apiKeys.tenantId, tenantId), eq(apiKeys.id, keyId)));
  return row ?? null;
}

export async function updateGrant(tx: DbOrTx, tenantId: string, grantId: string, change: Partial<typeof oauthGrants.$inferInsert>) {
  await tx
    .update(oauthGrants)
    .set(change)
    .where(and(eq(oauthGrants.tenantId, tenantId), eq(oauthGrants.id, grantId)));
}

/** The grant's key takes the new access token: its hash replaces the old one, which stops working. */
export async function setAccessToken(tx: DbOrTx, tenantId: string, keyId: string, keyHash: string, keyPrefix: string, expiresAt: Date) {
  await tx
    .update(apiKeys)
    .set({ keyHash, keyPrefix, expiresAt })
    .where(and(eq(apiKeys.tenantId, tenantId), eq(apiKeys.id, keyId)));
}

export async function revokeKey(tx: DbOrTx, tenantId: string, keyId: string, now: Date) {
  await tx
    .update(apiKeys)
    .set({ status: 'revoked', revokedAt: now })
    .where(and(eq(apiKeys.tenantId, tenantId), eq(apiKeys.id, keyId), sql`${apiKeys.status} <> 'revoked'`));
}

/** The tenant's grants that were exchanged for tokens, newest first, with what their key may do. */
export function listGrants(db: DbOrTx, tenantId: string) {
  return db
    .select({ grant: oauthGrants, key: { status: apiKeys.status, scopes: apiKeys.scopes, agentId: apiKeys.agentId, spaceIds: apiKeys.spaceIds } })
    .from(oauthGrants)
    .innerJoin(apiKeys, eq(apiKeys.id, oauthGrants.keyId))
    .where(and(eq(oauthGrants.tenantId, tenantId), sql`${oauthGrants.codeUsedAt} IS NOT NULL`))
    .orderBy(desc(oauthGrants.createdAt))
    .limit(200);
}

/** Maintenance: grants whose code was never exchanged, a day past its minute (their key expired with the code). */
export async function deleteUnusedCodes(db: DbOrTx, before: Date): Promise<number> {
  const deleted = await db
    .delete(oauthGrants)
    .where(and(sql`${oauthGrants.codeUsedAt} IS NULL`, sql`${oauthGrants.codeExpiresAt} < ${before.toISOString()}`))
    .returning({ id: oauthGrants.id });
  return deleted.length;
}
