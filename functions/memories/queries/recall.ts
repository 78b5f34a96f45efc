import { type SQL } from 'drizzle-orm';
import { sql } from '../../../shared/platform/data/db';
import { type GrantReader, grantsExist, type TenantScope } from '../../../shared/memory/access';
import { HIT_COLUMNS, type HitRow } from '../../../shared/memory/rows';
import { keepsVectorPlans, nearestInTenant, nearestMemories, sessionsSearch, vectorRead, vectorSearchSettings } from '../../../shared/memory/vector-search';
import { type DbOrTx, pgArray, preparedRows, preparedRowsWithNext, rowsAndCommit, type StorageKind } from '../../../shared/platform/data/db';
import { milestoneInsert } from '../../../shared/platform/data/milestones';
import type { Candidate } from './search';

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
        SELECT ${HIT_COLUMNS}, 1 - (m.embedding <=> ${hits.vector}::live_vector) AS similarity FROM unscoped m WHERE ${hits.scope}`,
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
  const nearest = keepPlan
    ? nearestInTenant(HIT_COLUMNS, own, vector, { limit: page.limit }, tenantId)
    : nearestMemories(HIT_COLUMNS, own, vector, { limit: page.limit });
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
        found AS MATERIALIZED (SELECT ${HIT_COLUMNS} FROM unscoped m WHERE ${own}),
        ${recallWrites(tenantId, sql`ARRAY(SELECT f.id FROM found f JOIN near n ON n.id = f.id WHERE greatest(0, least(1, n.similarity)) >= ${page.minScore}::float8)`, who, detail, sql`NOT (SELECT exist FROM grants)`)}
        SELECT g.exist AS grants_exist, f.*, n.similarity FROM grants g LEFT JOIN found f ON true LEFT JOIN near n ON n.id = f.id`;
  type Found = HitRow & { grants_exist: boolean; similarity: number | string };
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
