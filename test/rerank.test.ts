import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { createEngine, errorOf, type Tenant, type TestEngine } from './harness';
import { rerankWithin, workersAiReranker } from '../shared/memory/rerank';
import { overlapScore, type RerankServer, startRerankServer } from './standins/rerank-server';

/**
 * The opt-in reranker (docs/memories.md#reranking) against the Cohere-compatible stand-in, whose
 * relevance is the share of the query's words a memory contains: with it configured, search answers
 * in that order with those scores, and when the stand-in is slow, down, failing or nonsensical it
 * answers 200 in its own order and says `rerank: "failed"`. Every search says where its time went
 * in `Server-Timing`.
 */
let reranker: RerankServer;
let engine: TestEngine;
let plainEngine: TestEngine;
let t: Tenant;
const RERANK_KEY = 'rerank-test-key-0123456789';
const TIMEOUT_MS = 400;

interface Hit {
  uuid: string;
  observation: string;
  score: number;
  similarity: number;
}

const CORPUS = [
  'The staging database restarts every Sunday night.',
  'Invoices go out monthly in EUR to the finance team.',
  'The finance team prefers invoices as PDF attachments.',
  'Luna the cat sleeps on the office printer.',
  'Monthly invoices for the Berlin office are paid in EUR by bank transfer.',
  'The office printer jams when printing invoices.',
];

beforeAll(async () => {
  reranker = await startRerankServer();
  engine = await createEngine({
    env: {
      RERANK_PROVIDER: 'cohere',
      RERANK_BASE_URL: reranker.url,
      RERANK_API_KEY: RERANK_KEY,
      RERANK_MODEL: 'overlap-v1',
      RERANK_TIMEOUT_MS: String(TIMEOUT_MS),
      LOG_LEVEL: 'warn',
    },
  });
  t = await engine.newTenant('pro');
  for (const observation of CORPUS) {
    const res = await engine.request('POST', '/v1/memories', { key: t.key, body: { observation, auto_link: false } });
    expect(res.status, res.text).toBe(201);
  }
}, 60_000);
afterAll(async () => {
  await engine?.close();
  await plainEngine?.close();
  await reranker?.close();
});

const search = (query: string) => engine.request('GET', `/v1/memories/search?${query}`, { key: t.key });
const timingNames = (header: string | null) => (header ?? '').split(',').map((part) => part.trim().split(';')[0]);
const QUERY = 'monthly invoices in EUR for the finance team';

describe('reranking with the Cohere-compatible stand-in', () => {
  it('orders the hits by the reranker’s relevance, which replaces score, for every mode', async () => {
    reranker.behave('ok');
    for (const mode of ['hybrid', 'semantic', 'keyword']) {
      const before = reranker.seen.requests;
      const res = await search(`q=${encodeURIComponent(QUERY)}&mode=${mode}&limit=4`);
      expect(res.status, res.text).toBe(200);
      expect(res.body.rerank).toBe('applied');
      expect(reranker.seen.requests).toBe(before + 1);
      const hits = res.body.memories as Hit[];
      expect(hits.length).toBeGreaterThan(1);
      for (const h of hits) {
        expect(h.score).toBeCloseTo(overlapScore(QUERY, h.observation), 5);
        expect(h.similarity).toBeGreaterThanOrEqual(0);
        expect(h.similarity).toBeLessThanOrEqual(1);
      }
      const scores = hits.map((h) => h.score);
      expect([...scores].sort((a, b) => b - a)).toEqual(scores);
      expect(hits[0]!.observation).toBe('Invoices go out monthly in EUR to the finance team.');
      expect(timingNames(res.headers.get('server-timing'))).toEqual(['embed', 'db', 'rank', 'rerank']);
    }
    expect(reranker.seen.authorization).toBe(`Bearer ${RERANK_KEY}`);
    expect(reranker.seen.model).toBe('overlap-v1');
  });

  it('applies min_score and limit to the reranked scores', async () => {
    const res = await search(`q=${encodeURIComponent(QUERY)}&mode=hybrid&limit=10&min_score=0.5`);
    expect(res.body.rerank).toBe('applied');
    const hits = res.body.memories as Hit[];
    expect(hits.length).toBeGreaterThan(0);
    expect(hits.every((h) => h.score >= 0.5)).toBe(true);
    expect(hits.length).toBe(CORPUS.filter((o) => overlapScore(QUERY, o) >= 0.5).length);
  });

  it('rerank=false skips it for one search: no call, no rerank timing', async () => {
    const before = reranker.seen.requests;
    const res = await search(`q=${encodeURIComponent(QUERY)}&mode=hybrid&limit=4&rerank=false`);
    expect(res.status).toBe(200);
    expect(res.body.rerank).toBe('skipped');
    expect(reranker.seen.requests).toBe(before);
    expect(timingNames(res.headers.get('server-timing'))).toEqual(['embed', 'db', 'rank']);
    const bad = await search(`q=${encodeURIComponent(QUERY)}&rerank=maybe`);
    expect(bad.status).toBe(400);
    expect(errorOf(bad).code).toBe('VALIDATION_ERROR');
  });

  it('skips it with nothing to rerank', async () => {
    const res = await search('q=zebra%20xylophone&mode=keyword');
    expect(res.status).toBe(200);
    expect(res.body.memories).toEqual([]);
    expect(res.body.rerank).toBe('skipped');
  });

  it.each([
    ['down', 'dropped connections'],
    ['failing', 'a 503'],
    ['nonsense', 'an answer that is not a ranking'],
    ['slow', 'no answer within RERANK_TIMEOUT_MS'],
  ] as const)('falls back to the search’s own order when the reranker is %s (%s)', async (behaviour, _what) => {
    reranker.behave('ok');
    const own = await search(`q=${encodeURIComponent(QUERY)}&mode=hybrid&limit=5&rerank=0`);
    reranker.behave(behaviour, behaviour === 'slow' ? { delayMs: TIMEOUT_MS * 5 } : {});
    const warn = vi.spyOn(console, 'warn');
    try {
      const started = performance.now();
      const res = await search(`q=${encodeURIComponent(QUERY)}&mode=hybrid&limit=5`);
      const took = performance.now() - started;
      expect(res.status, res.text).toBe(200);
      expect(res.body.rerank).toBe('failed');
      // Each search counts a recall, so match_confidence moves; the order and scores do not.
      const ranking = (hits: Hit[]) => hits.map((h) => [h.uuid, h.score]);
      expect(ranking(res.body.memories)).toEqual(ranking(own.body.memories));
      expect(timingNames(res.headers.get('server-timing'))).toContain('rerank');
      if (behaviour === 'slow') expect(took).toBeLessThan(TIMEOUT_MS * 4);
      const logged = warn.mock.calls.map((c) => String(c[0])).join('\n');
      expect(logged).toContain('rerank failed');
      expect(logged).toContain('cohere:overlap-v1');
      // No user data in the log: neither the query nor a memory's text.
      expect(logged).not.toContain('finance');
      expect(logged).not.toContain('EUR');
    } finally {
      warn.mockRestore();
      reranker.behave('ok');
    }
  });
});

