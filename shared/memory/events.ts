import { type SQL } from 'drizzle-orm';
import { sql } from '../platform/data/db';
import type { DbOrTx } from '../platform/data/db';
import { maintainIntervals } from './intervals';
import { embeddingOfEvent } from './history';

export type MemoryEventKind = 'create' | 'update' | 'delete' | 'recall' | 'link' | 'unlink' | 'expire' | 'rollback';

export interface MemoryEventInput {
  tenantId: string;
  memoryId: string;
  kind: MemoryEventKind;
  at: Date;
  actor?: string | null;
  requestId?: string | null;
  before?: Record<string, unknown> | null;
  after?: Record<string, unknown> | null;
  /** Embedding of the `after` state, so a past state can be restored or searched as it was. */
  embedding?: number[] | null;
  /** Instead of `embedding`: copy the embedding of the state this earlier event recorded (stays in the database). */
  embeddingOfEvent?: number | null;
  /**
   * Instead of `embedding`: the state's vector is the memory row's current one, written before this
   * event (migrations/0045 moves it into the event when the row's vector changes or the row goes).
   */
  embeddingLive?: boolean;
  metadata?: Record<string, unknown>;
}

const CHUNK = 500;

/**
 * What a new memory's snapshot holds when nothing was set: left out of a create event's `after`,
 * which memory_event_after (migrations/0057) puts back. Its id, owner and times come from the row.
 */
const CREATE_DEFAULTS: Record<string, unknown> = {
  recall_count: 0,
  importance: 5,
  confidence: 1,
  last_recalled_at: null,
  superseded_by: null,
  context: null,
  agent_id: null,
  space_id: null,
  expires_at: null,
};

/**
 * A create event's snapshot without what the event's row already says (its memory's id, owner and
 * the times equal to `at`) and the fields at their new-memory value: about half its bytes. Only a
 * snapshot holding every one of those fields with the value put back is cut (the `uuid` always:
 * its absence is what marks a cut one), so reading it back gives exactly the snapshot given here.
 */
export function compactCreate(after: Record<string, unknown>, e: { memoryId: string; tenantId: string; at: Date }): Record<string, unknown> {
  const at = e.at.toISOString();
  const derived: Record<string, unknown> = {
    uuid: `urn:uuid:${e.memoryId}`,
    owner_tenant_id: e.tenantId,
    created_at: at,
    updated_at: at,
    occurred_at: at,
    ...CREATE_DEFAULTS,
  };
  for (const key of Object.keys(derived)) if (after[key] === undefined) return after;
  if (after.uuid !== derived.uuid || !Array.isArray(after.tags)) return after;
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(after)) {
    if (key in derived && value === derived[key]) continue;
    if (key === 'tags' && (value as unknown[]).length === 0) continue;
    out[key] = value;
  }
  return out;
}

/**
 * The CTE `inserted` that appends `events` (one chunk) to the log; `maintainIntervals` must follow
 * it in the same statement. Other CTEs may come before it (a store inserts its rows there too).
 */
export function insertedEventsCte(events: MemoryEventInput[]): SQL {
  const chunk = events.map((e) => ({
    tenant_id: e.tenantId,
    memory_id: e.memoryId,
    kind: e.kind,
    at: e.at.toISOString(),
    actor: e.actor ?? null,
    request_id: e.requestId ?? null,
    before: e.before ?? null,
    after: e.after && e.kind === 'create' ? compactCreate(e.after, e) : (e.after ?? null),
    embedding: e.embedding ? `[${e.embedding.join(',')}]` : null,
    embedding_of: e.embeddingOfEvent ?? null,
    embedding_live: e.embeddingLive === true,
    metadata: e.metadata ?? {},
  }));
  return sql`inserted AS (
        INSERT INTO memory_events (tenant_id, memory_id, kind, at, actor, request_id, before, after, embedding, embedding_live, metadata)
        SELECT r.tenant_id, r.memory_id, r.kind, r.at, r.actor, r.request_id, r.before, r.after,
               coalesce(r.embedding::vector, CASE WHEN r.embedding_of IS NOT NULL THEN ${embeddingOfEvent(sql`r.embedding_of`)} END), r.embedding_live, r.metadata
        FROM jsonb_to_recordset(${JSON.stringify(chunk)}::jsonb) AS r(
          tenant_id text, memory_id uuid, kind text, at timestamptz, actor text, request_id text,
          before jsonb, after jsonb, embedding text, embedding_of bigint, embedding_live boolean, metadata jsonb)
        RETURNING id, tenant_id, memory_id, kind, at, after, metadata)`;
}

/**
 * Appends to the memory event log inside the caller's transaction (the history replay and rollback
 * read), a chunk of events per statement so that bulk operations stay cheap.
 */
export async function recordMemoryEvents(tx: DbOrTx, events: MemoryEventInput[]): Promise<void> {
  for (let i = 0; i < events.length; i += CHUNK) {
    // The events, and in the same statement the replay intervals they open and close.
    await tx.execute(sql`WITH ${insertedEventsCte(events.slice(i, i + CHUNK))}, ${maintainIntervals} SELECT 1`);
  }
}
