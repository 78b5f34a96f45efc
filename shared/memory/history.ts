import type { Ctx } from '../platform/contract/context';
import { type SQL } from 'drizzle-orm';
import { sql } from '../platform/data/db';
import { type DbOrTx, pgArray, rows } from '../platform/data/db';
import type { MemoryDto } from './rows';

/** Event kinds that change what a memory is (recalls and links do not). */
export const STATE_KINDS = ['create', 'update', 'delete', 'expire', 'rollback'] as const;

export const STATE_KINDS_SQL = sql.raw(STATE_KINDS.map((k) => `'${k}'`).join(', '));

export interface PastState {
  memoryId: string;
  /** The memory as it was, or null when at that time it had been deleted (or never existed). */
  state: MemoryDto | null;
  /** Whether the embedding that went with that state is on record (false when asked without embeddings). */
  hasEmbedding: boolean;
  /** When and by which event it got that state. */
  at: Date;
  eventId: number;
}

/**
 * SQL for the last state-changing event of each memory at or before `at`: one row per memory with
 * the columns `memory_id`, `id`, `kind`, `at`. Only keys go through the DISTINCT ON sort; join
 * `memory_events` on `id` for the snapshot (`after`) of the rows you keep.
 */
export function latestStateEvents(tenantId: string, at: Date, onlyIds?: string[]): SQL {
  const filter = onlyIds ? sql`AND e.memory_id = ANY(${pgArray(onlyIds)}::uuid[])` : sql``;
  return sql`
    SELECT DISTINCT ON (e.memory_id) e.memory_id, e.id, e.kind, e.at
    FROM memory_events e
    WHERE e.tenant_id = ${tenantId} AND e.at <= ${at.toISOString()}::timestamptz AND e.kind IN (${STATE_KINDS_SQL}) ${filter}
    ORDER BY e.memory_id, e.at DESC, e.id DESC`;
}

/**
 * SQL predicate over a state event row (alias `e`, the latest of its memory at `at`): the memory
 * existed at `at`. A delete, an expiry purge or a rollback that removed it leaves no state, and a
 * state whose TTL had run out by `at` is gone too (reads hide expired memories at once). `at` may be
 * a Date or an SQL time expression.
 */
export function presentAt(at: Date | SQL, alias = 'e'): SQL {
  const e = sql.raw(alias);
  const time = at instanceof Date ? sql`${at.toISOString()}::timestamptz` : at;
  return sql`(${e}.kind NOT IN ('delete', 'expire') AND ${e}.after IS NOT NULL
    AND (${e}.after->>'expires_at' IS NULL OR (${e}.after->>'expires_at')::timestamptz > ${time}))`;
}

/**
 * SQL for the whole snapshot (`after`) of the memory_events row `alias`: a create event's is kept
 * without what its row already says (shared/memory/events.ts compactCreate, migrations/0057) and
 * put back here. Every read of a snapshot goes through this, never `alias.after` as stored.
 */
export function eventAfter(alias = 'e'): SQL {
  const e = sql.raw(alias);
  return sql`memory_event_after(${e}.kind, ${e}.after, ${e}.memory_id, ${e}.tenant_id, ${e}.at)`;
}

/**
 * SQL for one time of the snapshot of event `alias` (`created_at`, `updated_at`, `occurred_at`) as
 * timestamptz, without putting the whole snapshot together (a scan over many states reads a few
 * fields of each): a create event's snapshot leaves a time out when it is the event's `at`.
 */
export function eventTime(alias: string, field: 'created_at' | 'updated_at' | 'occurred_at'): SQL {
  const e = sql.raw(alias);
  return sql`coalesce((${e}.after->>${sql.raw(`'${field}'`)})::timestamptz, CASE WHEN ${e}.kind = 'create' THEN ${e}.at END)`;
}

/**
 * SQL for the embedding that went with the state of event `alias`: its own, or else (an update
 * that changed no text records none) the latest earlier one of the same memory. An event marked
 * `embedding_live` keeps no copy: its vector is the memory row's current one (migrations/0045).
 */
