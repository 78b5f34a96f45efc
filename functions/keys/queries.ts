import { and, asc, eq, or, sql } from 'drizzle-orm';
import { apiKeys, signupAttempts, signupTokens, tenants } from '../../schema';
import { type DbOrTx, rows } from '../../shared/platform/data/db';

export async function findTenantByEmail(db: DbOrTx, email: string) {
  const [tenant] = await db.select().from(tenants).where(sql`lower(${tenants.email}) = ${email}`).limit(1);
  return tenant ?? null;
}

export function listKeys(db: DbOrTx, tenantId: string) {
  return db.select().from(apiKeys).where(eq(apiKeys.tenantId, tenantId)).orderBy(asc(apiKeys.createdAt), asc(apiKeys.id));
}

/** Locks the tenant's key matching an id or a prefix. */
export async function lockKeyByIdOrPrefix(tx: DbOrTx, tenantId: string, idOrPrefix: string) {
  return tx
    .select()
    .from(apiKeys)
    .where(and(eq(apiKeys.tenantId, tenantId), or(eq(apiKeys.id, idOrPrefix), eq(apiKeys.keyPrefix, idOrPrefix))))
    .for('update');
}

/** Marks an unused, unexpired token of the tenant used; at most one caller ever gets the row. */
export async function consumeSignupToken(tx: DbOrTx, tenantId: string, tokenHash: string, now: Date) {
  const [token] = await tx
    .update(signupTokens)
    .set({ usedAt: now })
    .where(
      and(
        eq(signupTokens.tenantId, tenantId),
        eq(signupTokens.tokenHash, tokenHash),
        sql`${signupTokens.usedAt} IS NULL`,
        sql`${signupTokens.expiresAt} > ${now.toISOString()}`,
      ),
    )
    .returning({ id: signupTokens.id });
  return token ?? null;
}

/** Signups from the address since `since`, with the oldest of them (when it leaves the window). */
export async function recentSignups(tx: DbOrTx, ipHash: string, since: Date): Promise<{ count: number; oldest: Date | null }> {
  const result = (await tx.execute(
    sql`SELECT count(*)::int AS n, min(created_at) AS oldest FROM signup_attempts WHERE ip_hash = ${ipHash} AND created_at > ${since.toISOString()}`,
  )) as unknown as { rows: { n: number; oldest: string | Date | null }[] };
  const row = result.rows[0];
  return { count: Number(row?.n ?? 0), oldest: row?.oldest ? new Date(row.oldest) : null };
}

export async function recordSignupAttempt(tx: DbOrTx, ipHash: string, at: Date) {
  await tx.insert(signupAttempts).values({ ipHash, createdAt: at });
}

/** Marks the tenant's unused tokens used and stores the new one. */
export async function replaceSignupToken(tx: DbOrTx, token: { id: string; tenantId: string; tokenHash: string; expiresAt: Date }, now: Date) {
  await tx.update(signupTokens).set({ usedAt: now }).where(sql`${signupTokens.tenantId} = ${token.tenantId} AND ${signupTokens.usedAt} IS NULL`);
  await tx.insert(signupTokens).values({ ...token, createdAt: now });
}

export async function markVerified(tx: DbOrTx, tenantId: string, now: Date) {
  await tx.update(tenants).set({ emailVerifiedAt: now, updatedAt: now }).where(eq(tenants.id, tenantId));
}

export async function moveToGrace(tx: DbOrTx, tenantId: string, keyId: string, change: { graceExpiresAt: Date; replacedBy: string }) {
  await tx
    .update(apiKeys)
    .set({ status: 'grace', ...change })
    .where(and(eq(apiKeys.tenantId, tenantId), eq(apiKeys.id, keyId)));
}

/** Ends the grace period of the tenant's keys still in one; returns their ids. */
export async function endGrace(tx: DbOrTx, tenantId: string, now: Date): Promise<string[]> {
  const ended = await tx
    .update(apiKeys)
    .set({ graceExpiresAt: now })
    .where(
      and(
        eq(apiKeys.tenantId, tenantId),
        eq(apiKeys.status, 'grace'),
        sql`(${apiKeys.graceExpiresAt} IS NULL OR ${apiKeys.graceExpiresAt} > ${now.toISOString()})`,
      ),
    )
    .returning({ id: apiKeys.id });
  return ended.map((k) => k.id);
}

export async function markRevoked(tx: DbOrTx, tenantId: string, keyId: string, now: Date) {
  await tx
    .update(apiKeys)
    .set({ status: 'revoked', revokedAt: now })
    .where(and(eq(apiKeys.tenantId, tenantId), eq(apiKeys.id, keyId)));
}

/** Request windows of no tenant (shared/platform/limits/ratelimit.ts) once they can no longer refuse anything. */
export async function deleteExpiredRateWindows(db: DbOrTx, now: Date): Promise<number> {
  const deleted = await rows<{ subject: string }>(db, sql`DELETE FROM rate_windows WHERE expires_at < ${now.toISOString()} RETURNING subject`);
  return deleted.length;
}
