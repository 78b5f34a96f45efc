import { type SQL } from 'drizzle-orm';
import { sql } from '../../../shared/platform/data/db';
import { v7 as uuidv7 } from 'uuid';
import { live, type TenantScope } from '../../../shared/memory/access';
import { COLUMNS, type MemoryDto, type MemoryRow, toMemoryDto, vectorLiteral } from '../../../shared/memory/rows';
import { keepsVectorPlans, nearestInTenant, nearestMemories } from '../../../shared/memory/vector-search';
import { type DbOrTx, inList, pgArray, preparedRows, preparedRowsWithNext, rows, rowsOf, type StorageKind, type Tx } from '../../../shared/platform/data/db';
import { pgError } from '../../../shared/platform/data/pg-errors';
import { ensureHeadsSql } from '../../../shared/platform/data/audit';
import { insertedEventsCte, type MemoryEventInput } from '../../../shared/memory/events';
import { maintainIntervals } from '../../../shared/memory/intervals';
import type { Source, Trust } from '../../../shared/memory/provenance';
import { periodOf } from '../../../shared/platform/contract/time';
import { governanceVersionOf } from './governance';

export const newMemoryId = () => uuidv7();

export interface NewMemory {
  id: string;
  owner: string;
  observation: string;
  tags: string[];
  importance: number;
  context: string | null;
  agentId: string | null;
  spaceId: string | null;
  hash: string;
  embedding: number[];
  expiresAt: Date | null;
  source: Source;
  trust: Trust;
  /** Null: when it was stored. */
  occurredAt: Date | null;
}

/** The DTO of a memory as the store inserts it (what `RETURNING` would give back). */
export function newMemoryDto(m: NewMemory, now: Date): MemoryDto {
  return toMemoryDto({
    id: m.id,
    tenant_id: m.owner,
    observation: m.observation,
    tags: m.tags,
    importance: m.importance,
    confidence: 1,
    recall_count: 0,
    last_recalled_at: null,
    superseded_by: null,
    context: m.context,
    agent_id: m.agentId,
    space_id: m.spaceId,
    content_hash: m.hash,
    expires_at: m.expiresAt,
    source_kind: m.source.kind,
    source_via: m.source.via,
    source_key_id: m.source.key_id,
    source_ref: m.source.ref,
    trust: m.trust,
    occurred_at: m.occurredAt,
    version: 1,
    created_at: now,
    updated_at: now,
  });
}

/** What one group of stores (one owner, scope and space) asks the probe. */
export interface ProbeGroup {
  n: number;
  owner: string;
  scope: TenantScope;
  spaceId: string | null;
  hashes: string[];
  mentionCandidates: string[];
}

export interface StoreProbe {
  /** Per group: live, current memories in scope with one of its hashes in its space, locked. */
  duplicates: Map<number, MemoryRow[]>;
  /** Per group: the owner's entities named by any of its texts, locked FOR KEY SHARE. */
  entities: Map<number, { entity_id: string; name: string; entity_type: string }[]>;
  /** Per owner: this month's memories quota spent so far. */
  quotaUsed: Map<string, number>;
  /** Per owner: active webhooks subscribed to memory.created. */
  webhooks: Map<string, string[]>;
  /** The governance version of the tenant asked for (its memory policies judged the stores), else null. */
  governanceVersion: number | null;
}

const contentLocks = (keys: string[]) =>
  sql`SELECT count(pg_advisory_xact_lock(hashtextextended(k, 0))) AS n FROM (SELECT k FROM ${rowsOf([...keys].sort(), 'text', 'k')} ORDER BY 1) keys`;

/** A memory's content key, `owner:hash`: what a content lock takes and memories_content_key_idx holds (migrations/0055). */
export const contentKeyOf = (owner: string, hash: string) => `${owner}:${hash}`;

/**
 * The current duplicates of one group: its hashes among the live, unsuperseded memories of its scope
 * and space, found by their content keys (the index's expression, written as it is there).
 */
const duplicatesOf = (g: { owner: string; scope: TenantScope; hashes: string[]; spaceId: string | null }, now: Date) =>
  sql`${g.scope} AND ${inList(
    sql`(m.tenant_id || ':' || m.content_hash)`,
    g.hashes.map((h) => contentKeyOf(g.owner, h)),
    'text',
  )}
      AND ${inList(sql`m.content_hash`, g.hashes, 'text')} AND m.space_id IS NOT DISTINCT FROM ${g.spaceId}::uuid
      AND m.superseded_by IS NULL AND ${live(now)}`;

