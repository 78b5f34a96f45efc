/**
 * The SQL of the rollback engine (shared/memory/rollback.ts): what changed after a target, and
 * putting memories and their links back. The rollback family and mission rollbacks both use it.
 */
import { sql } from '../platform/data/db';
import { type DbOrTx, pgArray, rows } from '../platform/data/db';
import { edgesAt, type PastEdge } from './edge-history';
import { embeddingOfEvent } from './history';
import { COLUMNS, type MemoryDto, type MemoryRow } from './rows';

const bare = (urn: string | null) => (urn ? urn.replace(/^urn:uuid:/, '') : null);

/**
 * Memories with a content-changing event after the target. With `agentId`, only the memories that
 * agent wrote after it: a create, update or delete whose memory carried that `agent_id` before or
 * after the write (a mission rollback that reverts its agent's memories).
 */
export async function changedSince(db: DbOrTx, tenantId: string, target: Date, agentId?: string): Promise<string[]> {
  const scope = agentId
    ? sql`AND kind IN ('create', 'update', 'delete') AND (after->>'agent_id' = ${agentId} OR before->>'agent_id' = ${agentId})`
    : sql`AND kind IN ('create', 'update', 'delete', 'expire', 'rollback')`;
  const found = await rows<{ id: string }>(
    db,
    sql`SELECT DISTINCT memory_id::text AS id FROM memory_events
        WHERE tenant_id = ${tenantId} AND at > ${target.toISOString()} ${scope}`,
  );
  return found.map((r) => r.id);
}

export async function currentRows(db: DbOrTx, tenantId: string, ids: string[], lock: boolean) {
  return rows<MemoryRow>(
    db,
    sql`SELECT ${COLUMNS} FROM memories m
        WHERE m.tenant_id = ${tenantId} AND m.id = ANY(${pgArray(ids)}::uuid[])
        ORDER BY m.id ${lock ? sql`FOR UPDATE` : sql``}`,
  );
}

export async function deleteMemories(tx: DbOrTx, tenantId: string, ids: string[]) {
  if (!ids.length) return;
  await tx.execute(sql`DELETE FROM memories WHERE tenant_id = ${tenantId} AND id = ANY(${pgArray(ids)}::uuid[])`);
}

/** A memory's state at the target, and the event that recorded it (its embedding is read from there). */
export interface PastItem {
  state: MemoryDto;
  eventId: number;
}

const recordset = (items: PastItem[]) =>
  JSON.stringify(
    items.map(({ state: s, eventId }) => ({
      id: bare(s.uuid),
      observation: s.observation,
      tags: s.tags,
      importance: s.importance,
      confidence: s.confidence,
      recall_count: s.recall_count,
      last_recalled_at: s.last_recalled_at,
      superseded_by: bare(s.superseded_by),
      context: s.context,
      agent_id: s.agent_id,
      space_id: bare(s.space_id),
      content_hash: s.hash,
      event_id: eventId,
      expires_at: s.expires_at,
      // Provenance as the snapshot recorded it; snapshots older than it (no `source`) take the column defaults.
      source_kind: s.source?.kind ?? null,
      source_via: s.source?.via ?? null,
      source_key_id: s.source?.key_id ?? null,
      source_ref: s.source?.ref ?? null,
      trust: s.trust ?? null,
      occurred_at: s.occurred_at && s.occurred_at !== s.created_at ? s.occurred_at : null,
      created_at: s.created_at,
    })),
  );

const RECORD = sql.raw(`r(id uuid, observation text, tags text[], importance smallint, confidence real, recall_count integer,
  last_recalled_at timestamptz, superseded_by uuid, context text, agent_id text, space_id uuid, content_hash text,
  event_id bigint, expires_at timestamptz, source_kind text, source_via text, source_key_id text, source_ref text, trust text,
  occurred_at timestamptz, created_at timestamptz)`);

/*
 * Rows a rollback writes are index_pending (migrations/0006): the partial HNSW index skips them, so
 * thousands of vectors do not go into the graph inside this transaction; searches read them
 * exactly until the vector_index job (shared/memory/vector-index.ts) moves them in, a batch at a time.
 */

/** Brings deleted memories back exactly as they were (one statement for any number). */
export async function insertMemories(tx: DbOrTx, tenantId: string, items: PastItem[], now: Date) {
  if (!items.length) return;
  await tx.execute(sql`
    INSERT INTO memories (id, tenant_id, observation, tags, importance, confidence, recall_count, last_recalled_at, superseded_by,
                          context, agent_id, space_id, content_hash, embedding, index_pending, expires_at, created_at, updated_at,
                          source_kind, source_via, source_key_id, source_ref, trust, occurred_at)
    SELECT r.id, ${tenantId}, r.observation, coalesce(r.tags, '{}'), r.importance, r.confidence, r.recall_count, r.last_recalled_at,
           r.superseded_by, r.context, r.agent_id, r.space_id, r.content_hash, ${embeddingOfEvent(sql`r.event_id`)}, true,
           r.expires_at, r.created_at, ${now.toISOString()},
           coalesce(r.source_kind, 'user'), coalesce(r.source_via, 'api'), r.source_key_id, r.source_ref, coalesce(r.trust, 'verified'), r.occurred_at
    FROM jsonb_to_recordset(${recordset(items)}::jsonb) AS ${RECORD}`);
}

