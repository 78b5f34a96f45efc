/**
 * Rerankers (docs/memories.md#reranking): a model that scores each candidate document against the
 * query, opt-in with RERANK_PROVIDER. Search asks one for the order of its top candidates and keeps
 * its own order when the reranker is slow, down or answers nonsense (`rerankWithin`), so a reranker
 * can never fail a search. Nothing here logs or throws the query or the documents.
 */

/** One document's relevance as the provider scored it: its index in the documents sent. */
export interface RerankScore {
  index: number;
  score: number;
}

export interface Reranker {
  /** `cohere:<model>` or `workers-ai:<model>`: logs and spans name the provider by it. */
  readonly name: string;
  rerank(query: string, documents: string[], signal: AbortSignal): Promise<RerankScore[]>;
}

/** What went wrong, in words that carry no user data. */
export class RerankFailure extends Error {}

const isScore = (r: unknown, count: number): r is { index: number; score: number } =>
  typeof r === 'object' &&
  r !== null &&
  Number.isInteger((r as { index: unknown }).index) &&
  (r as { index: number }).index >= 0 &&
  (r as { index: number }).index < count &&
  Number.isFinite((r as { score: unknown }).score);

/** The provider's answer checked: each index once, in range, with a finite score; else a failure. */
function checked(results: unknown, count: number, as: (r: Record<string, unknown>) => unknown): RerankScore[] {
  if (!Array.isArray(results)) throw new RerankFailure('the answer has no results list');
  const scores = results.map((r) => (typeof r === 'object' && r !== null ? as(r as Record<string, unknown>) : null));
  if (!scores.every((s) => isScore(s, count))) throw new RerankFailure('the answer has a result without a valid index and score');
  if (new Set(scores.map((s) => s.index)).size !== scores.length) throw new RerankFailure('the answer scores a document twice');
  return scores;
}

/**
 * The Cohere-compatible wire (`POST {base}/v1/rerank`), which Cohere serves and so do gateways and
 * self-hosted servers (Jina, TEI, LiteLLM, vLLM). The base URL is the operator's, like
 * EMBEDDING_BASE_URL: a reranker on the operator's own network is allowed.
 */
export function cohereReranker(opts: { baseUrl: string; apiKey?: string; model: string; fetcher?: typeof fetch }): Reranker {
  const fetcher = opts.fetcher ?? fetch;
  const url = `${opts.baseUrl.replace(/\/+$/, '').replace(/\/v1$/, '')}/v1/rerank`;
  return {
    name: `cohere:${opts.model}`,
    async rerank(query, documents, signal) {
      const res = await fetcher(url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...(opts.apiKey ? { authorization: `Bearer ${opts.apiKey}` } : {}) },
        body: JSON.stringify({ model: opts.model, query, documents, top_n: documents.length }),
        signal,
      });
      if (!res.ok) {
        await res.body?.cancel();
        throw new RerankFailure(`the provider answered ${res.status}`);
      }
      const body = (await res.json().catch(() => null)) as { results?: unknown } | null;
      return checked(body?.results, documents.length, (r) => ({ index: r.index, score: r.relevance_score }));
    },
  };
}

type AiBinding = { run(model: string, input: unknown): Promise<unknown> };

/** Workers AI's rerankers through the AI binding, `@cf/baai/bge-reranker-base` by default. */
export function workersAiReranker(ai: AiBinding, model: string): Reranker {
  return {
    name: `workers-ai:${model}`,
    async rerank(query, documents) {
      const out = (await ai.run(model, { query, contexts: documents.map((text) => ({ text })), top_k: documents.length })) as { response?: unknown } | null;
      return checked(out?.response, documents.length, (r) => ({ index: r.id, score: r.score }));
    },
  };
}

export const RERANK_DEFAULT_MODELS = { cohere: 'rerank-v3.5', 'workers-ai': '@cf/baai/bge-reranker-base' } as const;

/** The reranker RERANK_PROVIDER names, or null when it is `none` (the default). */
export function configuredReranker(
  config: { RERANK_PROVIDER: 'none' | 'cohere' | 'workers-ai'; RERANK_BASE_URL: string; RERANK_API_KEY?: string; RERANK_MODEL?: string },
  ai?: AiBinding,
  fetcher?: typeof fetch,
): Reranker | null {
  switch (config.RERANK_PROVIDER) {
    case 'cohere':
      return cohereReranker({
        baseUrl: config.RERANK_BASE_URL,
        apiKey: config.RERANK_API_KEY,
        model: config.RERANK_MODEL ?? RERANK_DEFAULT_MODELS.cohere,
        ...(fetcher ? { fetcher } : {}),
      });
    case 'workers-ai':
      // Without the binding every search answers in its own order (`rerank: "failed"`) and says why in the log.
      if (!ai)
        return {
          name: 'workers-ai:unbound',
          rerank: () => Promise.reject(new RerankFailure('RERANK_PROVIDER=workers-ai needs the AI binding')),
        };
      return workersAiReranker(ai, config.RERANK_MODEL ?? RERANK_DEFAULT_MODELS['workers-ai']);
    default:
      return null;
  }
}

/** Relevance in [0,1] for each document sent, by index; or why the reranker's order is not used. */
export type Reranked = { scores: Map<number, number> } | { failure: string };

/**
 * Asks `reranker` within `timeoutMs`. Scores already in [0,1] (Cohere's relevance) are kept; an
 * answer with any score outside it (raw logits) is mapped through the logistic function, which keeps
 * its order. Any trouble is a failure, never an exception.
 */
export async function rerankWithin(reranker: Reranker, query: string, documents: string[], timeoutMs: number): Promise<Reranked> {
  const controller = new AbortController();
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      controller.abort();
      reject(new RerankFailure(`no answer within ${timeoutMs} ms`));
    }, timeoutMs);
  });
  try {
    const scores = await Promise.race([reranker.rerank(query, documents, controller.signal), late]);
    const raw = scores.some((s) => s.score < 0 || s.score > 1);
    return { scores: new Map(scores.map((s) => [s.index, raw ? 1 / (1 + Math.exp(-s.score)) : s.score])) };
  } catch (err) {
    // A transport error's message names the failure (a refused connection), never the request body.
    return { failure: err instanceof Error ? err.message.slice(0, 200) : 'unknown error' };
  } finally {
    clearTimeout(timer);
  }
}
