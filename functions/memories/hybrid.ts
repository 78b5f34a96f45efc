import { stripStopwords } from '../../shared/memory/stopwords';
import type { Ranked } from './queries';

/**
 * The hybrid ranking. Each list's raw scores (cosine; BM25) are min-max normalised over its
 * candidates, so the best of a list is 1 and its weakest 0, then combined convexly with 0.3 on the
 * semantic side. The top fused hits then lend part of their score to the memories stored next to
 * them (same owner, agent and space, within NEIGHBOUR_GAP_MINUTES): 0.5 of it to the adjacent
 * memory, 0.4 to the one after that. Every lever here was kept because it raised recall on the
 * LoCoMo benchmark on its own (test/bench/locomo.ts and locomo-levers.ts; figures in
 * docs/performance.md): neighbour shares, BM25's k1/b, min-max normalisation, raw BM25 scores, this
 * semantic weight over its neighbours, and the candidate count, the ranking vector (rankingVector)
 * and the number of lending hits (NEIGHBOUR_HITS); the last three were tuned on half A of the
 * conversations and kept because half B rose too. Tried and dropped because they did not: pseudo-relevance
 * feedback, reciprocal rank fusion, whole-store BM25 statistics for filtered searches, time words for
 * "when" questions, dates left out of the query, uneven shares before and after a hit.
 * A neighbour's share never ranks a memory without a match of its own (no query word in it, and a
 * cosine under half the best candidate's; a neighbour's words and cosine are read with it) above one with, and leaves it
 * a tenth of its score (UNMATCHED_SCALE): a memory that matched nothing outranked real matches, or
 * stood beside them with half the best score, docs/memories.md's and the README's examples among
 * them. The rule costs a little recall. "A cosine above the weakest candidate's" as the semantic
 * match would cost much more: many of LoCoMo's evidence turns are no closer to their question than
 * far-down candidates, few under half the best, so answers that share no word with their question
 * and rank by a neighbour's share would fall behind every weak match.
 */
export const HYBRID_SEMANTIC_WEIGHT = 0.3;

/**
 * The texts a search embeds, in one call: the query, and for a hybrid search its words without
 * stopwords too when they differ ("When did Caroline go to the support group?" and "Caroline go
 * support group").
 */
export function queryTexts(mode: string, text: string): string[] {
  const words = mode === 'hybrid' ? stripStopwords(text) : text;
  return words === text ? [text] : [text, words];
}

/**
 * The vector a hybrid search ranks its semantic candidates by: the mean of the query's and its
 * stopword-free words' (queryTexts). The question's form ("when did", "what is") weighs less against
 * its subject, which raised LoCoMo recall@10 on both halves of the data (docs/performance.md). It
 * only ranks: whether a memory matches the query's meaning (semanticMatch) is judged on its cosine
 * to the query's own vector, as the answer's `similarity` is; judged on the mean, a memory that only
 * shares the subject's neighbourhood ("The user lives in Lisbon." for "which currency for
 * invoices") came close enough to count as a match.
 */
export const rankingVector = (vectors: number[][]): number[] => (vectors.length < 2 ? vectors[0] : vectors[0].map((x, i) => (x + vectors[1][i]) / 2));
/**
 * Candidates each list fetches for a re-ranked search of `limit` results: three per result, at least
 * 30. Min-max normalisation makes the weakest candidate of a list its zero, so the count sets how
 * far down a list still earns a share of the fusion; 30 for a limit of 10 raised LoCoMo recall@10 on
 * both halves of the data over 40 (docs/performance.md).
 */
export const candidateCount = (limit: number) => Math.min(Math.max(limit * 3, 30), 300);
export const NEIGHBOUR_SHARE = [0.5, 0.4];
/** The fused hits that lend to their neighbours: 30 over 20 raised recall@10 on both halves, with rankingVector only (docs/performance.md). */
export const NEIGHBOUR_HITS = 30;
export const NEIGHBOUR_GAP_MINUTES = 30;

export interface Scored {
  row: Ranked;
  score: number;
  /**
   * Whether the memory matches the query by itself: a keyword hit (a query word is in it), or a
   * semantic match (see semanticMatch). A share lent by a neighbour never ranks a memory without a
   * match of its own above one with.
   */
  matched: boolean;
}

/**
 * The share of the best semantic candidate's cosine a memory's own cosine needs for a semantic
 * match. Relative, because an absolute floor holds for one embedder only (USE gives unrelated
 * sentences 0.1-0.3, the hash embedder 0); not the weakest candidate's cosine, which follows how
 * many candidates are fetched rather than the memory. With USE, the tour's "The staging database
 * is called pg-staging-2" stays under half the best cosine for questions about the currency of
 * invoices, so it stays without a match. Recall on LoCoMo barely moves below this share and falls
 * above it (locomo-levers.ts; the figures are in docs/performance.md).
 */
