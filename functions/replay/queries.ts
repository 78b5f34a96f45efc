import { type SQL, sql } from 'drizzle-orm';
import { type DbOrTx, pgArray, rows } from '../../shared/platform/db';
import { embeddingOfState, latestStateEvents, presentAt, STATE_KINDS } from '../../shared/memory/history';
import type { MemoryDto } from '../../shared/memory/rows';

const STATE_KINDS_SQL = sql.raw(STATE_KINDS.map((k) => `'${k}'`).join(', '));

/** A memory_events row without its embedding. */
export interface EventRow {
  id: string | number;
  memory_id: string;
  kind: string;
  at: Date | string;
  actor: string | null;
  before: MemoryDto | null;
  after: MemoryDto | null;
  metadata: Record<string, unknown> | null;
}

const EVENT_COLUMNS = sql.raw('e.id, e.memory_id::text AS memory_id, e.kind, e.at, e.actor, e.before, e.after, e.metadata');

export interface TimelineFilter {
  since?: Date;
  until?: Date;
  kinds: readonly string[];
  agentId?: string;
}

/** The tenant's state-changing events in the window, as one WHERE clause over alias `e`. */
export function whereTimeline(tenantId: string, f: TimelineFilter): SQL {
  const parts: SQL[] = [sql`e.tenant_id = ${tenantId}`, sql`e.kind = ANY(${pgArray([...f.kinds])}::text[])`];
  if (f.since) parts.push(sql`e.at >= ${f.since.toISOString()}::timestamptz`);
  if (f.until) parts.push(sql`e.at <= ${f.until.toISOString()}::timestamptz`);
  if (f.agentId) parts.push(sql`coalesce(e.after, e.before)->>'agent_id' = ${f.agentId}`);
  return sql.join(parts, sql` AND `);
}

/** A page newest first (the tenant/time index serves it), the total and the oldest time in the window. */
export async function timelinePage(db: DbOrTx, where: SQL, limit: number, offset: number) {
  const page = await rows<EventRow>(
    db,
    sql`SELECT ${EVENT_COLUMNS} FROM memory_events e WHERE ${where} ORDER BY e.at DESC, e.id DESC LIMIT ${limit} OFFSET ${offset}`,
  );
  const [{ n, first }] = await rows<{ n: number | string; first: Date | string | null }>(
    db,
    sql`SELECT count(*) AS n, min(e.at) AS first FROM memory_events e WHERE ${where}`,
  );
  return { page, total: Number(n), first: first === null ? null : new Date(first) };
}

/**
 * Memories whose state can differ between `from` and `to` (a superset; statesAt decides): a state
 * event in (from, to] (the tenant/time index), or a TTL that ran out in (from, to], which changes
 * what existed without an event. Such a memory is either still stored (the expiry index) or was
 * purged, deleted or rolled away after `from`, and that event's `before` carries its expiry (a
 * memory's expiry never changes between its versions).
 */
export async function changedBetween(db: DbOrTx, tenantId: string, from: Date, to: Date): Promise<string[]> {
  const [f, t] = [sql`${from.toISOString()}::timestamptz`, sql`${to.toISOString()}::timestamptz`];
  const found = await rows<{ memory_id: string }>(
    db,
    sql`SELECT e.memory_id::text AS memory_id FROM memory_events e
        WHERE e.tenant_id = ${tenantId} AND e.at > ${f} AND e.at <= ${t} AND e.kind IN (${STATE_KINDS_SQL})
        UNION
        SELECT m.id::text FROM memories m WHERE m.tenant_id = ${tenantId} AND m.expires_at > ${f} AND m.expires_at <= ${t}
        UNION
        SELECT e.memory_id::text FROM memory_events e
        WHERE e.tenant_id = ${tenantId} AND e.at > ${f} AND e.kind IN ('expire', 'delete', 'rollback')
          AND (e.before->>'expires_at')::timestamptz > ${f} AND (e.before->>'expires_at')::timestamptz <= ${t}`,
  );
  return found.map((r) => r.memory_id);
}

/** Every event of one memory of the tenant, oldest first. */
export function eventsOf(db: DbOrTx, tenantId: string, memoryId: string) {
  return rows<EventRow>(
    db,
    sql`SELECT ${EVENT_COLUMNS} FROM memory_events e WHERE e.tenant_id = ${tenantId} AND e.memory_id = ${memoryId}::uuid ORDER BY e.at, e.id`,
  );
}

/** Current edges touching a memory. */
export function currentLinks(db: DbOrTx, tenantId: string, memoryId: string) {
  return rows<{ id: string; source_id: string; target_id: string; relation: string; weight: number; created_at: Date | string }>(
    db,
    sql`SELECT id, source_id, target_id, relation, weight, created_at FROM memory_edges
        WHERE tenant_id = ${tenantId} AND (source_id = ${memoryId}::uuid OR target_id = ${memoryId}::uuid)
        ORDER BY created_at, id`,
  );
}

/** The memories present at `at`, ranked by cosine against the embedding each had then. */
export function recallAt(db: DbOrTx, tenantId: string, at: Date, vector: string, limit: number) {
  return rows<{ memory_id: string; after: MemoryDto; similarity: number | string }>(
    db,
    sql`SELECT l.memory_id::text AS memory_id, e.after, 1 - (${embeddingOfState('e')} <=> ${vector}::vector) AS similarity
        FROM (${latestStateEvents(tenantId, at)}) l JOIN memory_events e ON e.id = l.id
        WHERE ${presentAt(at, 'e')}
        ORDER BY similarity DESC NULLS LAST, l.memory_id LIMIT ${limit}`,
  );
}