/**
 * Everything the decisions of a store need, in one statement, the first of its transaction: the
 * owners' audit chain head rows made sure of, the content locks (`owner:hash`, in key order), so
 * two concurrent stores of the same text cannot both miss each other, and then the reads.
 *
 * The reads share the statement's snapshot, taken before a content lock may have been waited for:
 * a store of the same text that committed meanwhile is not among the duplicates read here. The
 * next statement (insertStores) sees it and says so; the store then runs again with `locks.first`,
 * its locks taken in a statement of their own before the probe reads (one round trip more).
 *
 * `governedBy`: the tenant whose memory policies judged the stores (the caller): its governance
 * version is read too (docs/governed-memories.md), for the store to check it judged with that one.
 */
export async function probeStores(
  tx: DbOrTx,
  groups: ProbeGroup[],
  owners: string[],
  locks: { keys: string[]; first: boolean },
  now: Date,
  governedBy: string | null = null,
): Promise<StoreProbe> {
  if (locks.first) await preparedRows(tx, sql`WITH heads AS (${ensureHeadsSql(owners)}) ${contentLocks(locks.keys)}`);
  const ctes: SQL[] = locks.first ? [sql`locks AS (SELECT 0 AS n)`] : [sql`heads AS (${ensureHeadsSql(owners)})`, sql`locks AS (${contentLocks(locks.keys)})`];
  const cols: SQL[] = [];
  for (const g of groups) {
    const n = sql.raw(String(g.n));
    // The locks first: a condition without columns is checked once, before the rows are read and locked.
    ctes.push(sql`dups_${n} AS (
      SELECT ${COLUMNS} FROM memories m WHERE ${duplicatesOf(g, now)} AND (SELECT n FROM locks) >= 0
      FOR UPDATE)`);
    cols.push(sql`(SELECT coalesce(json_agg(d), '[]') FROM dups_${n} d) AS dups_${n}`);
    if (g.mentionCandidates.length) {
      ctes.push(sql`ents_${n} AS (
        SELECT e.id::text AS entity_id, e.name, e.entity_type FROM knowledge_entities e
        WHERE e.tenant_id = ${g.owner} AND e.name = ANY(${pgArray(g.mentionCandidates)}::text[])
        FOR KEY SHARE)`);
      cols.push(sql`(SELECT coalesce(json_agg(x), '[]') FROM ents_${n} x) AS ents_${n}`);
    }
  }
  cols.push(sql`(SELECT coalesce(json_agg(json_build_array(u.tenant_id, u.value)), '[]') FROM usage_counters u
                 WHERE ${inList(sql`u.tenant_id`, owners, 'text')} AND u.metric = 'memories' AND u.bucket = ${periodOf(now)}) AS quota`);
  cols.push(sql`(SELECT coalesce(json_agg(json_build_array(w.tenant_id, w.id) ORDER BY w.id), '[]') FROM webhooks w
                 WHERE ${inList(sql`w.tenant_id`, owners, 'text')} AND w.active AND 'memory.created' = ANY (w.events)) AS webhooks`);
  if (governedBy !== null) cols.push(sql`${governanceVersionOf(governedBy)} AS governance`);
  const [row] = await preparedRows<Record<string, unknown>>(tx, sql`WITH ${sql.join(ctes, sql`, `)} SELECT ${sql.join(cols, sql`, `)}`);
  const json = <T>(v: unknown): T => (typeof v === 'string' ? JSON.parse(v) : v) as T;
  const probe: StoreProbe = {
    duplicates: new Map(),
    entities: new Map(),
    quotaUsed: new Map(),
    webhooks: new Map(),
    governanceVersion: governedBy === null ? null : Number(row.governance),
  };
  for (const g of groups) {
    probe.duplicates.set(g.n, json<MemoryRow[]>(row[`dups_${g.n}`]));
    if (row[`ents_${g.n}`]) probe.entities.set(g.n, json(row[`ents_${g.n}`]));
  }
  for (const [tenantId, value] of json<[string, number][]>(row.quota)) probe.quotaUsed.set(tenantId, Number(value));
  for (const [tenantId, id] of json<[string, string][]>(row.webhooks)) probe.webhooks.set(tenantId, [...(probe.webhooks.get(tenantId) ?? []), id]);
  return probe;
}

/** One auto-linking store: its vector, and the memories it may not link to (duplicates it supersedes). */
export interface LinkProbe {
  index: number;
  scope: TenantScope;
  /** The tenant whose whole store `scope` is (a store into your own), else null (a share's or team's part of it). */
  wholeStoreOf: string | null;
  vector: string;
  excludeIds: string[];
}