describe('without a reranker', () => {
  it('skips it, and still says where the time went', async () => {
    plainEngine = await createEngine();
    const tenant = await plainEngine.newTenant('free');
    await plainEngine.request('POST', '/v1/memories', { key: tenant.key, body: { observation: CORPUS[1] } });
    for (const mode of ['semantic', 'hybrid']) {
      const res = await plainEngine.request('GET', `/v1/memories/search?q=${encodeURIComponent(QUERY)}&mode=${mode}`, { key: tenant.key });
      expect(res.status, res.text).toBe(200);
      expect(res.body.rerank).toBe('skipped');
      const names = timingNames(res.headers.get('server-timing'));
      expect(names).toEqual(mode === 'semantic' ? ['embed', 'db'] : ['embed', 'db', 'rank']);
      expect(res.headers.get('server-timing')).toMatch(/^embed;dur=\d+\.\d, db;dur=\d+\.\d/);
    }
  });
});

describe('a reranker’s answer', () => {
  const ai = (response: unknown) => ({ run: async () => ({ response }) });
  it('keeps relevance in [0,1] and maps raw scores (logits) through the logistic function, keeping their order', async () => {
    const kept = await rerankWithin(
      workersAiReranker(
        ai([
          { id: 1, score: 0.9 },
          { id: 0, score: 0.2 },
        ]),
        'm',
      ),
      'q',
      ['a', 'b'],
      1000,
    );
    expect('scores' in kept && [...kept.scores]).toEqual([
      [1, 0.9],
      [0, 0.2],
    ]);
    const raw = await rerankWithin(
      workersAiReranker(
        ai([
          { id: 0, score: 3.2 },
          { id: 1, score: -1.5 },
        ]),
        'm',
      ),
      'q',
      ['a', 'b'],
      1000,
    );
    expect('scores' in raw).toBe(true);
    const scores = 'scores' in raw ? raw.scores : new Map<number, number>();
    expect(scores.get(0)).toBeCloseTo(1 / (1 + Math.exp(-3.2)), 9);
    expect(scores.get(0)! > scores.get(1)!).toBe(true);
    expect(scores.get(1)! > 0).toBe(true);
  });

  it.each([
    [
      'an index twice',
      [
        { id: 0, score: 0.5 },
        { id: 0, score: 0.4 },
      ],
    ],
    ['an index out of range', [{ id: 2, score: 0.5 }]],
    ['a score that is not a number', [{ id: 0, score: 'high' }]],
    ['no list', { id: 0 }],
  ])('is a failure with %s', async (_what, response) => {
    const answer = await rerankWithin(workersAiReranker(ai(response), 'm'), 'q', ['a', 'b'], 1000);
    expect('failure' in answer).toBe(true);
  });
});
