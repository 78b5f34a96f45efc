import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openAiEmbedder } from '../shared/memory/embeddings';
import { type EmbeddingsServer, startEmbeddingsServer } from './standins/embeddings-server';
import { createEngine, type TestEngine } from './harness';

/**
 * The development stand-in behind `npm run worker:dev`: the offline Universal Sentence Encoder
 * behind an OpenAI-compatible /v1/embeddings, used here through the product's `openai` provider.
 */
let server: EmbeddingsServer;
let engine: TestEngine;
beforeAll(async () => {
  server = await startEmbeddingsServer();
  engine = await createEngine({
    env: { EMBEDDING_PROVIDER: 'openai', EMBEDDING_BASE_URL: server.url, EMBEDDING_MODEL: 'universal-sentence-encoder-lite', EMBEDDING_DIMENSIONS: '512' },
  });
});
afterAll(async () => {
  await engine?.close();
  await server?.close();
});

describe('local OpenAI-compatible embeddings server', () => {
  it('answers in the OpenAI shape, 512-d, in input order', async () => {
    const res = await fetch(`${server.url}/embeddings`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'universal-sentence-encoder-lite', input: ['first text', 'second text'] }),
    });
    expect(res.status).toBe(200);
    const body = (await res.json()) as any;
    expect(body.object).toBe('list');
    expect(body.data.map((d: { index: number }) => d.index)).toEqual([0, 1]);
    expect(body.data[0].embedding).toHaveLength(512);
    const direct = await openAiEmbedder({ baseUrl: server.url, model: 'universal-sentence-encoder-lite', dimension: 512 }).embed(['second text']);
    expect(direct[0][0]).toBeCloseTo(body.data[1].embedding[0], 5);
  });

  it('refuses what it cannot serve with 400', async () => {
    const post = (body: unknown) =>
      fetch(`${server.url}/embeddings`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
    expect((await post({ input: [] })).status).toBe(400);
    expect((await post({ input: ['x'], dimensions: 384 })).status).toBe(400);
  });

  it('semantic search through it finds meaning, not shared words', async () => {
    const t = await engine.newTenant();
    for (const observation of [
      'The billing agent prefers invoices in euros',
      'Deploys run every Tuesday after the standup',
      'The office cat sleeps on the warm windowsill',
    ]) {
      expect((await engine.request('POST', '/v1/memories', { key: t.key, body: { observation } })).status).toBe(201);
    }
    const res = await engine.request('GET', '/v1/memories/search?q=which%20currency%20should%20bills%20use&mode=semantic', { key: t.key });
    expect(res.status, res.text).toBe(200);
    expect(res.body.memories[0].observation).toBe('The billing agent prefers invoices in euros');
  });
});
