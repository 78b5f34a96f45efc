import { env } from 'cloudflare:workers';
import { beforeAll, describe, expect, it } from 'vitest';
import { type RequestOptions, testClient } from '../client';
import worker from '../../functions/worker';

/**
 * The opt-in reranker inside workerd (docs/memories.md#reranking): the worker's own fetch handler
 * with the other workerd tests' bindings plus a reranker. `cohere` calls the rerank stand-in the
 * global setup started (word overlap, Cohere wire); `workers-ai` calls an AI binding given here, as
 * `env.AI` would be. A reranker that is down or slow leaves the search in its own order, 200 with
 * `rerank: "failed"`.
 */
// wrangler.toml's AI binding needs a Cloudflare login; the tests give their own or none.
const { AI: _ai, ...rest } = env as unknown as Record<string, unknown>;
const base = rest as Record<string, string>;

function workerWith(extra: Record<string, unknown>) {
  const bindings = { ...base, ...extra };
  const pending: Promise<unknown>[] = [];
  const ctx = { waitUntil: (p: Promise<unknown>) => void pending.push(p), passThroughOnException() {}, props: {} } as unknown as ExecutionContext;
  const request = testClient((req) => worker.fetch(req, bindings as never, ctx), { base: 'https://engram.test' });
  return async <T = never, M extends string = string, P extends string = string>(method: M, path: P, opts: RequestOptions = {}) => {
    const res = await request<T, M, P>(method, path, opts);
    await Promise.all(pending.splice(0));
    return res;
  };
}

const QUERY = 'monthly invoices in EUR for the finance team';
const CORPUS = [
  'The staging database restarts every Sunday night.',
  'Invoices go out monthly in EUR to the finance team.',
  'The office printer jams when printing invoices.',
];
const BEST = CORPUS[1]!;

/** A Workers AI binding whose reranker scores by word overlap, in the binding's own answer shape. */
const overlapAi = (delayMs = 0) => ({
  async run(model: string, input: { query: string; contexts: { text: string }[] }) {
    if (model !== '@cf/baai/bge-reranker-base') throw new Error(`unexpected model ${model}`);
    if (delayMs) await new Promise((r) => setTimeout(r, delayMs));
    const wanted = new Set(input.query.toLowerCase().split(/\W+/).filter(Boolean));
    return {
      response: input.contexts.map((c, id) => {
        const have = new Set(c.text.toLowerCase().split(/\W+/));
        return { id, score: [...wanted].filter((w) => have.has(w)).length / wanted.size };
      }),
    };
  },
});

let key = '';
beforeAll(async () => {
  const call = workerWith({});
  const res = await call('POST', '/admin/v1/tenants', {
    key: base.ADMIN_TOKEN,
    body: { email: `rerank-${crypto.randomUUID().slice(0, 12)}@example.com`, tier: 'pro' },
  });
  expect(res.status, res.text).toBe(201);
  key = res.body.api_key;
  for (const observation of CORPUS) {
    const stored = await call('POST', '/v1/memories', { key, body: { observation, auto_link: false } });
    expect(stored.status, stored.text).toBe(201);
  }
});

const searchWith = (extra: Record<string, unknown>, query = '') =>
  workerWith(extra)('GET', `/v1/memories/search?q=${encodeURIComponent(QUERY)}&mode=hybrid&limit=3${query}`, { key });

describe('reranking in workerd', () => {
  it('cohere: the stand-in’s order and relevance, and Server-Timing names the rerank', async () => {
    const res = await searchWith({ RERANK_PROVIDER: 'cohere', RERANK_BASE_URL: base.TEST_RERANK_URL });
    expect(res.status, res.text).toBe(200);
    expect(res.body.rerank).toBe('applied');
    expect(res.body.memories[0].observation).toBe(BEST);
    expect(res.body.memories[0].score).toBe(7 / 8); // all the query's words but "for"
    expect(res.headers.get('server-timing')).toMatch(/^embed;dur=[\d.]+, db;dur=[\d.]+, rank;dur=[\d.]+, rerank;dur=[\d.]+$/);
  });

  it('workers-ai: the AI binding’s answer', async () => {
    const res = await searchWith({ RERANK_PROVIDER: 'workers-ai', AI: overlapAi() });
    expect(res.status, res.text).toBe(200);
    expect(res.body.rerank).toBe('applied');
    expect(res.body.memories[0].observation).toBe(BEST);
  });

  it('rerank=false skips it', async () => {
    const res = await searchWith({ RERANK_PROVIDER: 'workers-ai', AI: overlapAi() }, '&rerank=false');
    expect(res.body.rerank).toBe('skipped');
    expect(res.headers.get('server-timing')).not.toContain('rerank');
  });

  it('a reranker that is down or slow leaves the search in its own order', async () => {
    const own = await searchWith({}, '&rerank=false');
    const order = (hits: { uuid: string; score: number }[]) => hits.map((h) => [h.uuid, h.score]);
    // Nothing listens on port 9 of loopback: the connection is refused.
    const down = await searchWith({ RERANK_PROVIDER: 'cohere', RERANK_BASE_URL: 'http://127.0.0.1:9' });
    expect(down.status, down.text).toBe(200);
    expect(down.body.rerank).toBe('failed');
    expect(order(down.body.memories)).toEqual(order(own.body.memories));
    const slow = await searchWith({ RERANK_PROVIDER: 'workers-ai', AI: overlapAi(3_000), RERANK_TIMEOUT_MS: '200' });
    expect(slow.status, slow.text).toBe(200);
    expect(slow.body.rerank).toBe('failed');
    expect(order(slow.body.memories)).toEqual(order(own.body.memories));
    const unbound = await searchWith({ RERANK_PROVIDER: 'workers-ai' });
    expect(unbound.body.rerank).toBe('failed');
  });
});
