import { and, desc, eq, isNull, or, sql } from 'drizzle-orm';
import { shares } from '../../schema';
import { type DbOrTx, rows } from '../../shared/platform/data/db';

/** The caller's own live space, if `id` names one. */
export async function ownSpaceExists(db: DbOrTx, owner: string, id: string): Promise<boolean> {
  const found = await rows<{ id: string }>(db, sql`SELECT id FROM context_spaces WHERE id = ${id}::uuid AND owner_tenant_id = ${owner} AND deleted_at IS NULL`);
  return found.length > 0;
}

export async function insertShare(tx: DbOrTx, values: typeof shares.$inferInsert) {
  const [row] = await tx.insert(shares).values(values).returning();
  return row;
}

/** By token hash, whoever owns it: the token itself is the credential (join, public check). */
export async function findByTokenHash(db: DbOrTx, tokenHash: string, lock = false) {
  const query = db.select().from(shares).where(eq(shares.tokenHash, tokenHash));
  const [row] = lock ? await query.for('update') : await query;
  return row ?? null;
}

/**
 * By share id or token hash, for the owner-only verbs; the caller compares the owner afterwards so
 * that someone else's share answers 403 (the contract's answer; docs/architecture.md#not-found-never-forbidden) rather than 404.
 */
export async function lockByRef(tx: DbOrTx, ref: { id?: string; tokenHash?: string }) {
  const where = ref.id ? eq(shares.id, ref.id) : eq(shares.tokenHash, ref.tokenHash ?? '');
  const [row] = await tx.select().from(shares).where(where).for('update');
  return row ?? null;
}

export function listByOwner(db: DbOrTx, owner: string) {
  return db.select().from(shares).where(eq(shares.ownerTenantId, owner)).orderBy(desc(shares.createdAt), desc(shares.id));
}

/** Accepted by the tenant, or a live, unaccepted invitation to its address. */
export function listForRecipient(db: DbOrTx, tenantId: string, email: string, now: Date) {
  return db
    .select()
    .from(shares)
    .where(
      or(
        eq(shares.acceptedByTenant, tenantId),
        and(
          sql`lower(${shares.sharedWithEmail}) = ${email}`,
          eq(shares.accepted, false),
          isNull(shares.revokedAt),
          sql`(${shares.expiresAt} IS NULL OR ${shares.expiresAt} > ${now.toISOString()})`,
        ),
      ),
    )
    .orderBy(desc(shares.createdAt), desc(shares.id));
}

export async function markAccepted(tx: DbOrTx, id: string, tenantId: string, now: Date) {
  const [row] = await tx
    .update(shares)
    .set({ accepted: true, acceptedByTenant: tenantId, acceptedAt: now })
    .where(and(eq(shares.id, id), eq(shares.accepted, false)))
    .returning();
  return row;
}

export async function replaceToken(tx: DbOrTx, owner: string, id: string, token: { hash: string; prefix: string; expiresAt: Date }) {
  const [row] = await tx
    .update(shares)
    .set({ tokenHash: token.hash, tokenPrefix: token.prefix, expiresAt: token.expiresAt })
    .where(and(eq(shares.id, id), eq(shares.ownerTenantId, owner)))
    .returning();
  return row;
}

export async function markRevoked(tx: DbOrTx, owner: string, id: string, now: Date) {
  await tx
    .update(shares)
    .set({ revokedAt: now })
    .where(and(eq(shares.id, id), eq(shares.ownerTenantId, owner), isNull(shares.revokedAt)));
}
