import { type SQL, sql } from 'drizzle-orm';
import { eventTime, STATE_KINDS_SQL } from '../../shared/memory/history';
import { type DbOrTx, pgArray, rows } from '../../shared/platform/data/db';
import { toUrn } from '../../shared/platform/contract/ids';

/** What an erasure selects; every given field must match (AND). */
export interface Selector {
  memoryIds?: string[];
  agentId?: string;
  tags?: string[];
  spaceId?: string;
  before?: Date;
}

/** One selected memory and when it lived (its tombstone). */
export interface Selected {
  id: string;
  livedFrom: Date;
  /** When its last life ended; null while it was live. */
  livedTo: Date | null;
  live: boolean;
}

const INSIGHT_RELATION = 'derived_from';

/** The selector over a live row `m`. */
function liveMatch(s: Selector): SQL {
  const parts: SQL[] = [];
  if (s.memoryIds) parts.push(sql`m.id = ANY(${pgArray(s.memoryIds)}::uuid[])`);
  if (s.agentId !== undefined) parts.push(sql`m.agent_id = ${s.agentId}`);
  if (s.tags?.length) parts.push(sql`m.tags && ${pgArray(s.tags)}::text[]`);
  if (s.spaceId) parts.push(sql`m.space_id = ${s.spaceId}::uuid`);
  if (s.before) parts.push(sql`m.created_at < ${s.before.toISOString()}::timestamptz`);
  return parts.length ? sql.join(parts, sql` AND `) : sql`true`;
}

/**
 * The selector over `snap`, the last snapshot a deleted memory's events hold, as stored (a create
 * event's leaves out only nulls, empty tags and its times: `created_at` is read beside it).
 */
function snapshotMatch(s: Selector): SQL {
  const parts: SQL[] = [];
  if (s.agentId !== undefined) parts.push(sql`s.snap->>'agent_id' = ${s.agentId}`);
  if (s.tags?.length) parts.push(sql`ARRAY(SELECT jsonb_array_elements_text(coalesce(s.snap->'tags', '[]'::jsonb))) && ${pgArray(s.tags)}::text[]`);
  if (s.spaceId) parts.push(sql`s.snap->>'space_id' = ${toUrn(s.spaceId)}`);
  if (s.before) parts.push(sql`s.created_at < ${s.before.toISOString()}::timestamptz`);
  return parts.length ? sql.join(parts, sql` AND `) : sql`true`;
}

/**
 * Locks the tenant's live memories that match, in id order (a concurrent update, delete or store
 * into one of them waits for the erasure, or the erasure for it). Expired rows not yet purged count
 * as live: their text is still there.
 */
async function lockLive(db: DbOrTx, tenantId: string, where: SQL): Promise<string[]> {
  const found = await rows<{ id: string }>(db, sql`SELECT m.id FROM memories m WHERE m.tenant_id = ${tenantId} AND ${where} ORDER BY m.id FOR UPDATE`);
  return found.map((r) => r.id);
}

/** Memories of the tenant without a row whose last recorded state matches: deleted, purged or rolled away. */
async function gone(db: DbOrTx, tenantId: string, s: Selector): Promise<string[]> {
  const only = s.memoryIds ? sql`AND e.memory_id = ANY(${pgArray(s.memoryIds)}::uuid[])` : sql``;
  const found = await rows<{ memory_id: string }>(
    db,
    sql`SELECT s.memory_id FROM (
          SELECT DISTINCT ON (e.memory_id) e.memory_id, coalesce(e.after, e.before) AS snap,
                 coalesce(${eventTime('e', 'created_at')}, (e.before->>'created_at')::timestamptz) AS created_at
          FROM memory_events e
          WHERE e.tenant_id = ${tenantId} AND e.kind IN (${STATE_KINDS_SQL}) ${only}
          ORDER BY e.memory_id, e.at DESC, e.id DESC) s
        WHERE NOT EXISTS (SELECT 1 FROM memories m WHERE m.tenant_id = ${tenantId} AND m.id = s.memory_id)
          AND ${snapshotMatch(s)}`,
  );
  return found.map((r) => r.memory_id);
}

