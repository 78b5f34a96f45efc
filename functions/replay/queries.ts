import { type SQL, sql } from 'drizzle-orm';
import { type DbOrTx, pgArray, rows } from '../../shared/platform/data/db';
import { statesHolding } from '../../shared/memory/edge-history';
import { embeddingOfState, eventAfter, STATE_KINDS } from '../../shared/memory/history';
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

const EVENT_COLUMNS = sql`e.id, e.memory_id::text AS memory_id, e.kind, e.at, e.actor, e.before, ${eventAfter('e')} AS after, e.metadata`;

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

/**
 * How far the halfvec cosine of two normalized vectors can be from the exact cosine pgvector
 * computes on the originals: rounding each unit component to half precision moves it by at most
 * 2^-11 of itself, so the dot product and both norms move by about 1e-3 each; float accumulation
 * adds about 3e-5. 0.005 is over twice that bound.
 */
const APPROX_ERROR = 0.005;

/**
 * The memories present at `at`, ranked by cosine against the embedding each had then.
 *
 * Two statements in the caller's transaction. The first reads the tenant's state_vectors
 * (migrations/0024) in one sequential pass, fills in the states it lacks (state events written
 * since, at most once each), and keeps the candidates: every state whose approximate similarity
 * is within 2·APPROX_ERROR of the k-th best approximate one. That set holds the exact top k: the k
 * best approximate states are each within APPROX_ERROR of their exact value, so the exact k-th
 * best is at least the approximate k-th best minus APPROX_ERROR, and any state at or above it has
 * an approximate value at least the approximate k-th best minus 2·APPROX_ERROR. The second ranks
 * the candidates with the exact expression over the event log, so the answer (values, order,
 * ties by memory id) is the one a full scan gives. States without an embedding (null) or with a
 * zero vector (NaN) are always candidates.
 */
export async function recallAt(db: DbOrTx, tenantId: string, at: Date, vector: string, limit: number) {
  // The planner cannot see through the CTEs' row counts and sorts both sides of the 64k-row join
  // for a merge; a hash join is a third of that. SET LOCAL: the caller's transaction (analyticRead).
  await db.execute(sql`SET LOCAL enable_mergejoin = off`);
  const candidates = await rows<{ id: string | number }>(db, recallCandidates(tenantId, at, vector, limit));
  if (!candidates.length) return [];
  return rows<{ memory_id: string; after: MemoryDto; similarity: number | string }>(
    db,
    sql`SELECT e.memory_id::text AS memory_id, ${eventAfter('e')} AS after, 1 - (${embeddingOfState('e')} <=> ${vector}::vector) AS similarity
        FROM memory_events e
        WHERE e.id = ANY(${pgArray(candidates.map((c) => String(c.id)))}::bigint[]) AND e.tenant_id = ${tenantId}
        ORDER BY similarity DESC NULLS LAST, e.memory_id LIMIT ${limit}`,
  );
}

/** The first statement of `recallAt` (exported for the benchmark's CPU timing). */
export function recallCandidates(tenantId: string, at: Date, vector: string, limit: number): SQL {
  const unitQuery = sql`(SELECT l2_normalize(${vector}::vector)::halfvec)`;
  return sql`
  WITH present AS MATERIALIZED (${statesHolding(tenantId, at)}),
  dist AS MATERIALIZED (
    SELECT v.event_id, 1 - (v.unit <=> ${unitQuery}) AS approx FROM state_vectors v WHERE v.tenant_id = ${tenantId}),
  joined AS MATERIALIZED (
    SELECT p.id, d.event_id IS NOT NULL AS cached, d.approx FROM present p LEFT JOIN dist d ON d.event_id = p.id),
  missing AS MATERIALIZED (
    SELECT j.id, l2_normalize(${embeddingOfState('e')})::halfvec AS unit
    FROM joined j JOIN memory_events e ON e.id = j.id AND e.tenant_id = ${tenantId} WHERE NOT j.cached),
  filled AS (
    INSERT INTO state_vectors (tenant_id, event_id, unit) SELECT ${tenantId}, m.id, m.unit FROM missing m
    ON CONFLICT DO NOTHING),
  approx AS MATERIALIZED (
    SELECT id, approx FROM joined WHERE cached
    UNION ALL
    SELECT id, 1 - (unit <=> ${unitQuery}) FROM missing),
  bar AS (
    SELECT min(t.approx) - ${2 * APPROX_ERROR}::float8 AS floor
    FROM (SELECT approx FROM approx WHERE approx IS NOT NULL AND approx <> 'NaN' ORDER BY approx DESC LIMIT ${limit}) t)
  SELECT a.id FROM approx a, bar
  WHERE a.approx IS NULL OR a.approx = 'NaN' OR bar.floor IS NULL OR a.approx >= bar.floor`;
}
