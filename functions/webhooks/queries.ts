import { and, asc, desc, eq, isNotNull, sql } from 'drizzle-orm';
import { tenants, webhookDeliveries, webhooks } from '../../schema';
import { type EventPayload, eventBodySql } from '../../shared/jobs/events';
import { type DbOrTx, rows } from '../../shared/platform/data/db';
import type { PageInput } from '../../shared/platform/data/pagination';

export type WebhookRow = typeof webhooks.$inferSelect;
export type DeliveryRow = typeof webhookDeliveries.$inferSelect;
type WebhookChange = Partial<
  Pick<WebhookRow, 'url' | 'events' | 'active' | 'description' | 'format' | 'secret' | 'previousSecret' | 'previousSecretExpiresAt' | 'failingSince'>
>;

export async function webhookOf(db: DbOrTx, tenantId: string, webhookId: string, lock = false): Promise<WebhookRow | null> {
  const query = db
    .select()
    .from(webhooks)
    .where(and(eq(webhooks.tenantId, tenantId), eq(webhooks.id, webhookId)));
  const [found] = lock ? await query.for('update') : await query;
  return found ?? null;
}

export async function countWebhooks(db: DbOrTx, tenantId: string): Promise<number> {
  const [{ n }] = await db.select({ n: sql<number>`count(*)::int` }).from(webhooks).where(eq(webhooks.tenantId, tenantId));
  return Number(n);
}

export async function insertWebhook(db: DbOrTx, row: typeof webhooks.$inferInsert): Promise<WebhookRow> {
  const [created] = await db.insert(webhooks).values(row).returning();
  return created;
}

export async function updateWebhook(db: DbOrTx, tenantId: string, webhookId: string, change: WebhookChange, now: Date): Promise<WebhookRow> {
  const [updated] = await db
    .update(webhooks)
    .set({ ...change, updatedAt: now })
    .where(and(eq(webhooks.tenantId, tenantId), eq(webhooks.id, webhookId)))
    .returning();
  return updated;
}

/** Delivery bookkeeping (failing streak) that is not a change the user made: `updated_at` stays. */
export async function setFailingSince(db: DbOrTx, tenantId: string, webhookId: string, since: Date | null): Promise<void> {
  await db
    .update(webhooks)
    .set({ failingSince: since })
    .where(and(eq(webhooks.tenantId, tenantId), eq(webhooks.id, webhookId)));
}

/** Clears the failing streak after a success; touches (and locks) the row only when there is one. */
export async function endFailingStreak(db: DbOrTx, tenantId: string, webhookId: string): Promise<void> {
  await db
    .update(webhooks)
    .set({ failingSince: null })
    .where(and(eq(webhooks.tenantId, tenantId), eq(webhooks.id, webhookId), isNotNull(webhooks.failingSince)));
}

export async function deleteWebhook(db: DbOrTx, tenantId: string, webhookId: string): Promise<boolean> {
  const deleted = await db
    .delete(webhooks)
    .where(and(eq(webhooks.tenantId, tenantId), eq(webhooks.id, webhookId)))
    .returning({ id: webhooks.id });
  return deleted.length > 0;
}

export async function listWebhooks(db: DbOrTx, tenantId: string, page: PageInput) {
  const [found, total] = await Promise.all([
    db.select().from(webhooks).where(eq(webhooks.tenantId, tenantId)).orderBy(asc(webhooks.createdAt), asc(webhooks.id)).limit(page.limit).offset(page.offset),
    countWebhooks(db, tenantId),
  ]);
  return { page: found, total };
}

export async function listDeliveries(db: DbOrTx, tenantId: string, webhookId: string, page: PageInput) {
  const where = and(eq(webhookDeliveries.tenantId, tenantId), eq(webhookDeliveries.webhookId, webhookId));
  const [found, [{ n }]] = await Promise.all([
    db
      .select()
      .from(webhookDeliveries)
      .where(where)
      .orderBy(desc(webhookDeliveries.createdAt), desc(webhookDeliveries.attempt), desc(webhookDeliveries.id))
      .limit(page.limit)
      .offset(page.offset),
    db.select({ n: sql<number>`count(*)::int` }).from(webhookDeliveries).where(where),
  ]);
  return { page: found, total: Number(n) };
}

export async function deliveryOf(db: DbOrTx, tenantId: string, webhookId: string, deliveryId: string): Promise<DeliveryRow | null> {
  const [found] = await db
    .select()
    .from(webhookDeliveries)
    .where(and(eq(webhookDeliveries.tenantId, tenantId), eq(webhookDeliveries.webhookId, webhookId), eq(webhookDeliveries.id, deliveryId)));
  return found ?? null;
}

/** Records one attempt; a job that runs again after a crash finds its row already there. */
export async function insertDelivery(db: DbOrTx, row: typeof webhookDeliveries.$inferInsert): Promise<void> {
  await db.insert(webhookDeliveries).values(row).onConflictDoNothing();
}

/** A stored event with its body as sent (see eventBodySql). */
export async function eventOf(db: DbOrTx, tenantId: string, eventId: string): Promise<{ id: string; payload: EventPayload } | null> {
  const [found] = await rows<{ id: string; payload: EventPayload }>(
    db,
    sql`SELECT e.id, ${eventBodySql('e')} AS payload FROM events e WHERE e.tenant_id = ${tenantId} AND e.id = ${eventId}`,
  );
  return found ?? null;
}

export async function ownerEmail(db: DbOrTx, tenantId: string): Promise<string | null> {
  const [found] = await db.select({ email: tenants.email }).from(tenants).where(eq(tenants.id, tenantId));
  return found?.email ?? null;
}

/** Delivery attempts older than `before` (maintenance). */
export async function pruneDeliveries(db: DbOrTx, before: Date) {
  return db.execute(sql`DELETE FROM webhook_deliveries WHERE created_at < ${before.toISOString()}`);
}