export function embeddingOfState(alias = 'e'): SQL {
  const e = sql.raw(alias);
  return sql`coalesce(${e}.embedding, (
    SELECT CASE WHEN prior.embedding_live
             THEN (SELECT live.embedding::vector FROM memories live WHERE live.tenant_id = prior.tenant_id AND live.id = prior.memory_id)
             ELSE prior.embedding END
    FROM memory_events prior
    WHERE prior.tenant_id = ${e}.tenant_id AND prior.memory_id = ${e}.memory_id AND (prior.embedding IS NOT NULL OR prior.embedding_live)
      AND prior.id <= ${e}.id
    ORDER BY prior.id DESC LIMIT 1))`;
}

/** SQL for the embedding of the state that event `eventId` (an SQL bigint expression) recorded. */
export const embeddingOfEvent = (eventId: SQL) => sql`(SELECT ${embeddingOfState('src')} FROM memory_events src WHERE src.id = ${eventId})`;

/**
 * For one reporting statement over a whole tenant's history: no JIT (its cost estimate crosses
 * jit_above_cost at a few thousand memories, and compiling takes longer than running it; PGlite
 * has none anyway), no parallel workers (they would each rescan the ordered index-only inputs that
 * cannot be split), and sort and hash memory so that nothing spills to disk.
 */
export async function analyticSettings(tx: DbOrTx) {
  await tx.execute(sql`SET LOCAL jit = off`);
  await tx.execute(sql`SET LOCAL max_parallel_workers_per_gather = 0`);
  await tx.execute(sql`SET LOCAL work_mem = '32MB'`);
}

/** A read of its own transaction with `analyticSettings` (SET LOCAL needs one), for the heavy history queries. */
export function analyticRead<T>(ctx: Ctx, fn: (tx: DbOrTx) => Promise<T>): Promise<T> {
  return ctx.services.db.transaction(async (tx) => {
    await analyticSettings(tx);
    return fn(tx);
  });
}

/** Whether a past state (a snapshot DTO) existed at `at`: not deleted, and its TTL not run out by then. */
export function existedAt(state: MemoryDto | null, at: Date): state is MemoryDto {
  return state !== null && (state.expires_at === null || new Date(state.expires_at) > at);
}

/**
 * Every memory of the tenant as it was at `at` (inclusive), rebuilt from the event log: the last
 * state-changing event of each memory at or before `at` carries its full snapshot. Memories whose
 * last event is a delete (or a rollback that removed them) come back with `state: null`.
 * `onlyIds` narrows it to some memories (rollback and lifecycle use that); `embeddings: false`
 * skips looking for the vectors (diffs do not need them). The vectors themselves never leave the
 * database: a caller that needs one reads it by `eventId` with embeddingOfState in its own SQL.
 */
export async function statesAt(db: DbOrTx, tenantId: string, at: Date, onlyIds?: string[], opts: { embeddings?: boolean } = {}): Promise<PastState[]> {
  if (onlyIds && !onlyIds.length) return [];
  const hasEmbedding = opts.embeddings === false ? sql`false` : sql`(${embeddingOfState('e')}) IS NOT NULL`;
  const found = await rows<{ memory_id: string; kind: string; after: MemoryDto | null; at: Date | string; id: string | number; has_embedding: boolean }>(
    db,
    sql`
    SELECT l.memory_id::text AS memory_id, e.kind, ${eventAfter('e')} AS after, e.at, e.id, ${hasEmbedding} AS has_embedding
    FROM (${latestStateEvents(tenantId, at, onlyIds)}) l JOIN memory_events e ON e.id = l.id
    ORDER BY l.memory_id`,
  );
  return found.map((r) => ({
    memoryId: r.memory_id,
    state: r.kind === 'delete' || r.kind === 'expire' ? null : r.after,
    hasEmbedding: Boolean(r.has_embedding),
    at: new Date(r.at),
    eventId: Number(r.id),
  }));
}
