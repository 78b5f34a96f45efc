import { type SQL, sql } from 'drizzle-orm';
import { v7 as uuidv7 } from 'uuid';
import { type Grant, type GrantReader, grantsExist, grantsFromJson, grantsJson, live, narrow, readableBy, type Scope, type TenantScope } from '../../shared/memory/access';
import { COLUMNS, type MemoryDto, type MemoryRow, toMemoryDto, vectorLiteral } from '../../shared/memory/rows';
import { clamp01, keepsVectorPlans, nearestInTenant, nearestMemories, sessionsSearch, vectorRead, vectorSearchSettings } from '../../shared/memory/vector-search';
import { type DbOrTx, inList, pgArray, preparedRows, preparedRowsWithNext, readWithSettings, rows, rowsAndCommit, rowsOf, type StorageKind, type Tx } from '../../shared/platform/db';
import { pgError } from '../../shared/platform/pg-errors';
import { milestoneInsert } from '../../shared/platform/milestones';
import { auditRow, chainSql, ensureHeadsSql, type AuditInput } from '../../shared/platform/audit';
import { enqueueDelivery, type EventPayload, streamEventsSql } from '../../shared/jobs/events';
import { insertedEventsCte, type MemoryEventInput } from '../../shared/memory/events';
import { maintainIntervals } from '../../shared/memory/intervals';
import { liveMemoriesSql, markUsageChanged, quotaUpsertSql } from '../../shared/platform/usage';
import { ANOMALY_THRESHOLDS, anomalyCounterSql } from '../../shared/platform/anomalies';

const RAPID_WRITES = ANOMALY_THRESHOLDS.rapid_writes;
import { periodOf } from '../../shared/platform/time';
import { tiers } from '../../shared/platform/tiers';
import { type PageInput, pageRows } from '../../shared/platform/pagination';
import type { Tier } from '../../shared/platform/tiers';

export { COLUMNS, type MemoryDto, type MemoryRow, toMemoryDto, vectorLiteral } from '../../shared/memory/rows';

/**
 * Every statement of the memories family. Each takes the tenant (or a `TenantScope`, which only
 * shared/memory/access.ts can build), so a query that forgets whose memories it reads does not
 * compile.
 */

export interface Filters {
  tags?: string[];
  agentId?: string;
  spaceId?: string;
  includeSuperseded?: boolean;
}

/** Readability, liveness and the optional filters, as one scope over alias `m`. */
export function whereReadable(tenantId: string, grants: Grant[], scope: Scope, now: Date, f: Filters): TenantScope {
  const parts: SQL[] = [live(now)];
  if (f.tags?.length) parts.push(sql`m.tags && ${pgArray(f.tags)}::text[]`);
  if (f.agentId) parts.push(sql`m.agent_id = ${f.agentId}`);
  if (f.spaceId) parts.push(sql`m.space_id = ${f.spaceId}::uuid`);
  if (f.includeSuperseded === false) parts.push(sql`m.superseded_by IS NULL`);
  return narrow(readableBy(tenantId, grants, scope), ...parts);
}

export async function findIn(db: DbOrTx, scope: TenantScope, id: string): Promise<MemoryRow | null> {
  const [row] = await rows<MemoryRow>(db, sql`SELECT ${COLUMNS} FROM memories m WHERE m.id = ${id}::uuid AND ${scope}`);
  return row ?? null;
}

/** The tenant's own live memory; `lock` takes it FOR UPDATE for a write. */
export async function findOwn(db: DbOrTx, tenantId: string, id: string, now: Date, lock = false): Promise<MemoryRow | null> {
  const [row] = await rows<MemoryRow>(
    db,
    sql`SELECT ${COLUMNS} FROM memories m WHERE m.id = ${id}::uuid AND m.tenant_id = ${tenantId} AND ${live(now)} ${lock ? sql`FOR UPDATE` : sql``}`,
  );
  return row ?? null;
}

export function listPage(db: DbOrTx, scope: TenantScope, page: PageInput) {
  return pageRows<MemoryRow>(
    db,
    sql`SELECT ${COLUMNS} FROM memories m WHERE ${scope} ORDER BY m.created_at DESC, m.id DESC`,
    sql`SELECT count(*) AS n FROM memories m WHERE ${scope}`,
    page,
  );
}

/** A keyset page for exports: newest first, after the (created_at, id) of the last row sent. */
export function pageAfter(db: DbOrTx, scope: TenantScope, after: { createdAt: string; id: string } | null, limit: number) {
  const cursor = after ? sql`AND (m.created_at, m.id) < (${after.createdAt}::timestamptz, ${after.id}::uuid)` : sql``;
  return rows<MemoryRow>(db, sql`SELECT ${COLUMNS} FROM memories m WHERE ${scope} ${cursor} ORDER BY m.created_at DESC, m.id DESC LIMIT ${limit}`);
}

export function linksOf(db: DbOrTx, tenantId: string, id: string) {
  return rows<{ source_id: string; target_id: string; relation: string; weight: number }>(
    db,
    sql`SELECT source_id, target_id, relation, weight FROM memory_edges
        WHERE tenant_id = ${tenantId} AND (source_id = ${id}::uuid OR target_id = ${id}::uuid)`,
  );
}

