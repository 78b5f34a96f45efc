import { sql } from 'drizzle-orm';
import { type EventPayload, eventBodySql } from '../../shared/jobs/events';
import { type DbOrTx, pgArray, rows } from '../../shared/platform/data/db';
import type { Tier } from '../../shared/platform/contract/tiers';

/**
 * The tenant's latest event number, 0 before its first event. Numbers are taken under the head
 * row's lock and the row commits with the event, so every event up to the number read here has
 * committed, and every later one commits with a higher number.
 */
export async function head(db: DbOrTx, tenantId: string): Promise<number> {
  const [row] = await rows<{ event_seq: string | number }>(db, sql`SELECT event_seq FROM audit_heads WHERE tenant_id = ${tenantId}`);
  return Number(row?.event_seq ?? 0);
}

export interface StreamedEvent {
  seq: number;
  type: string;
  /** Null for an event of a type the stream does not want (it only moves the stream past it). */
  payload: EventPayload | null;
}

/**
 * Up to `limit` of the tenant's events after `after`, in number order. Events of other types than
 * `types` (all when null) come without their payload: the stream still moves past them, so a
 * filter that matches rarely does not read the same rows again on every poll.
 */
export async function eventsAfter(db: DbOrTx, tenantId: string, after: number, types: readonly string[] | null, limit: number): Promise<StreamedEvent[]> {
  const body = eventBodySql('e');
  const payload = types ? sql`CASE WHEN e.type = ANY (${pgArray(types)}::text[]) THEN ${body} END` : body;
  const found = await rows<{ seq: string | number; type: string; payload: EventPayload | null }>(
    db,
    sql`SELECT e.seq, e.type, ${payload} AS payload FROM events e
        WHERE e.tenant_id = ${tenantId} AND e.seq IS NOT NULL AND e.seq > ${after}
        ORDER BY e.seq LIMIT ${limit}`,
  );
  return found.map((r) => ({ seq: Number(r.seq), type: r.type, payload: r.payload }));
}

/** What the stream re-checks on each heartbeat: is the key that opened it still good, and its tier. */
export async function keyStanding(
  db: DbOrTx,
  keyId: string,
): Promise<{ status: 'active' | 'grace' | 'revoked'; expires_at: Date | string | null; grace_expires_at: Date | string | null; tier: Tier } | undefined> {
  const [row] = await rows<{ status: 'active' | 'grace' | 'revoked'; expires_at: Date | string | null; grace_expires_at: Date | string | null; tier: Tier }>(
    db,
    sql`SELECT k.status, k.expires_at, k.grace_expires_at, t.tier FROM api_keys k JOIN tenants t ON t.id = k.tenant_id WHERE k.id = ${keyId}`,
  );
  return row;
}

/** Deletes a key's lapsed leases (see leases.ts); runs under the key's lock. */
export async function dropLapsedLeases(tx: DbOrTx, keyId: string, now: Date): Promise<void> {
  await tx.execute(sql`DELETE FROM event_stream_leases WHERE key_id = ${keyId} AND expires_at <= ${now.toISOString()}`);
}

/** Moves a live lease's expiry; false when it is gone. */
export async function extendLease(tx: DbOrTx, l: { id: string; tenantId: string; expiresAt: Date }): Promise<boolean> {
  const found = await rows<{ id: string }>(
    tx,
    sql`UPDATE event_stream_leases SET expires_at = ${l.expiresAt.toISOString()} WHERE id = ${l.id} AND tenant_id = ${l.tenantId} RETURNING id`,
  );
  return found.length > 0;
}

/** Inserts a lease when the key holds fewer than `limit` live ones; runs under the key's lock. */
export async function insertLeaseIfRoom(
  tx: DbOrTx,
  l: { id: string; tenantId: string; keyId: string; expiresAt: Date; now: Date; limit: number },
): Promise<boolean> {
  const inserted = await rows<{ id: string }>(
    tx,
    sql`INSERT INTO event_stream_leases (id, tenant_id, key_id, expires_at, created_at)
        SELECT ${l.id}, ${l.tenantId}, ${l.keyId}, ${l.expiresAt.toISOString()}, ${l.now.toISOString()}
        WHERE (SELECT count(*) FROM event_stream_leases WHERE key_id = ${l.keyId} AND expires_at > ${l.now.toISOString()}) < ${l.limit}
        RETURNING id`,
  );
  return inserted.length > 0;
}

export async function deleteLease(db: DbOrTx, l: { id: string; tenantId: string }): Promise<void> {
  await db.execute(sql`DELETE FROM event_stream_leases WHERE id = ${l.id} AND tenant_id = ${l.tenantId}`);
}

/** Maintenance: leases of streams whose instance went away without releasing them. */
export async function deleteLapsedLeases(db: DbOrTx, now: Date): Promise<number> {
  const result = (await db.execute(sql`DELETE FROM event_stream_leases WHERE expires_at <= ${now.toISOString()}`)) as {
    rowCount?: number | null;
    affectedRows?: number;
  };
  return Number(result.rowCount ?? result.affectedRows ?? 0);
}
