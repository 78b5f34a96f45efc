import type { Ranked } from './queries';

/**
 * The hybrid ranking. Each list's raw scores (cosine; BM25) are min-max normalised over its
 * candidates, so the best of a list is 1 and its weakest 0, then combined convexly with 0.3 on the
 * semantic side. The top fused hits then lend part of their score to the memories stored next to
 * them (same owner, agent and space, within NEIGHBOUR_GAP_MINUTES): 0.4 of it to the adjacent
 * memory, 0.2 to the one after that. Measured on LoCoMo (7 conversations, 1,033 questions, offline
 * USE embedder), each lever on its own over the previous hybrid (recall@10 0.689): neighbours ±2
 * +0.068, k1/b 0.9/0.4 +0.012, and with both, min-max instead of dividing by the best +0.024 and raw
 * BM25 instead of 1-exp(-s/10) +0.004. Tried and dropped: pseudo-relevance feedback (+0.020 alone,
 * -0.004 on top of the rest), reciprocal rank fusion, whole-store BM25 statistics for filtered
 * searches (-0.020), other semantic weights (0.2: -0.001, 0.4: -0.008, 0.5: -0.043).
 */
export const HYBRID_SEMANTIC_WEIGHT = 0.3;
export const NEIGHBOUR_SHARE = [0.5, 0.4];
export const NEIGHBOUR_HITS = 20;
export const NEIGHBOUR_GAP_MINUTES = 30;

export interface Scored {
  row: Ranked;
  score: number;
}

const minMax = (values: number[]) => {
  const lo = Math.min(...values);
  const hi = Math.max(...values);
  return (x: number) => (hi > lo ? (x - lo) / (hi - lo) : 1);
};

/** Min-max fusion of the two candidate lists, best first. */
export function fuse(semantic: Ranked[], keyword: Ranked[]): Scored[] {
  const fused = new Map<string, Scored>();
  const sim = minMax(semantic.map((c) => Number(c.similarity)));
  const text = minMax(keyword.map((c) => Number(c.bm25)));
  for (const c of semantic) fused.set(c.id, { row: c, score: HYBRID_SEMANTIC_WEIGHT * sim(Number(c.similarity)) });
  for (const c of keyword) {
    const entry = fused.get(c.id) ?? { row: c, score: 0 };
    entry.score += (1 - HYBRID_SEMANTIC_WEIGHT) * text(Number(c.bm25));
    fused.set(c.id, entry);
  }
  return [...fused.values()].sort((a, b) => b.score - a.score);
}

/**
 * Adds each hit's share to its stored neighbours (rows from queries.neighbours; new ones join the
 * list) and scales the result back into [0,1] when the sums pass 1. Best first.
 */
export function spreadToNeighbours(fused: Scored[], near: (Ranked & { hit_id: string; distance: number })[]): Scored[] {
  const byId = new Map(fused.map((s) => [s.row.id, { ...s }]));
  const base = new Map(fused.map((s) => [s.row.id, s.score]));
  for (const n of near) {
    const share = NEIGHBOUR_SHARE[Number(n.distance) - 1] ?? 0;
    const from = base.get(n.hit_id) ?? 0;
    if (!share || !from) continue;
    const entry = byId.get(n.id) ?? { row: n, score: 0 };
    entry.score += share * from;
    byId.set(n.id, entry);
  }
  const all = [...byId.values()];
  const top = Math.max(1, ...all.map((s) => s.score));
  return all.map((s) => ({ row: s.row, score: s.score / top })).sort((a, b) => b.score - a.score);
}
