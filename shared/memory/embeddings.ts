import { AppError } from '../platform/contract/errors';

/** Every stored vector has this many dimensions (the `vector(512)` column). */
export const EMBEDDING_DIMENSION = 512;

export interface Embedder {
  readonly name: string;
  /** Native dimension of the provider; vectors shorter than 512 are zero-padded (cosine is unchanged). */
  readonly dimension: number;
  embed(texts: string[]): Promise<number[][]>;
  /** Why the provider cannot work at all (its configuration), or null; /health reports it. */
  problem?(): string | null;
}

export function toStoredVector(v: number[]): number[] {
  // A provider's answer is outside input: a null or a base64 string where a vector belongs is its fault (502), not ours.
  if (!Array.isArray(v) || !v.every((x) => typeof x === 'number'))
    throw new AppError('UPSTREAM_ERROR', 'embedding provider returned something other than a vector of numbers');
  if (v.length > EMBEDDING_DIMENSION) {
    throw new AppError('UPSTREAM_ERROR', `embedding has ${v.length} dimensions; at most ${EMBEDDING_DIMENSION} fit`);
  }
  const out = v.length === EMBEDDING_DIMENSION ? [...v] : [...v, ...new Array(EMBEDDING_DIMENSION - v.length).fill(0)];
  let norm = 0;
  for (const x of out) norm += x * x;
  norm = Math.sqrt(norm);
  if (!Number.isFinite(norm) || norm === 0) throw new AppError('UPSTREAM_ERROR', 'embedding provider returned an empty vector');
  return out.map((x) => x / norm);
}

/** Fails at start-up rather than at the first write when a provider cannot fit the column. */
export function assertFits(embedder: Embedder): void {
  if (embedder.dimension > EMBEDDING_DIMENSION) {
    throw new Error(`embedding provider ${embedder.name} has ${embedder.dimension} dimensions; the store holds ${EMBEDDING_DIMENSION}`);
  }
}

/** Embeds outside any transaction and turns provider trouble into a clear 502/503. */
export async function embedAll(embedder: Embedder, texts: string[]): Promise<number[][]> {
  let vectors: number[][];
  try {
    vectors = await embedder.embed(texts);
  } catch (err) {
    if (err instanceof AppError) throw err;
    throw new AppError('SERVICE_UNAVAILABLE', `embedding provider ${embedder.name} unavailable: ${err instanceof Error ? err.message : String(err)}`);
  }
  if (vectors.length !== texts.length)
    throw new AppError('UPSTREAM_ERROR', `embedding provider ${embedder.name} returned ${vectors.length} vectors for ${texts.length} texts`);
  return vectors.map(toStoredVector);
}

/**
 * Deterministic feature hashing of words and word pairs (tests and offline demos only): texts that
 * share words are close, unrelated ones are near-orthogonal. No model, no network.
 */
export function hashEmbedder(): Embedder {
  const fnv = (s: string) => {
    let h = 0x811c9dc5;
    for (let i = 0; i < s.length; i++) h = Math.imul(h ^ s.charCodeAt(i), 0x01000193);
    return h >>> 0;
  };
  return {
    name: 'hash',
    dimension: EMBEDDING_DIMENSION,
    async embed(texts) {
      return texts.map((text) => {
        const v = new Array<number>(EMBEDDING_DIMENSION).fill(0);
        const words = text.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? [];
        const features = [...words, ...words.slice(1).map((w, i) => `${words[i]} ${w}`)];
        for (const f of features.length ? features : [text || ' ']) {
          const h = fnv(f);
          v[h % EMBEDDING_DIMENSION] += h & 0x80000000 ? -1 : 1;
        }
        if (!v.some((x) => x !== 0)) v[0] = 1;
        return v;
      });
    },
  };
}

/**
 * Any OpenAI-compatible embeddings endpoint (OpenAI with `dimensions`, Ollama, vLLM, TEI).
 * `fetcher` lets Workers and Node pass their own fetch.
 */
