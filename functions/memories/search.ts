import { type SQL, sql } from 'drizzle-orm';
import type { z } from '@hono/zod-openapi';
import type { Actor, AuthContext } from '../../shared/context';
import { type DbOrTx, pgArray, rows } from '../../shared/db';
import { embedAll } from '../../shared/embeddings';
import { activeGrants, parseUrn, toUrn } from '../../shared/memory-access';
import { recordMemoryEvents } from '../../shared/memory-events';
import { recordMilestone } from '../../shared/milestones';
import type { Services } from '../../shared/services';
import { requireFeature } from '../../shared/tiers';
import { DAY } from '../../shared/time';
import * as q from './queries';
import type { SearchQuery } from './schemas';

type Candidate = q.MemoryRow & { similarity: number; text_rank?: number };

const RRF_K = 60;
const clamp01 = (x: number) => Math.min(1, Math.max(0, x));

/** similarity × (0.85 + 0.015·importance) × (1 + 0.05·ln(1 + recall_count)), in [0,1]. */
export function matchConfidence(similarity: number, importance: number, recallCount: number): number {
  return clamp01(similarity * (0.85 + 0.015 * importance) * (1 + 0.05 * Math.log1p(recallCount)));
}

/**
 * Nearest neighbours by cosine. The HNSW index serves the ORDER BY; iterative scans (pgvector 0.8)
 * keep reading the index until enough rows pass the tenant and tag filters.
 */
async function semanticCandidates(db: DbOrTx, where: SQL, vector: string, n: number): Promise<Candidate[]> {
  return db.transaction(async (tx) => {
    await tx.execute(sql.raw(`SET LOCAL hnsw.ef_search = ${Math.max(40, Math.min(n, 1000))}`));
    await tx.execute(sql`SET LOCAL hnsw.iterative_scan = relaxed_order`);
    return rows<Candidate>(
      tx,
      sql`SELECT ${q.COLUMNS}, 1 - (m.embedding <=> ${vector}::vector) AS similarity
          FROM memories m WHERE ${where}
          ORDER BY m.embedding <=> ${vector}::vector LIMIT ${n}`,
    );
  });
}

/**
 * Full-text candidates: any query word may match (OR of the stemmed lexemes), ranked by cover
 * density normalized into [0,1) (rank / (rank + 1)).
 */
async function keywordCandidates(db: DbOrTx, where: SQL, text: string, vector: string, n: number): Promise<Candidate[]> {
  return rows<Candidate>(
    db,
    sql`WITH query AS (SELECT NULLIF(replace(plainto_tsquery('english', ${text})::text, '&', '|'), '')::tsquery AS tsq)
        SELECT ${q.COLUMNS}, 1 - (m.embedding <=> ${vector}::vector) AS similarity,
               ts_rank_cd(m.search_tsv, query.tsq, 32) AS text_rank
        FROM memories m, query
        WHERE query.tsq IS NOT NULL AND m.search_tsv @@ query.tsq AND ${where}
        ORDER BY text_rank DESC, m.created_at DESC LIMIT ${n}`,
  );
}

function recencyOf(row: q.MemoryRow, now: Date) {
  const ageDays = Math.max(0, (now.getTime() - new Date(row.created_at).getTime()) / DAY);
  return Math.exp(-ageDays / 30);
}

/** Orders candidates by the mode's base score blended with recency: (1-w)·base + w·exp(-age/30 days). */
function rank(mode: string, semantic: Candidate[], keyword: Candidate[], w: number, now: Date) {
  const base = new Map<string, { row: Candidate; score: number }>();
  if (mode === 'semantic') {
    for (const c of semantic) base.set(c.id, { row: c, score: clamp01(Number(c.similarity)) });
  } else if (mode === 'keyword') {
    for (const c of keyword) base.set(c.id, { row: c, score: clamp01(Number(c.text_rank)) });
  } else {
    // Reciprocal rank fusion; 1.0 means first in both lists.
    const best = 2 / (RRF_K + 1);
    [semantic, keyword].forEach((list) =>
      list.forEach((c, i) => {
        const entry = base.get(c.id) ?? { row: c, score: 0 };
        entry.score += 1 / (RRF_K + i + 1) / best;
        base.set(c.id, entry);
      }),
    );
  }
  return [...base.values()]
    .map(({ row, score }) => ({ row, score: clamp01(w === 0 ? score : (1 - w) * score + w * recencyOf(row, now)) }))
    .sort((a, b) => b.score - a.score || Number(b.row.similarity) - Number(a.row.similarity));
}

export async function search(services: Services, auth: AuthContext, actor: Actor, query: z.infer<typeof SearchQuery>) {
  const spaceId = query.space_id ? parseUrn(query.space_id)! : undefined;
  if (spaceId) requireFeature(auth.tier, 'spaces');
  const now = services.clock.now();
  const grants = query.scope === 'own' ? [] : await activeGrants(services.db, auth.tenantId, now);
  const where = q.whereReadable(auth.tenantId, grants, query.scope, now, {
    tags: query.tags,
    agentId: query.agent_id,
    spaceId,
    includeSuperseded: query.include_superseded,
  });
  const [embedding] = await embedAll(services.embedder, [query.q]);
  const vector = q.vectorLiteral(embedding);
  // Recency blending and fusion re-rank, so fetch more than asked for.
  const n = Math.min(Math.max(query.limit * 4, 40), 400);
  const [semantic, keyword] = await Promise.all([
    query.mode === 'keyword' ? [] : semanticCandidates(services.db, where, vector, n),
    query.mode === 'semantic' ? [] : keywordCandidates(services.db, where, query.q, vector, n),
  ]);
  const hits = rank(query.mode, semantic, keyword, query.recency_weight, now)
    .filter((h) => h.score >= query.min_score)
    .slice(0, query.limit);

  const own = hits.filter((h) => h.row.tenant_id === auth.tenantId).map((h) => h.row.id);
  await services.db.transaction(async (tx) => {
    if (own.length) {
      await tx.execute(sql`
        UPDATE memories SET recall_count = recall_count + 1, last_recalled_at = ${now.toISOString()}
        WHERE tenant_id = ${auth.tenantId} AND id = ANY(${pgArray(own)}::uuid[])`);
      await recordMemoryEvents(
        tx,
        own.map((id) => ({ tenantId: auth.tenantId, memoryId: id, kind: 'recall' as const, at: now, actor: actor.keyId, requestId: actor.requestId, metadata: { query: query.q.slice(0, 200), mode: query.mode } })),
      );
    }
    await recordMilestone(tx, auth.tenantId, 'first_search', now, { mode: query.mode });
  });

  return {
    query: query.q,
    mode: query.mode,
    total_results: hits.length,
    memories: hits.map(({ row, score }) => {
      const similarity = clamp01(Number(row.similarity));
      return {
        uuid: toUrn(row.id),
        observation: row.observation,
        score: Math.round(score * 1e6) / 1e6,
        similarity: Math.round(similarity * 1e6) / 1e6,
        match_confidence: Math.round(matchConfidence(similarity, Number(row.importance), Number(row.recall_count)) * 1e6) / 1e6,
        tags: row.tags ?? [],
        importance: Number(row.importance),
        agent_id: row.agent_id,
        space_id: row.space_id ? toUrn(row.space_id) : null,
        owner_tenant_id: row.tenant_id,
        created_at: new Date(row.created_at).toISOString(),
      };
    }),
  };
}
