import type { TenantScope } from '../../shared/memory/access';
import { rerankWithin } from '../../shared/memory/rerank';
import type { TenantCtx } from '../../shared/platform/contract/context';
import * as q from './queries';
import { SearchTimings } from './search-timing';

/** `applied`: the reranker ordered the hits; `skipped`: not asked (off, `rerank=false`, under two candidates); `failed`: asked, and the search kept its own order. */
export type RerankOutcome = 'applied' | 'skipped' | 'failed';

/** One search's reranking and timings: whether a reranker is asked, and what became of it. */
export class SearchRun {
  outcome: RerankOutcome = 'skipped';
  readonly timings = new SearchTimings();
  constructor(readonly reranking: boolean) {}
}

/** A search reranks when a reranker is configured and the request did not turn it off (`rerank=false`). */
export const searchRun = (ctx: TenantCtx, query: { rerank?: boolean }) => new SearchRun(!!ctx.services.reranker && query.rerank !== false);

/**
 * The ranked candidates in the reranker's order (docs/memories.md#reranking): the top RERANK_TOP_N
 * go to it with their text, and its relevance, blended with recency as the search's own score is
 * (`blend`), replaces their score. Candidates it did not score, and those past the top, follow in
 * the search's order with scores no higher than the last reranked one, so scores never rise down
 * the list. When the reranker is slow, down or answers nonsense, the candidates come back as they
 * were and the outcome says `failed`.
 */
export async function rerankCandidates<H extends { row: q.Ranked; score: number }>(
  ctx: TenantCtx,
  text: string,
  run: SearchRun,
  where: TenantScope,
  ordered: H[],
  blend: (row: q.Ranked, relevance: number) => number,
): Promise<H[]> {
  const reranker = ctx.services.reranker;
  if (!run.reranking || !reranker) return ordered;
  const { RERANK_TOP_N, RERANK_TIMEOUT_MS } = ctx.services.config;
  const top = ordered.slice(0, RERANK_TOP_N);
  if (top.length < 2) return ordered;
  const texts = await run.timings.time(
    'db',
    q.observationsIn(
      ctx.db,
      where,
      top.map((h) => h.row.id),
    ),
  );
  const documents = top.map((h) => texts.get(h.row.id) ?? '');
  const answer = await run.timings.time('rerank', rerankWithin(reranker, text, documents, RERANK_TIMEOUT_MS));
  const failure = 'failure' in answer ? answer.failure : answer.scores.size ? null : 'the answer scored no document';
  if (failure !== null || 'failure' in answer) {
    run.outcome = 'failed';
    // Never the query or the documents: the provider, why, and how many were sent.
    ctx.services.log.warn('rerank failed; the search answered in its own order', { provider: reranker.name, reason: failure, documents: top.length });
    return ordered;
  }
  run.outcome = 'applied';
  const { scores } = answer;
  // A stable sort: documents the reranker scores alike keep the search's order.
  const reranked = top.flatMap((h, i) => (scores.has(i) ? [{ ...h, score: blend(h.row, scores.get(i)!) }] : [])).sort((a, b) => b.score - a.score);
  const floor = reranked[reranked.length - 1]!.score;
  const rest = [...top.filter((_, i) => !scores.has(i)), ...ordered.slice(top.length)].map((h) => ({ ...h, score: Math.min(h.score, floor) }));
  return [...reranked, ...rest];
}