export async function embeddingOf(db: DbOrTx, tenantId: string, id: string): Promise<number[]> {
  const [row] = await rows<{ embedding: string }>(db, sql`SELECT embedding::text AS embedding FROM memories WHERE id = ${id}::uuid AND tenant_id = ${tenantId}`);
  return JSON.parse(row.embedding) as number[];
}

export async function tierOf(db: DbOrTx, tenantId: string): Promise<Tier> {
  const [t] = await rows<{ tier: Tier }>(db, sql`SELECT tier FROM tenants WHERE id = ${tenantId}`);
  return t.tier;
}

/** A live space and who owns it (the caller compares the owner). */
export async function spaceOf(db: DbOrTx, spaceId: string) {
  const [space] = await rows<{ owner_tenant_id: string; allowed_agent_ids: string[] }>(
    db,
    sql`SELECT owner_tenant_id, allowed_agent_ids FROM context_spaces WHERE id = ${spaceId}::uuid AND deleted_at IS NULL`,
  );
  return space ?? null;
}

// --- store ---------------------------------------------------------------------------------

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
}

const contentLocks = (keys: string[]) =>
  sql`SELECT count(pg_advisory_xact_lock(hashtextextended(k, 0))) AS n FROM (SELECT k FROM ${rowsOf([...keys].sort(), 'text', 'k')} ORDER BY 1) keys`;