export function openAiEmbedder(opts: {
  baseUrl: string;
  apiKey?: string;
  model: string;
  dimension: number;
  fetcher?: typeof fetch;
  timeoutMs?: number;
}): Embedder {
  const fetcher = opts.fetcher ?? fetch;
  return {
    name: `openai:${opts.model}`,
    dimension: opts.dimension,
    async embed(texts) {
      const res = await fetcher(`${opts.baseUrl.replace(/\/$/, '')}/embeddings`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...(opts.apiKey ? { authorization: `Bearer ${opts.apiKey}` } : {}) },
        body: JSON.stringify({ model: opts.model, input: texts, dimensions: opts.dimension }),
        signal: AbortSignal.timeout(opts.timeoutMs ?? 15_000),
      });
      if (!res.ok) {
        const status = res.status === 429 || res.status >= 500 ? 'SERVICE_UNAVAILABLE' : 'UPSTREAM_ERROR';
        throw new AppError(status, `embedding provider answered ${res.status}`);
      }
      const body = (await res.json()) as { data?: { embedding: number[]; index: number }[] };
      if (!Array.isArray(body.data)) throw new AppError('UPSTREAM_ERROR', 'embedding provider returned no data');
      return [...body.data].sort((a, b) => a.index - b.index).map((d) => d.embedding);
    },
  };
}

/** Workers AI binding (`[ai] binding = "AI"`), e.g. `@cf/baai/bge-small-en-v1.5` (384-d, zero-padded). */
export function workersAiEmbedder(ai: { run(model: string, input: unknown): Promise<unknown> }, model: string, dimension: number): Embedder {
  return {
    name: `workers-ai:${model}`,
    dimension,
    async embed(texts) {
      const out = (await ai.run(model, { text: texts })) as { data?: number[][] };
      if (!Array.isArray(out.data)) throw new AppError('UPSTREAM_ERROR', 'Workers AI returned no embeddings');
      return out.data;
    },
  };
}

/** The runtime-neutral providers from configuration; `use` is Node-only and wired there. */
export function configuredEmbedder(
  config: { EMBEDDING_PROVIDER?: string; EMBEDDING_BASE_URL: string; EMBEDDING_API_KEY?: string; EMBEDDING_MODEL?: string; EMBEDDING_DIMENSIONS: number },
  ai?: { run(model: string, input: unknown): Promise<unknown> },
): Embedder | null {
  switch (config.EMBEDDING_PROVIDER) {
    case 'hash':
      return hashEmbedder();
    case 'openai':
      return openAiEmbedder({
        baseUrl: config.EMBEDDING_BASE_URL,
        apiKey: config.EMBEDDING_API_KEY,
        model: config.EMBEDDING_MODEL ?? 'text-embedding-3-small',
        dimension: config.EMBEDDING_DIMENSIONS,
      });
    case 'workers-ai':
      if (!ai) throw new Error('EMBEDDING_PROVIDER=workers-ai needs the AI binding');
      return workersAiEmbedder(ai, config.EMBEDDING_MODEL ?? '@cf/baai/bge-small-en-v1.5', config.EMBEDDING_MODEL ? config.EMBEDDING_DIMENSIONS : 384);
    default:
      return null;
  }
}

/**
 * Builds the provider on first use instead of at start-up, so a missing or wrong embedding
 * configuration breaks only what embeds (writes, semantic search: 503 with the reason) while every
 * other route keeps working and /health reports the reason. The build is retried on each use until
 * it succeeds: building is cheap (no network), and a fixed binding must not need a restart.
 */
export function lazyEmbedder(build: () => Embedder): Embedder {
  let built: Embedder | null = null;
  const get = (): { embedder: Embedder } | { problem: string } => {
    if (built) return { embedder: built };
    try {
      const embedder = build();
      assertFits(embedder);
      built = embedder;
      return { embedder };
    } catch (err) {
      return { problem: err instanceof Error ? err.message : String(err) };
    }
  };
  return {
    get name() {
      const got = get();
      return 'embedder' in got ? got.embedder.name : 'unconfigured';
    },
    get dimension() {
      const got = get();
      return 'embedder' in got ? got.embedder.dimension : EMBEDDING_DIMENSION;
    },
    async embed(texts) {
      const got = get();
      if ('problem' in got) throw new AppError('SERVICE_UNAVAILABLE', `Embedding provider not configured: ${got.problem}`);
      return got.embedder.embed(texts);
    },
    problem() {
      const got = get();
      return 'problem' in got ? got.problem : (got.embedder.problem?.() ?? null);
    },
  };
}
