import { type SQL, sql } from 'drizzle-orm';
import { v7 as uuidv7 } from 'uuid';
import { type Grant, live, narrow, readableBy, type Scope, type TenantScope } from '../../shared/memory/access';
import { COLUMNS, type MemoryRow, vectorLiteral } from '../../shared/memory/rows';
import { nearestMemories, vectorSearchSettings } from '../../shared/memory/vector-search';
import { type DbOrTx, pgArray, rows } from '../../shared/platform/db';
import { milestoneInsert } from '../../shared/platform/milestones';
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

/** Live, current memories in `scope` with this content in this space, locked (duplicates of a store). */
export function lockDuplicates(tx: DbOrTx, scope: TenantScope, hash: string, spaceId: string | null, now: Date) {
  return rows<{ id: string }>(
    tx,
    sql`SELECT m.id FROM memories m
        WHERE ${scope} AND m.content_hash = ${hash} AND m.space_id IS NOT DISTINCT FROM ${spaceId}::uuid
          AND m.superseded_by IS NULL AND ${live(now)}
        FOR UPDATE`,
  );
}

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

export async function insertMemory(tx: DbOrTx, m: NewMemory, now: Date): Promise<MemoryRow> {
  const [row] = await rows<MemoryRow>(
    tx,
    sql`INSERT INTO memories AS m (id, tenant_id, observation, tags, importance, confidence, context, agent_id, space_id,
                                   content_hash, embedding, expires_at, created_at, updated_at)
        VALUES (${m.id}::uuid, ${m.owner}, ${m.observation}, ${pgArray(m.tags)}::text[], ${m.importance}, 1, ${m.context},
                ${m.agentId}, ${m.spaceId}::uuid, ${m.hash}, ${vectorLiteral(m.embedding)}::vector,
                ${m.expiresAt?.toISOString() ?? null}, ${now.toISOString()}, ${now.toISOString()})
        RETURNING ${COLUMNS}`,
  );
  return row;
}

export function supersede(tx: DbOrTx, tenantId: string, ids: string[], by: string, now: Date) {
  return rows<MemoryRow>(
    tx,
    sql`UPDATE memories m SET superseded_by = ${by}::uuid, version = m.version + 1, updated_at = ${now.toISOString()}
        WHERE m.tenant_id = ${tenantId} AND m.id = ANY(${pgArray(ids)}::uuid[]) RETURNING ${COLUMNS}`,
  );
}

/** The nearest live, current memories in `scope` other than `id` (auto-link candidates). */
export function nearestInScope(tx: DbOrTx, scope: TenantScope, id: string, embedding: number[], limit: number, now: Date) {
  const where = sql`${scope} AND m.id <> ${id}::uuid AND m.superseded_by IS NULL AND ${live(now)}`;
  return rows<{ id: string; similarity: number }>(tx, nearestMemories(sql`m.id`, where, vectorLiteral(embedding), { limit }));
}

export async function insertLinks(tx: DbOrTx, tenantId: string, sourceId: string, targets: { id: string; similarity: number }[], now: Date) {
  for (const t of targets) {
    await tx.execute(sql`
      INSERT INTO memory_edges (id, tenant_id, source_id, target_id, relation, weight, created_at)
      VALUES (${uuidv7()}::uuid, ${tenantId}, ${sourceId}::uuid, ${t.id}::uuid, 'similar', ${Number(t.similarity)}, ${now.toISOString()})
      ON CONFLICT DO NOTHING`);
  }
}

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

type Candidate = MemoryRow & { similarity: number; text_rank?: number };
export type { Candidate };

/**
 * Nearest neighbours by cosine. The HNSW index serves the ORDER BY; iterative scans (pgvector 0.8)
 * keep reading the index until enough rows pass the tenant and tag filters.
 */
export async function semanticCandidates(db: DbOrTx, scope: TenantScope, vector: string, n: number): Promise<Candidate[]> {
  return db.transaction(async (tx) => {
    await vectorSearchSettings(tx, n);
    return rows<Candidate>(tx, nearestMemories(COLUMNS, scope, vector, { limit: n }));
  });
}

const BM25_K1 = 1.2;
const BM25_B = 0.75;

/**
 * Full-text candidates ranked by Okapi BM25 over the stemmed lexemes of the generated tsvector.
 * Any query word may match (the GIN index finds the documents); document frequencies and the
 * average length come from the same filtered set, so a tenant's own vocabulary sets the weights.
 * Postgres' ts_rank has no inverse document frequency, which costs a lot of recall on chat-like
 * data. The raw score is mapped into [0,1) by 1 - exp(-score / 10).
 */
export function keywordCandidates(db: DbOrTx, scope: TenantScope, text: string, vector: string, n: number): Promise<Candidate[]> {
  return rows<Candidate>(
    db,
    sql`WITH lexemes AS (SELECT DISTINCT unnest(tsvector_to_array(to_tsvector('english', ${text}))) AS lex),
        query AS (SELECT to_tsquery('simple', string_agg(quote_literal(lex), ' | ')) AS tsq FROM lexemes),
        corpus AS (SELECT count(*) AS n, avg(length(m.search_tsv)) AS avg_len FROM memories m WHERE ${scope}),
        matched AS (
          SELECT m.id, m.search_tsv, length(m.search_tsv) AS len FROM memories m, query
          WHERE query.tsq IS NOT NULL AND m.search_tsv @@ query.tsq AND ${scope}
        ),
        terms AS (
          SELECT d.id, d.len, u.lexeme, coalesce(array_length(u.positions, 1), 1) AS tf
          FROM matched d, unnest(d.search_tsv) u WHERE u.lexeme IN (SELECT lex FROM lexemes)
        ),
        df AS (SELECT lexeme, count(*) AS df FROM terms GROUP BY lexeme),
        scored AS (
          SELECT t.id, sum(
                   ln(1 + (corpus.n - df.df + 0.5) / (df.df + 0.5))
                   * t.tf * ${sql.raw(String(BM25_K1 + 1))} / (t.tf + ${sql.raw(String(BM25_K1))} * (1 - ${sql.raw(String(BM25_B))} + ${sql.raw(String(BM25_B))} * t.len / greatest(corpus.avg_len, 1)))
                 ) AS bm25
          FROM terms t JOIN df USING (lexeme), corpus GROUP BY t.id
        )
        SELECT ${COLUMNS}, 1 - (m.embedding <=> ${vector}::vector) AS similarity, 1 - exp(-s.bm25 / 10) AS text_rank
        FROM scored s JOIN memories m ON m.id = s.id
        ORDER BY s.bm25 DESC, m.created_at DESC LIMIT ${n}`,
  );
}

/** Recall bookkeeping of a search in one statement (one round trip, atomic): counts, recall events, milestone. */
export async function recordRecalls(
  db: DbOrTx,
  tenantId: string,
  ids: string[],
  who: { actor: string | null; requestId: string | null; now: Date },
  detail: { query: string; mode: string },
) {
  const at = who.now.toISOString();
  await db.execute(sql`
    WITH recalled AS (
      UPDATE memories SET recall_count = recall_count + 1, last_recalled_at = ${at}
      WHERE tenant_id = ${tenantId} AND id = ANY(${pgArray(ids)}::uuid[])
      RETURNING id),
    events AS (
      INSERT INTO memory_events (tenant_id, memory_id, kind, at, actor, request_id, metadata)
      SELECT ${tenantId}, id, 'recall', ${at}, ${who.actor}, ${who.requestId}, ${JSON.stringify(detail)}::jsonb
      FROM recalled)
    ${milestoneInsert(tenantId, 'first_search', who.now, { mode: detail.mode })}`);
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