export const SEMANTIC_MATCH_SHARE = 0.5;

/**
 * Whether a memory's own cosine (the row's `similarity`, on semantic candidates and on neighbours)
 * is a semantic match: positive and at least SEMANTIC_MATCH_SHARE of the best semantic candidate's.
 * A memory outside the candidate list is judged on its cosine too, not on being outside the list.
 */
export function semanticMatch(semantic: Ranked[]): (row: Ranked) => boolean {
  const best = Math.max(0, ...semantic.map((c) => Number(c.similarity)));
  return (row) => row.similarity != null && Number(row.similarity) > 0 && Number(row.similarity) >= SEMANTIC_MATCH_SHARE * best;
}

/**
 * A neighbour's own match: a query word in it (`word_match`, read with it by queries.neighbours), or
 * `semantic`. The words count as they do for keyword candidates, where any BM25 above 0 matches: a
 * neighbour outside the keyword list that shares a word with the query matches the words all the same.
 */
export const ownMatch =
  (semantic: (row: Ranked) => boolean) =>
  (row: Ranked & { word_match?: boolean }): boolean =>
    row.word_match === true || semantic(row);

/** Min-max over a list; a list without spread counts its score where it is positive (a zero cosine matches nothing). */
const minMax = (values: number[]) => {
  const lo = Math.min(...values);
  const hi = Math.max(...values);
  return (x: number) => (hi > lo ? (x - lo) / (hi - lo) : x > 0 ? 1 : 0);
};

/** Min-max fusion of the two candidate lists, best first. */
export function fuse(semantic: Ranked[], keyword: Ranked[]): Scored[] {
  const fused = new Map<string, Scored>();
  // A candidate ranks by its cosine to the ranking vector (rankingVector) and matches by its own `similarity`.
  const cosine = (c: Ranked) => Number(c.rank_similarity ?? c.similarity);
  const sim = minMax(semantic.map(cosine));
  const text = minMax(keyword.map((c) => Number(c.bm25)));
  const matches = semanticMatch(semantic);
  for (const c of semantic) fused.set(c.id, { row: c, score: HYBRID_SEMANTIC_WEIGHT * sim(cosine(c)), matched: matches(c) });
  for (const c of keyword) {
    const entry = fused.get(c.id) ?? { row: c, score: 0, matched: false };
    entry.score += (1 - HYBRID_SEMANTIC_WEIGHT) * text(Number(c.bm25));
    entry.matched = entry.matched || Number(c.bm25) > 0;
    fused.set(c.id, entry);
  }
  return [...fused.values()].sort(bestFirst);
}

/** Memories that match first, then by score. */
const bestFirst = (a: Scored, b: Scored) => Number(b.matched) - Number(a.matched) || b.score - a.score;

/**
 * What a memory without a match of its own keeps of its score: a tenth, and never more than a tenth
 * of the weakest match's. A neighbour's share is a guess that the memory is the rest of the same
 * exchange, not evidence that it is about the query, so it may bring such a memory back when little
 * else matches but never with a score a caller would read as relevant (with `min_score` 0.1 it
 * never comes back). The order is the same at any scale (matches first), so recall is too.
 */
export const UNMATCHED_SCALE = 0.1;

/**
 * Adds each hit's share to its stored neighbours (rows from queries.neighbours with their cosine;
 * new ones join the list, matched by `matches`, semanticMatch of the search's semantic candidates)
 * and scales the result back into [0,1] when the sums pass 1. Best first, where a memory without a
 * match of its own ranks after every memory with one (the shares order the memories within each
 * group: an answer stored beside the question it follows outranks other memories that match
 * nothing, never one that matches), with UNMATCHED_SCALE of its score, so scores never rise down
 * the list.
 */
export function spreadToNeighbours(fused: Scored[], near: (Ranked & { hit_id: string; distance: number })[], matches: (row: Ranked) => boolean): Scored[] {
  const byId = new Map(fused.map((s) => [s.row.id, { ...s }]));
  const base = new Map(fused.map((s) => [s.row.id, s.score]));
  for (const n of near) {
    const share = NEIGHBOUR_SHARE[Number(n.distance) - 1] ?? 0;
    const from = base.get(n.hit_id) ?? 0;
    if (!share || !from) continue;
    const entry = byId.get(n.id) ?? { row: n, score: 0, matched: matches(n) };
    entry.score += share * from;
    byId.set(n.id, entry);
  }
  const all = [...byId.values()];
  const top = Math.max(1, ...all.map((s) => s.score));
  const ranked = all.map((s) => ({ ...s, score: s.score / top })).sort(bestFirst);
  const floor = Math.min(1, ...ranked.filter((s) => s.matched).map((s) => s.score));
  return ranked.map((s) => (s.matched ? s : { ...s, score: UNMATCHED_SCALE * Math.min(s.score, floor) }));
}