/** Cortex insights drawn from these memories: their text quotes a source, so they go too. */
async function insightsOf(db: DbOrTx, tenantId: string, ids: string[]): Promise<string[]> {
  if (!ids.length) return [];
  const found = await rows<{ id: string }>(
    db,
    sql`SELECT e.memory_id AS id FROM memory_events e
        WHERE e.tenant_id = ${tenantId} AND e.kind = 'link' AND e.metadata->>'relation' = ${INSIGHT_RELATION}
          AND e.metadata->>'target_id' IN (SELECT unnest(${pgArray(ids.map(toUrn))}::text[]))
        UNION
        SELECT l.source_id AS id FROM memory_edges l
        WHERE l.tenant_id = ${tenantId} AND l.relation = ${INSIGHT_RELATION} AND l.target_id IN (SELECT unnest(${pgArray(ids)}::uuid[]))`,
  );
  return found.map((r) => r.id);
}

/** When each memory lived, from its events (or its row, for one without events). */
async function spans(db: DbOrTx, tenantId: string, ids: string[]) {
  const found = await rows<{ memory_id: string; lived_from: Date | string; last_state_at: Date | string | null }>(
    db,
    sql`SELECT e.memory_id, min(e.at) AS lived_from, max(e.at) FILTER (WHERE e.kind IN (${STATE_KINDS_SQL})) AS last_state_at
        FROM memory_events e WHERE e.tenant_id = ${tenantId} AND e.memory_id IN (SELECT unnest(${pgArray(ids)}::uuid[]))
        GROUP BY e.memory_id`,
  );
  return new Map(found.map((r) => [r.memory_id, { from: new Date(r.lived_from), lastState: r.last_state_at ? new Date(r.last_state_at) : null }]));
}

/**
 * Every memory of the tenant the selector names, live or gone, plus the insights drawn from them;
 * the live ones locked for the rest of the transaction. Ids of another tenant, or of nothing,
 * select nothing.
 */
export async function selectMemories(db: DbOrTx, tenantId: string, s: Selector, now: Date): Promise<Selected[]> {
  if (s.memoryIds && !s.memoryIds.length) return [];
  const live = new Set(await lockLive(db, tenantId, liveMatch(s)));
  // After the lock: a delete that committed meanwhile has its event on record now.
  const ids = new Set([...live, ...(await gone(db, tenantId, s))]);
  const insights = (await insightsOf(db, tenantId, [...ids])).filter((id) => !ids.has(id));
  if (insights.length) {
    for (const id of await lockLive(db, tenantId, sql`m.id = ANY(${pgArray(insights)}::uuid[])`)) live.add(id);
    for (const id of insights) ids.add(id);
  }
  const lived = await spans(db, tenantId, [...ids]);
  return [...ids].sort().map((id) => {
    const span = lived.get(id);
    const isLive = live.has(id);
    return { id, live: isLive, livedFrom: span?.from ?? now, livedTo: isLive ? null : (span?.lastState ?? now) };
  });
}

/**
 * The memory lines of running imports the selector names once stored (docs/portability.md#large-imports):
 * by agent, tags or space. None is a memory yet, so none matches `memory_ids`, and each will be
 * created after the erasure, so none matches `before`. They are deleted (or counted) and their
 * import counts them as erased.
 */
export async function eraseStaged(db: DbOrTx, tenantId: string, s: Selector, dryRun: boolean): Promise<number> {
  if (s.memoryIds || s.before) return 0;
  const parts: SQL[] = [sql`l.tenant_id = ${tenantId}`, sql`l.kind = 'memory'`];
  if (s.agentId !== undefined) parts.push(sql`l.record->'body'->>'agent_id' = ${s.agentId}`);
  if (s.tags?.length) parts.push(sql`ARRAY(SELECT jsonb_array_elements_text(coalesce(l.record->'body'->'tags', '[]'::jsonb))) && ${pgArray(s.tags)}::text[]`);
  if (s.spaceId)
    parts.push(sql`(l.record->'body'->>'space_id' IN (${s.spaceId}, ${toUrn(s.spaceId)}) OR EXISTS (
      SELECT 1 FROM import_sources i WHERE i.tenant_id = ${tenantId} AND i.source_id = l.record->>'spaceSource' AND i.target_id = ${s.spaceId}))`);
  const where = sql.join(parts, sql` AND `);
  const [{ n }] = await rows<{ n: number | string }>(
    db,
    dryRun
      ? sql`SELECT count(*) AS n FROM import_lines l WHERE ${where}`
      : sql`WITH d AS (DELETE FROM import_lines l WHERE ${where} RETURNING l.import_id),
              c AS (SELECT import_id, count(*) AS n FROM d GROUP BY import_id),
              u AS (UPDATE imports i SET erased = i.erased + c.n, processed = i.processed + c.n FROM c WHERE i.id = c.import_id RETURNING 1)
            SELECT coalesce(sum(c.n), 0) AS n FROM c`,
  );
  return Number(n);
}