/** Puts changed memories back to their earlier content; recall statistics stay as they are. */
export async function revertMemories(tx: DbOrTx, tenantId: string, items: PastItem[], now: Date) {
  if (!items.length) return;
  await tx.execute(sql`
    UPDATE memories m SET observation = r.observation, tags = coalesce(r.tags, '{}'), importance = r.importance,
      confidence = r.confidence, superseded_by = r.superseded_by, context = r.context, agent_id = r.agent_id,
      space_id = r.space_id, content_hash = r.content_hash, embedding = coalesce(${embeddingOfEvent(sql`r.event_id`)}, m.embedding),
      index_pending = true, expires_at = r.expires_at,
      source_kind = coalesce(r.source_kind, 'user'), source_via = coalesce(r.source_via, 'api'), source_key_id = r.source_key_id,
      source_ref = r.source_ref, trust = coalesce(r.trust, 'verified'), occurred_at = r.occurred_at,
      version = m.version + 1, updated_at = ${now.toISOString()}
    FROM jsonb_to_recordset(${recordset(items)}::jsonb) AS ${RECORD}
    WHERE m.id = r.id AND m.tenant_id = ${tenantId}`);
}

/** The links restored memories had at the target (edgesAt: the rule the replay snapshot uses). */
export async function linksAt(tx: DbOrTx, tenantId: string, ids: string[], target: Date): Promise<PastEdge[]> {
  return ids.length ? edgesAt(tx, tenantId, target, ids) : [];
}

/**
 * Restored memories get back the links to other memories they had at the target (`past`, from
 * linksAt, so the store after a rollback matches the snapshot at its target) whose two ends exist
 * again. Returns the links inserted; the caller records a `link` event for each, so replay sees
 * them from now on. (Links to knowledge graph entities are restoreMentions'.)
 */
export async function restoreLinks(tx: DbOrTx, tenantId: string, past: PastEdge[], now: Date) {
  if (!past.length) return [];
  return rows<PastEdge>(
    tx,
    sql`
    INSERT INTO memory_edges (id, tenant_id, source_id, target_id, relation, weight, created_at)
    SELECT gen_random_uuid(), ${tenantId}, l.source_id, l.target_id, l.relation, l.weight, ${now.toISOString()}
    FROM jsonb_to_recordset(${JSON.stringify(past)}::jsonb) AS l(source_id uuid, target_id uuid, relation text, weight real)
    WHERE EXISTS (SELECT 1 FROM memories s WHERE s.id = l.source_id AND s.tenant_id = ${tenantId})
      AND EXISTS (SELECT 1 FROM memories t WHERE t.id = l.target_id AND t.tenant_id = ${tenantId})
    ON CONFLICT DO NOTHING
    RETURNING source_id::text, target_id::text, relation, weight`,
  );
}

export async function insertHistory(
  tx: DbOrTx,
  r: { id: string; tenantId: string; target: Date; actor: string | null; removed: number; restored: number; reverted: number; at: Date },
) {
  await tx.execute(sql`
    INSERT INTO rollbacks (id, tenant_id, target, actor, removed, restored, reverted, created_at)
    VALUES (${r.id}, ${r.tenantId}, ${r.target.toISOString()}, ${r.actor}, ${r.removed}, ${r.restored}, ${r.reverted}, ${r.at.toISOString()})`);
}

/** The links touching some memories, in the shape delete and rollback events record. */
export async function linksOf(db: DbOrTx, tenantId: string, ids: string[]) {
  if (!ids.length) return new Map<string, { source_id: string; target_id: string; relation: string; weight: number }[]>();
  const found = await rows<{ source_id: string; target_id: string; relation: string; weight: number }>(
    db,
    sql`SELECT source_id::text, target_id::text, relation, weight FROM memory_edges
        WHERE tenant_id = ${tenantId} AND (source_id = ANY(${pgArray(ids)}::uuid[]) OR target_id = ANY(${pgArray(ids)}::uuid[]))`,
  );
  const wanted = new Set(ids);
  const byMemory = new Map<string, { source_id: string; target_id: string; relation: string; weight: number }[]>();
  for (const l of found) {
    const link = { source_id: `urn:uuid:${l.source_id}`, target_id: `urn:uuid:${l.target_id}`, relation: l.relation, weight: Number(l.weight) };
    for (const end of [l.source_id, l.target_id]) if (wanted.has(end)) byMemory.set(end, [...(byMemory.get(end) ?? []), link]);
  }
  return byMemory;
}