/**
 * Per store (request index), its `limit` nearest live, current memories in scope: one index scan
 * each, in one statement. A single store into the caller's own store (the common case) runs, where
 * plans are kept (keepsVectorPlans), as a named statement whose plan is kept: nearestInTenant picks the graph or the exact scan when it
 * runs. Any other is planned per run, for the tenant at hand: a cached generic plan of
 * nearestMemories would pick the exact scan or the HNSW index once for every tenant, and each is the
 * wrong one for some (an exact scan costs a few microseconds per memory of the tenant; the graph
 * walk, filtered to a tenant with a small share of the table, visits most of the graph), and only
 * the planner weighs a share's or team's filter. `withNext`: the statement waits for the
 * transaction's next one and travels with it (db.preparedRowsWithNext).
 */
/** A memory a store may link to: its trust lowers the new memory's (docs/memories.md#provenance-and-trust). */
export interface LinkNeighbour {
  id: string;
  trust: Trust;
  similarity: number;
}

export async function linkNeighbours(
  tx: Tx,
  storage: StorageKind,
  probes: LinkProbe[],
  limit: number,
  now: Date,
  opts: { withNext?: boolean } = {},
): Promise<Map<number, LinkNeighbour[]>> {
  const out = new Map<number, LinkNeighbour[]>();
  if (!probes.length) return out;
  const keepPlan = probes.length === 1 && probes[0].wholeStoreOf !== null && keepsVectorPlans(storage, limit);
  const nearest = probes.map((p) => {
    const exclude = p.excludeIds.length ? sql`AND m.id <> ALL(${pgArray(p.excludeIds)}::uuid[])` : sql``;
    const where = sql`${p.scope} AND m.superseded_by IS NULL AND ${live(now)} ${exclude}`;
    const select = sql`m.id, m.trust`;
    const found = keepPlan ? nearestInTenant(select, where, p.vector, { limit }, p.wholeStoreOf!) : nearestMemories(select, where, p.vector, { limit });
    return sql`(SELECT ${p.index}::int AS i, x.id, x.trust, x.similarity FROM (${found}) x)`;
  });
  const statement = sql.join(nearest, sql` UNION ALL `);
  type Neighbour = { i: number; id: string; trust: Trust; similarity: number | string };
  const found = opts.withNext
    ? preparedRowsWithNext<Neighbour>(tx, statement, { planEachTime: !keepPlan })
    : keepPlan
      ? preparedRows<Neighbour>(tx, statement)
      : rows<Neighbour>(tx, statement);
  for (const x of await found) {
    out.set(x.i, [...(out.get(x.i) ?? []), { id: x.id, trust: x.trust, similarity: Number(x.similarity) }]);
  }
  return out;
}

/**
 * One statement writing what the store decided: the memories (a memory superseded by a later store
 * of the same request is inserted in its final state, its events tell both steps), older
 * duplicates superseded, similarity links, entity mentions, memory events and replay intervals.
 *
 * It travels with the transaction's next statement where the driver allows (db.preparedRowsWithNext),
 * the store's last: the promise settles with that. A duplicate that committed after the probe's
 * snapshot fails it with UNSEEN_DUPLICATE (40001: the store runs again, see isUnseenDuplicate), so
 * whatever travels with it does not run.
 */