/** The current duplicates of one group: its hashes among the live, unsuperseded memories of its scope and space. */
const duplicatesOf = (g: { scope: TenantScope; hashes: string[]; spaceId: string | null }, now: Date) =>
  sql`${g.scope} AND ${inList(sql`m.content_hash`, g.hashes, 'text')} AND m.space_id IS NOT DISTINCT FROM ${g.spaceId}::uuid
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
 */
export async function probeStores(
  tx: DbOrTx,
  groups: ProbeGroup[],
  owners: string[],
  locks: { keys: string[]; first: boolean },
  now: Date,
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
  const [row] = await preparedRows<Record<string, unknown>>(tx, sql`WITH ${sql.join(ctes, sql`, `)} SELECT ${sql.join(cols, sql`, `)}`);
  const json = <T>(v: unknown): T => (typeof v === 'string' ? JSON.parse(v) : v) as T;
  const probe: StoreProbe = { duplicates: new Map(), entities: new Map(), quotaUsed: new Map(), webhooks: new Map() };
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
export async function linkNeighbours(
  tx: Tx,
  storage: StorageKind,
  probes: LinkProbe[],
  limit: number,
  now: Date,
  opts: { withNext?: boolean } = {},
): Promise<Map<number, { id: string; similarity: number }[]>> {
  const out = new Map<number, { id: string; similarity: number }[]>();
  if (!probes.length) return out;
  const keepPlan = probes.length === 1 && probes[0].wholeStoreOf !== null && keepsVectorPlans(storage, limit);
  const nearest = probes.map((p) => {
    const exclude = p.excludeIds.length ? sql`AND m.id <> ALL(${pgArray(p.excludeIds)}::uuid[])` : sql``;
    const where = sql`${p.scope} AND m.superseded_by IS NULL AND ${live(now)} ${exclude}`;
    const found = keepPlan ? nearestInTenant(sql`m.id`, where, p.vector, { limit }, p.wholeStoreOf!) : nearestMemories(sql`m.id`, where, p.vector, { limit });
    return sql`(SELECT ${p.index}::int AS i, x.id, x.similarity FROM (${found}) x)`;
  });
  const statement = sql.join(nearest, sql` UNION ALL `);
  type Neighbour = { i: number; id: string; similarity: number | string };
  const found = opts.withNext
    ? preparedRowsWithNext<Neighbour>(tx, statement, { planEachTime: !keepPlan })
    : keepPlan
      ? preparedRows<Neighbour>(tx, statement)
      : rows<Neighbour>(tx, statement);
  for (const x of await found) {
    out.set(x.i, [...(out.get(x.i) ?? []), { id: x.id, similarity: Number(x.similarity) }]);
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
  seen: { scope: TenantScope; hashes: string[]; spaceId: string | null; ids: string[] }[],
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
  const unseen = seen.map(
    (g) => sql`EXISTS (SELECT 1 FROM memories m WHERE ${duplicatesOf(g, now)} AND m.id <> ALL(${pgArray(g.ids)}::uuid[]))`,
  );
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
  }));
  ctes.push(sql`stored AS (
    INSERT INTO memories (id, tenant_id, observation, tags, importance, confidence, context, agent_id, space_id,
                          content_hash, embedding, expires_at, superseded_by, version, created_at, updated_at)
    SELECT r.id, r.tenant_id, r.observation, r.tags, r.importance, 1, r.context, r.agent_id, r.space_id,
           r.content_hash, r.embedding::vector, r.expires_at, r.superseded_by, r.version, ${at}, ${at}
    FROM jsonb_to_recordset(${JSON.stringify(rowsJson)}::jsonb) AS r(
      id uuid, tenant_id text, observation text, tags text[], importance int, context text, agent_id text, space_id uuid,
      content_hash text, embedding text, expires_at timestamptz, superseded_by uuid, version int))`);
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
  ctes.push(insertedEventsCte(events));
  return preparedRowsWithNext(tx, sql`WITH ${sql.join(ctes, sql`, `)}, ${maintainIntervals}
    SELECT CASE WHEN ${unseen.length ? sql.join(unseen, sql` OR `) : sql`false`} THEN engram_retry(${UNSEEN_DUPLICATE}) ELSE true END AS ok`);
}

const UNSEEN_DUPLICATE = 'a duplicate was stored concurrently';
/** insertStores failed because a store of the same text committed while the probe waited for its content lock. */
export const isUnseenDuplicate = (err: unknown) => {
  const e = pgError(err);
  return e?.code === '40001' && e.message === UNSEEN_DUPLICATE;
};

/** The per-tenant rows of a store, for one owner. */
export interface StoreTail {
  owner: string;
  tier: Tier;
  audits: AuditInput[];
  /** Memories created or changed (create and update events): the anomaly window's count. */
  rapidWrites: number;
  /** The stream events, as stored (their ids name the webhook deliveries enqueued before the tail). */
  events: EventPayload[];
}

/**
 * Last statement of a store: per owner, the memories quota (counted with its ceiling), the live
 * count, the audit entries on the chain head, the stream events with their seqs from the same head
 * update, and the first_memory milestone. A quota ceiling passed since the probe read it raises
 * 40001 (the store runs again). `last`: run as the transaction's last statement (`work.lastStatement`).
 * Answers the anomaly window's count per owner.
 */
export async function storeTail(
  tx: DbOrTx,
  tails: StoreTail[],
  now: Date,
  last?: <T>(build: (commitsWithIt: boolean) => SQL) => Promise<T[]>,
): Promise<{ rapidWrites: Map<string, number> } | null> {
  const ctes: SQL[] = [];
  const cols: SQL[] = [];
  const checks: SQL[] = [];
  const crossings: SQL[] = [];
  const ordered = [...tails].sort((a, b) => (a.owner < b.owner ? -1 : 1));
  for (const [i, t] of ordered.entries()) {
    const n = `t${i}`;
    const head = sql.raw(`${n}_head`);
    const count = t.audits.length;
    const limit = tiers[t.tier].limits.memories;
    // The chain head first; the counters read from it, so they are locked after it, in the order
    // every other write takes them (head, then counters): no deadlock with a concurrent update.
    ctes.push(...chainSql(n, t.owner, t.audits.map(auditRow), t.events.length));
    ctes.push(streamEventsSql(n, t.owner, `${n}_head`, t.events));
    ctes.push(sql`${sql.raw(n)}_quota AS (${quotaUpsertSql(t.owner, 'memories', now, count, limit, head)})`);
    ctes.push(sql`${sql.raw(n)}_live AS (${liveMemoriesSql(t.owner, count, head)})`);
    ctes.push(sql`${sql.raw(n)}_rapid AS (${anomalyCounterSql(t.owner, 'rapid_writes', now, t.rapidWrites, head)})`);
    ctes.push(sql`${sql.raw(n)}_milestone AS (${milestoneInsert(t.owner, 'first_memory', now, { memory_id: (t.events[0].data.memory as MemoryDto).uuid })})`);
    checks.push(sql`(SELECT count(*) FROM ${sql.raw(n)}_quota) > 0`);
    cols.push(sql`(SELECT value FROM ${sql.raw(n)}_rapid) AS ${sql.raw(n)}_rapid`);
    const rapid = sql`(SELECT value FROM ${sql.raw(n)}_rapid)`;
    crossings.push(sql`(${rapid} - ${t.rapidWrites}::bigint < ${RAPID_WRITES}::bigint AND ${rapid} >= ${RAPID_WRITES}::bigint)`);
  }
  // A quota ceiling passed since the probe: the store runs again from the new count. A statement
  // that commits with it cannot leave the anomaly its count reached to the caller: that store runs
  // again without committing with it, and records the anomaly in its transaction.
  const statement = (commitsWithIt: boolean) => sql`WITH RECURSIVE ${sql.join(ctes, sql`, `)}
    SELECT CASE WHEN NOT (${sql.join(checks, sql` AND `)}) THEN engram_retry('memory quota moved while storing')
                WHEN ${commitsWithIt}::boolean AND (${sql.join(crossings, sql` OR `)}) THEN engram_retry('an anomaly threshold was reached')
                ELSE true END AS ok,
           ${sql.join(cols, sql`, `)}`;
  const [row] = last ? await last<Record<string, unknown>>(statement) : await preparedRows<Record<string, unknown>>(tx, statement(false));
  if (!row.ok) return null;
  for (const t of ordered) markUsageChanged(tx, t.owner);
  return { rapidWrites: new Map(ordered.map((t, i) => [t.owner, Number(row[`t${i}_rapid`])])) };
}

export const enqueueWebhookDelivery = enqueueDelivery;

// --- update and delete -------------------------------------------------------------------------

/** Applies `sets` only if the row is still at `version` (optimistic concurrency); null when it moved on. */
export async function updateIfVersion(tx: DbOrTx, tenantId: string, id: string, version: number, sets: SQL[]) {
  const [row] = await rows<MemoryRow & { embedding_text: string }>(
    tx,
    sql`UPDATE memories m SET ${sql.join(sets, sql`, `)}
        WHERE m.id = ${id}::uuid AND m.tenant_id = ${tenantId} AND m.version = ${version}
        RETURNING ${COLUMNS}, m.embedding::text AS embedding_text`,
  );
  return row ?? null;
}

export async function deleteMemory(tx: DbOrTx, tenantId: string, id: string) {
  await tx.execute(sql`DELETE FROM memories WHERE id = ${id}::uuid AND tenant_id = ${tenantId}`);
}

/** Memories that `id` superseded become current again. */
export function reviveSupersededBy(tx: DbOrTx, tenantId: string, id: string, now: Date) {
  return rows<MemoryRow>(
    tx,
    sql`UPDATE memories m SET superseded_by = NULL, version = m.version + 1, updated_at = ${now.toISOString()}
        WHERE m.tenant_id = ${tenantId} AND m.superseded_by = ${id}::uuid RETURNING ${COLUMNS}`,
  );
}

// --- search ------------------------------------------------------------------------------------

type Candidate = MemoryRow & { similarity?: number; text_rank?: number; bm25?: number; stats_parts?: number | string };
export type { Candidate };

/**
 * A candidate of a ranked search: what ranking needs (identity, owner, agent, space, age) and its
 * list's score. The few hits answered are read whole afterwards (recallAndFetch), so the lists and
 * the neighbour walk (160 rows or so for a hybrid search) carry no text, tags or counts.
 */
export type Ranked = Pick<MemoryRow, 'id' | 'tenant_id' | 'agent_id' | 'space_id' | 'created_at'> & {
  similarity?: number;
  text_rank?: number;
  bm25?: number;
  stats_parts?: number | string;
};
const RANKED = sql.raw('m.id, m.tenant_id, m.agent_id, m.space_id, m.created_at');

/** Candidates of one list, and the caller's grants when asked for (see withGrants). */
export interface CandidateList {
  rows: Ranked[];
  grants?: Grant[];
}

/**
 * `found` (a candidate query) with the caller's grants read in the same statement: one row more
 * (nulls) when nothing was found, so the grants always come back. A search over everything the
 * caller may read starts with its own store and learns in the same round trip whether it has
 * grants at all (most tenants have none).
 */
function withGrants(reader: GrantReader | null, found: SQL, order: SQL): SQL {
  if (!reader) return found;
  return sql`WITH grants AS (SELECT ${grantsJson(reader)} AS list), found AS (${found})
             SELECT g.list AS grants_json, f.* FROM grants g LEFT JOIN found f ON true ORDER BY ${order}`;
}

function listOf(found: (Ranked & { grants_json?: unknown })[], withGrantsOf: GrantReader | null): CandidateList {
  if (!withGrantsOf) return { rows: found };
  return { rows: found.filter((r) => r.id !== null), grants: grantsFromJson(found[0].grants_json) };
}

/**
 * Nearest neighbours by cosine. The HNSW index serves the ORDER BY; iterative scans (pgvector 0.8)
 * keep reading the index until enough rows pass the tenant and tag filters. `grantsOf`: read that
 * tenant's grants in the same statement. `wholeStoreOf`: `scope` is that tenant's whole store (no
 * filter, no grants), searched where plans are kept by a statement that keeps its plan (nearestInTenant).
 */
export async function semanticCandidates(
  db: DbOrTx,
  storage: StorageKind,
  scope: TenantScope,
  vector: string,
  n: number,
  grantsOf: GrantReader | null = null,
  wholeStoreOf: string | null = null,
): Promise<CandidateList> {
  const keepPlan = wholeStoreOf !== null && keepsVectorPlans(storage, n);
  const nearest = keepPlan ? nearestInTenant(RANKED, scope, vector, { limit: n }, wholeStoreOf) : nearestMemories(RANKED, scope, vector, { limit: n });
  const query = withGrants(grantsOf, nearest, sql`f.distance, f.id`);
  return listOf(await vectorRead<Ranked>(db, storage, n, query, { keepPlan }), grantsOf);
}

/**
 * BM25 parameters. k1 0.9 / b 0.4 (the Anserini defaults) over 1.2 / 0.75: on LoCoMo (7
 * conversations, offline USE) hybrid recall@10 +0.012; short memories need less length normalisation.
 */
const BM25_K1 = 0.9;
const BM25_B = 0.4;

/**
 * Where a BM25 query's postings and collection statistics come from. `tenant`: a search over the
 * tenant's own whole store reads the postings of its words (memory_postings) and the running totals
 * (memory_corpus_stats), both kept by triggers in the writing transaction: no memory row is touched
 * until the winners are fetched. `scope`: a filtered or shared search counts over the rows it
 * searches (GIN index on search_tsv), whose collection is what the filter leaves (inverse document
 * frequencies relative to it rank better: a tag-filtered LoCoMo search with whole-store statistics
 * lost 0.02-0.04 recall@10).
 */
export type CorpusSource = { kind: 'tenant'; tenantId: string } | { kind: 'scope' };

const queryLexemes = (text: string) => sql`SELECT DISTINCT unnest(tsvector_to_array(to_tsvector('english', ${text}))) AS lex`;

/** Okapi BM25 of one term of a document: `t.tf`, `t.len`, the term's document frequency `df` and collection size `n`, `corpus.avg_len`. */
const bm25Term = (df: SQL, n: SQL) => {
  const k1 = sql.raw(String(BM25_K1));
  const b = sql.raw(String(BM25_B));
  return sql`ln(1 + (${n} - ${df} + 0.5) / (${df} + 0.5)) * t.tf * (${k1} + 1) / (t.tf + ${k1} * (1 - ${b} + ${b} * t.len / greatest(corpus.avg_len, 1)))`;
};

/**
 * Full-text candidates ranked by Okapi BM25 over the stemmed lexemes of the generated tsvector.
 * Any query word may match. Postgres' ts_rank has no inverse document frequency, which costs a lot
 * of recall on chat-like data. `bm25` is the raw score; `text_rank` maps it into [0,1) by
 * 1 - exp(-bm25 / 10). No cosine: the query's embedding may not exist yet (see recallAndSimilarities).
 * Equal scores: the newer memory first (ids are UUIDv7).
 */
export async function keywordCandidates(
  db: DbOrTx,
  scope: TenantScope,
  text: string,
  n: number,
  source: CorpusSource = { kind: 'scope' },
  grantsOf: GrantReader | null = null,
): Promise<CandidateList> {
  if (source.kind === 'scope') return listOf(await rows<Ranked>(db, withGrants(grantsOf, fromScope(scope, text, n), KEYWORD_ORDER)), grantsOf);
  // Over the whole store every step is an index lookup whatever the tenant or the words, so the
  // statement keeps its plan (prepared once per connection; planning it cost more than running it).
  return listOf(await preparedRows<Ranked>(db, withGrants(grantsOf, fromPostings(scope, text, n, source.tenantId), KEYWORD_ORDER)), grantsOf);
}

/**
 * Whole store: the words' postings (one index range each), document frequencies over them, the
 * scores, then memory rows in score order until `n` pass the scope (superseded and expired ones
 * hold postings too and are skipped here).
 */
const KEYWORD_ORDER = sql`f.bm25 DESC, f.id DESC`;

function fromPostings(scope: TenantScope, text: string, n: number, tenantId: string): SQL {
  // float8 throughout: sums of bigints are numeric, and numeric arithmetic over thousands of
  // postings costs more than reading them.
  return sql`WITH lexemes AS (${queryLexemes(text)}),
      t AS MATERIALIZED (
        SELECT p.lexeme, p.memory_id, p.tf::float8 AS tf, p.len::float8 AS len FROM memory_postings p
        WHERE p.tenant_id = ${tenantId} AND p.lexeme = ANY (ARRAY(SELECT lex FROM lexemes))
      ),
      df AS (SELECT lexeme, count(*)::float8 AS df FROM t GROUP BY lexeme),
      corpus AS (
        SELECT greatest(sum(s.docs)::float8, (SELECT max(df) FROM df), 0) AS n,
               coalesce(sum(s.lexemes)::float8 / nullif(sum(s.docs), 0), 1) AS avg_len, count(*) AS parts
        FROM memory_corpus_stats s WHERE s.tenant_id = ${tenantId}
      ),
      scored AS (
        SELECT t.memory_id AS id, sum(${bm25Term(sql`df.df`, sql`corpus.n`)}) AS bm25 FROM t JOIN df USING (lexeme), corpus GROUP BY t.memory_id
      )
      SELECT ${RANKED}, s.bm25, 1 - exp(-s.bm25 / 10) AS text_rank, (SELECT parts FROM corpus) AS stats_parts
      FROM (SELECT * FROM scored ORDER BY bm25 DESC, id DESC) s
      JOIN memories m ON m.id = s.id AND ${scope}
      ORDER BY s.bm25 DESC, s.id DESC LIMIT ${n}`;
}

/**
 * Filtered or shared: the GIN index finds the matching rows; statistics are counted over the scope.
 * The query's tsquery and the scope's statistics are computed once whatever the join order (an
 * InitPlan, a materialized CTE): for a tenant estimated at a row, the planner once computed the
 * tsquery again for every row it scanned.
 */
function fromScope(scope: TenantScope, text: string, n: number): SQL {
  return sql`WITH lexemes AS (${queryLexemes(text)}),
      query AS (SELECT to_tsquery('simple', string_agg(quote_literal(lex), ' | ')) AS tsq FROM lexemes),
      matched AS (
        SELECT m.id, m.search_tsv, length(m.search_tsv) AS len FROM memories m
        WHERE m.search_tsv @@ (SELECT tsq FROM query) AND ${scope}
      ),
      corpus AS MATERIALIZED (
        SELECT greatest(c.n, (SELECT count(*) FROM matched))::float8 AS n, coalesce(c.avg_len, 1)::float8 AS avg_len, 0 AS parts
        FROM (SELECT count(*) AS n, avg(length(m.search_tsv)) AS avg_len FROM memories m WHERE ${scope}) c
      ),
      t AS (
        SELECT d.id, d.len::float8 AS len, u.lexeme, coalesce(array_length(u.positions, 1), 1)::float8 AS tf
        FROM matched d, unnest(d.search_tsv) u WHERE u.lexeme IN (SELECT lex FROM lexemes)
      ),
      df AS (SELECT lexeme, count(*)::float8 AS df FROM t GROUP BY lexeme),
      scored AS (
        SELECT t.id, sum(${bm25Term(sql`df.df`, sql`corpus.n`)}) AS bm25 FROM t JOIN df USING (lexeme), corpus
        GROUP BY t.id ORDER BY bm25 DESC, t.id DESC LIMIT ${n}
      )
      SELECT ${RANKED}, s.bm25, 1 - exp(-s.bm25 / 10) AS text_rank, 0 AS stats_parts
      FROM scored s JOIN memories m ON m.id = s.id
      ORDER BY s.bm25 DESC, s.id DESC LIMIT ${n}`;
}

/** How many delta rows of a tenant's corpus statistics a search tolerates before folding them. */
export const CORPUS_STATS_FOLD_AT = 64;

/**
 * Folds a tenant's corpus-statistics deltas into one row. Concurrent folds each delete a disjoint
 * set of rows (a deleted row is skipped by the other) and insert its sum; writes that commit
 * meanwhile add rows this fold did not see. Either way the sums stay exact.
 */
export async function foldCorpusStats(db: DbOrTx, tenantId: string) {
  await db.execute(sql`
    WITH gone AS (DELETE FROM memory_corpus_stats WHERE tenant_id = ${tenantId} RETURNING docs, lexemes)
    INSERT INTO memory_corpus_stats (tenant_id, docs, lexemes)
    SELECT ${tenantId}, sum(docs), sum(lexemes) FROM gone HAVING count(*) > 0`);
}

/**
 * Up to `window` memories on each side of every hit in the order they were stored: same owner,
 * agent and space, at most `gapMinutes` apart, inside `scope` (so a filter still holds). A memory
 * stored next to a strong hit is often the rest of the same exchange (a question and its answer, a
 * plan and its outcome). `distance` is 1 for the adjacent memory. With `vector`, each carries its
 * cosine to it (`similarity`): whether a neighbour matches the query by itself is judged on its own
 * cosine, which a neighbour outside the semantic candidates has no other way to show (hybrid.ts).
 */
export function neighbours(db: DbOrTx, storage: StorageKind, scope: TenantScope, hitIds: string[], window: number, gapMinutes: number, vector?: string) {
  const cosine = vector ? sql`, 1 - (m.embedding <=> ${vector}::vector) AS similarity` : sql``;
  const side = (before: boolean) => {
    const order = before ? sql`m.created_at DESC, m.id DESC` : sql`m.created_at, m.id`;
    const near = before
      ? sql`(m.created_at, m.id) < (h.created_at, h.id) AND m.created_at >= h.created_at - make_interval(mins => ${gapMinutes})`
      : sql`(m.created_at, m.id) > (h.created_at, h.id) AND m.created_at <= h.created_at + make_interval(mins => ${gapMinutes})`;
    return sql`(
      SELECT ${RANKED}${cosine}, row_number() OVER (ORDER BY ${order}) AS distance FROM memories m
      WHERE ${scope} AND m.tenant_id = h.tenant_id AND m.agent_id IS NOT DISTINCT FROM h.agent_id
        AND m.space_id IS NOT DISTINCT FROM h.space_id AND ${near}
      ORDER BY ${order} LIMIT ${window})`;
  };
  // Each side is a walk along memories_tenant_created_idx that stops after `window` rows. The planner
  // cannot know the filters keep most rows, so it would rather fetch the whole gap with a bitmap scan
  // and sort it (40x slower at 100k memories), and the cost it then estimates would have Postgres
  // JIT-compile the query (50 ms for a query that runs in 1 ms). The read is told not to do either.
  return readWithSettings<Ranked & { hit_id: string; distance: number }>(
    db,
    storage,
    { enable_bitmapscan: 'off', enable_seqscan: 'off', jit: 'off' },
    sql`SELECT n.*, h.id AS hit_id
        FROM memories h CROSS JOIN LATERAL (${side(true)} UNION ALL ${side(false)}) n
        WHERE h.id = ANY(${pgArray(hitIds)}::uuid[])`,
  );
}

interface Recaller {
  actor: string | null;
  requestId: string | null;
  now: Date;
}
interface RecallDetail {
  query: string;
  mode: string;
}

/**
 * The recall bookkeeping of a search as parts of a data-modifying WITH: counts of the caller's
 * memories among `ids` (a uuid[] expression), a recall event each, the first_search milestone; none
 * of it unless `when` holds. The rows are found by primary key alone (the MATERIALIZED fence), and
 * only then checked for the tenant: with the tenant in the same WHERE, a planner whose statistics
 * have not caught up with a growing tenant takes it for a few rows and walks all of them instead.
 */
function recallWrites(tenantId: string, ids: SQL, who: Recaller, detail: RecallDetail, when: SQL = sql`true`): SQL {
  const at = who.now.toISOString();
  return sql`
    picked AS MATERIALIZED (SELECT id, tenant_id FROM memories WHERE id = ANY(${ids})),
    recalled AS (
      UPDATE memories m SET recall_count = m.recall_count + 1, last_recalled_at = ${at}
      FROM picked p WHERE m.id = p.id AND p.tenant_id = ${tenantId} AND ${when}
      RETURNING m.id),
    events AS (
      INSERT INTO memory_events (tenant_id, memory_id, kind, at, actor, request_id, metadata)
      SELECT ${tenantId}, id, 'recall', ${at}, ${who.actor}, ${who.requestId}, ${JSON.stringify(detail)}::jsonb
      FROM recalled),
    milestone AS (${milestoneInsert(tenantId, 'first_search', who.now, { mode: detail.mode }, when)})`;
}

/**
 * What a ranked search does once it has its hits, in one statement (one round trip, atomic): the
 * recall bookkeeping of the caller's own hits (`own`), and the hits' whole rows with the cosine of
 * the query `vector` (found by primary key, then checked against `scope`; a hit deleted meanwhile
 * is missing). The rows are as they were before this statement's recall counts.
 */
export async function recallAndFetch(
  db: DbOrTx,
  tenantId: string,
  own: string[],
  hits: { scope: TenantScope; ids: string[]; vector: string },
  who: Recaller,
  detail: RecallDetail,
): Promise<Map<string, Candidate>> {
  const found = await preparedRows<Candidate>(
    db,
    sql`WITH ${recallWrites(tenantId, sql`${pgArray(own)}::uuid[]`, who, detail)},
        unscoped AS MATERIALIZED (SELECT * FROM memories WHERE id = ANY(${pgArray(hits.ids)}::uuid[]))
        SELECT ${COLUMNS}, 1 - (m.embedding <=> ${hits.vector}::vector) AS similarity FROM unscoped m WHERE ${hits.scope}`,
  );
  return new Map(found.map((r) => [r.id, r]));
}

/**
 * A plain semantic search (nearest first, nothing re-ranks) of the caller's own store and its
 * recall bookkeeping, in one statement: the `limit` nearest rows in `own`, and the recall counts of
 * those whose clamped similarity reaches `minScore`, which are exactly the hits the caller answers.
 * With `checkGrants` (scope `all`) the statement also asks whether the caller has grants; if it
 * has, it records nothing and says so, and the caller searches again with them. One round trip
 * where the general path takes three (grants, candidates, bookkeeping). A search of the whole store
 * (`page.wholeStore`: no tag, agent or space filter) keeps its plan where plans are kept
 * (vector-search.keepsVectorPlans, nearestInTenant); a filtered one is planned each time, for the
 * filter's statistics, and there it takes two statements in one message (filteredSemanticSearch).
 */
export async function plainSemanticSearch(
  db: DbOrTx,
  storage: StorageKind,
  tenantId: string,
  own: TenantScope,
  vector: string,
  page: { limit: number; minScore: number; checkGrants: GrantReader | false; wholeStore: boolean },
  who: Recaller,
  detail: RecallDetail,
): Promise<{ grantsExist: boolean; rows: Candidate[] }> {
  const keepPlan = keepsVectorPlans(storage, page.limit);
  if (keepPlan && !page.wholeStore) return filteredSemanticSearch(db, tenantId, own, vector, page, who, detail);
  const nearest = keepPlan ? nearestInTenant(COLUMNS, own, vector, { limit: page.limit }, tenantId) : nearestMemories(COLUMNS, own, vector, { limit: page.limit });
  const hits = sql`ARRAY(SELECT f.id FROM found f WHERE greatest(0, least(1, f.similarity)) >= ${page.minScore}::float8)`;
  const found = await vectorRead<Candidate & { grants_exist: boolean }>(
    db,
    storage,
    page.limit,
    sql`WITH grants AS (SELECT ${page.checkGrants ? grantsExist(page.checkGrants) : sql`false`} AS exist),
        found AS (${nearest}),
        ${recallWrites(tenantId, hits, who, detail, sql`NOT (SELECT exist FROM grants)`)}
        SELECT g.exist AS grants_exist, f.* FROM grants g LEFT JOIN found f ON true ORDER BY f.distance, f.id`,
    { keepPlan },
  );
  return { grantsExist: found[0].grants_exist, rows: found.filter((r) => r.id !== null) };
}

/**
 * plainSemanticSearch with a filter, where plans are kept: the nearest rows' ids and similarities,
 * in a statement planned each time (the filter's statistics choose the tag's index, the graph or the
 * tenant's rows) and small enough that planning it is cheap, kept for the transaction as the setting
 * `engram.near`; then the grants, the recall bookkeeping and the rows themselves in a statement
 * whose plan is kept (it reads by primary key and takes the ids from that setting). In one
 * statement, parsing and planning the bookkeeping with the search cost more than a round trip; as
 * two statements in one message (the first waits for the second: db.preparedRowsWithNext), neither
 * is paid. A row changed between the two (deleted, or out of the filter) is left out, and not recalled.
 */
async function filteredSemanticSearch(
  db: DbOrTx,
  tenantId: string,
  own: TenantScope,
  vector: string,
  page: { limit: number; minScore: number; checkGrants: GrantReader | false },
  who: Recaller,
  detail: RecallDetail,
): Promise<{ grantsExist: boolean; rows: Candidate[] }> {
  const nearest = nearestMemories(sql`m.id`, own, vector, { limit: page.limit });
  const keep = sql`SELECT set_config('engram.near', coalesce((SELECT jsonb_agg(jsonb_build_array(n.id, n.similarity::text)) FROM (${nearest}) n), '[]')::text, true)`;
  const statement = sql`WITH near AS MATERIALIZED (
          SELECT (e->>0)::uuid AS id, (e->>1)::float8 AS similarity FROM jsonb_array_elements(current_setting('engram.near')::jsonb) e),
        grants AS (SELECT ${page.checkGrants ? grantsExist(page.checkGrants) : sql`false`} AS exist),
        unscoped AS MATERIALIZED (SELECT * FROM memories WHERE id = ANY(ARRAY(SELECT id FROM near))),
        found AS MATERIALIZED (SELECT ${COLUMNS} FROM unscoped m WHERE ${own}),
        ${recallWrites(tenantId, sql`ARRAY(SELECT f.id FROM found f JOIN near n ON n.id = f.id WHERE greatest(0, least(1, n.similarity)) >= ${page.minScore}::float8)`, who, detail, sql`NOT (SELECT exist FROM grants)`)}
        SELECT g.exist AS grants_exist, f.*, n.similarity FROM grants g LEFT JOIN found f ON true LEFT JOIN near n ON n.id = f.id`;
  type Found = MemoryRow & { grants_exist: boolean; similarity: number | string };
  const found = await db.transaction(async (tx) => {
    // Connections whose session is ready for the search (node-postgres) need no settings first.
    if (!sessionsSearch(db, page.limit)) await vectorSearchSettings(tx, page.limit);
    const kept = preparedRowsWithNext(tx, keep, { planEachTime: true });
    const answered = (await rowsAndCommit<Found>(tx, statement)) ?? (await preparedRows<Found>(tx, statement));
    await kept;
    return answered;
  });
  const rows = found.filter((r) => r.id !== null).map((r) => ({ ...r, similarity: Number(r.similarity) }));
  rows.sort((a, b) => b.similarity - a.similarity || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  return { grantsExist: found[0].grants_exist, rows };
}

// --- context and maintenance -------------------------------------------------------------------

export function recentMemories(db: DbOrTx, tenantId: string, now: Date, limit: number) {
  return rows<MemoryRow>(
    db,
    sql`SELECT ${COLUMNS} FROM memories m WHERE m.tenant_id = ${tenantId} AND ${live(now)} ORDER BY m.created_at DESC, m.id DESC LIMIT ${limit}`,
  );
}

export async function countCreatedSince(db: DbOrTx, tenantId: string, since: Date, now: Date): Promise<number> {
  const [{ n }] = await rows<{ n: string | number }>(
    db,
    sql`SELECT count(*) AS n FROM memories m WHERE m.tenant_id = ${tenantId} AND ${live(now)} AND m.created_at > ${since.toISOString()}`,
  );
  return Number(n);
}

export async function lastEventAt(db: DbOrTx, tenantId: string): Promise<Date | null> {
  const [last] = await rows<{ at: Date | string }>(db, sql`SELECT at FROM memory_events WHERE tenant_id = ${tenantId} ORDER BY at DESC, id DESC LIMIT 1`);
  return last ? new Date(last.at) : null;
}

/** Memories whose TTL has passed, any tenant's (maintenance), locked and skipped by concurrent purges. */
export function lockExpired(tx: DbOrTx, now: Date, limit: number) {
  return rows<MemoryRow & { embedding_text: string }>(
    tx,
    sql`SELECT ${COLUMNS}, m.embedding::text AS embedding_text FROM memories m
        WHERE m.expires_at <= ${now.toISOString()}
        ORDER BY m.expires_at LIMIT ${limit} FOR UPDATE SKIP LOCKED`,
  );
}

export async function deleteMemories(tx: DbOrTx, tenantId: string, ids: string[]) {
  await tx.execute(sql`DELETE FROM memories WHERE tenant_id = ${tenantId} AND id = ANY(${pgArray(ids)}::uuid[])`);
}