export function insertStores(
  tx: Tx,
  seen: { owner: string; scope: TenantScope; hashes: string[]; spaceId: string | null; ids: string[] }[],
  memories: (NewMemory & { supersededBy: string | null; version: number; updatedAt: Date })[],
  supersedes: { tenantId: string; id: string; by: string }[],
  links: { tenantId: string; sourceId: string; targetId: string; weight: number }[],
  mentions: { tenantId: string; memoryId: string; entityId: string }[],
  events: MemoryEventInput[],
  now: Date,
): Promise<unknown> {
  const at = now.toISOString();
  const ctes: SQL[] = [];
  // Duplicates that committed after the probe's snapshot (see probeStores); this statement's own
  // snapshot is newer than every content lock the probe took, and does not see its own rows.
  const unseen = seen.map((g) => sql`EXISTS (SELECT 1 FROM memories m WHERE ${duplicatesOf(g, now)} AND m.id <> ALL(${pgArray(g.ids)}::uuid[]))`);
  const rowsJson = memories.map((m) => ({
    id: m.id,
    tenant_id: m.owner,
    observation: m.observation,
    tags: m.tags,
    importance: m.importance,
    context: m.context,
    agent_id: m.agentId,
    space_id: m.spaceId,
    content_hash: m.hash,
    embedding: vectorLiteral(m.embedding),
    expires_at: m.expiresAt?.toISOString() ?? null,
    superseded_by: m.supersededBy,
    version: m.version,
    source_kind: m.source.kind,
    source_via: m.source.via,
    source_key_id: m.source.key_id,
    source_ref: m.source.ref,
    trust: m.trust,
    occurred_at: m.occurredAt?.toISOString() ?? null,
  }));
  ctes.push(sql`stored AS (
    INSERT INTO memories (id, tenant_id, observation, tags, importance, confidence, context, agent_id, space_id,
                          content_hash, embedding, expires_at, superseded_by, version, created_at, updated_at,
                          source_kind, source_via, source_key_id, source_ref, trust, occurred_at)
    SELECT r.id, r.tenant_id, r.observation, r.tags, r.importance, 1, r.context, r.agent_id, r.space_id,
           r.content_hash, r.embedding::live_vector, r.expires_at, r.superseded_by, r.version, ${at}, ${at},
           r.source_kind, r.source_via, r.source_key_id, r.source_ref, r.trust, r.occurred_at
    FROM jsonb_to_recordset(${JSON.stringify(rowsJson)}::jsonb) AS r(
      id uuid, tenant_id text, observation text, tags text[], importance int, context text, agent_id text, space_id uuid,
      content_hash text, embedding text, expires_at timestamptz, superseded_by uuid, version int,
      source_kind text, source_via text, source_key_id text, source_ref text, trust text, occurred_at timestamptz))`);
  if (supersedes.length) {
    ctes.push(sql`superseded AS (
      UPDATE memories m SET superseded_by = r.by, version = m.version + 1, updated_at = ${at}
      FROM jsonb_to_recordset(${JSON.stringify(supersedes)}::jsonb) AS r("tenantId" text, id uuid, by uuid)
      WHERE m.tenant_id = r."tenantId" AND m.id = r.id)`);
  }
  if (links.length) {
    const edges = links.map((l) => ({ ...l, edgeId: uuidv7() }));
    ctes.push(sql`linked AS (
      INSERT INTO memory_edges (id, tenant_id, source_id, target_id, relation, weight, created_at)
      SELECT r."edgeId", r."tenantId", r."sourceId", r."targetId", 'similar', r.weight, ${at}
      FROM jsonb_to_recordset(${JSON.stringify(edges)}::jsonb) AS r("edgeId" uuid, "tenantId" text, "sourceId" uuid, "targetId" uuid, weight real)
      ON CONFLICT DO NOTHING)`);
  }
  if (mentions.length) {
    ctes.push(sql`mentioned AS (
      INSERT INTO memory_entities (memory_id, entity_id, tenant_id, created_at)
      SELECT r."memoryId", r."entityId", r."tenantId", ${at}
      FROM jsonb_to_recordset(${JSON.stringify(mentions)}::jsonb) AS r("memoryId" uuid, "entityId" uuid, "tenantId" text))`);
  }
  ctes.push(insertedEventsCte(withLiveEmbeddings(events, memories)));
  return preparedRowsWithNext(
    tx,
    sql`WITH ${sql.join(ctes, sql`, `)}, ${maintainIntervals}
    SELECT CASE WHEN ${unseen.length ? sql.join(unseen, sql` OR `) : sql`false`} THEN engram_retry(${UNSEEN_DUPLICATE}) ELSE true END AS ok`,
  );
}

/**
 * A create event whose vector is the one its memory row is inserted with keeps no copy of it: the
 * row's vector is the state's until it changes (migrations/0045 moves it into the event then).
 */
function withLiveEmbeddings(events: MemoryEventInput[], memories: { id: string; embedding: number[] }[]): MemoryEventInput[] {
  const rowVector = new Map(memories.map((m) => [m.id, m.embedding]));
  return events.map((e) => {
    const row = rowVector.get(e.memoryId);
    const same =
      e.kind === 'create' && e.embedding && row && (e.embedding === row || (e.embedding.length === row.length && e.embedding.every((x, i) => x === row[i])));
    return same ? { ...e, embedding: null, embeddingLive: true } : e;
  });
}

const UNSEEN_DUPLICATE = 'a duplicate was stored concurrently';
/** insertStores failed because a store of the same text committed while the probe waited for its content lock. */
export const isUnseenDuplicate = (err: unknown) => {
  const e = pgError(err);
  return e?.code === '40001' && e.message === UNSEEN_DUPLICATE;
};
