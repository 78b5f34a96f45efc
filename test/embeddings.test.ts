import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hashEmbedder } from '../shared/memory/embeddings';
import { createEngine, errorOf } from './harness';

/**
 * A local OpenAI-compatible embeddings endpoint: 384-d vectors from the hash embedder (truncated),
 * answering with `status` when set. Records each request.
 */
let server: Server;
let baseUrl: string;
let status = 200;
/** What the endpoint puts where each vector belongs: the vector, or a null (a broken provider). */
let answer: 'vectors' | 'nulls' = 'vectors';
const requests: { auth?: string; body: { model: string; input: string[]; dimensions: number } }[] = [];

beforeAll(async () => {
  const hash = hashEmbedder();
  server = createServer((req, res) => {
    let raw = '';
    req.on('data', (c) => (raw += c));
    req.on('end', async () => {
      const body = JSON.parse(raw);
      requests.push({ auth: req.headers.authorization, body });
      if (status !== 200) {
        res.writeHead(status).end('{"error":"nope"}');
        return;
      }
      const vectors = await hash.embed(body.input);
      // Answer out of order: the client must sort by index.
      const data = vectors.map((v, index) => ({ object: 'embedding', index, embedding: answer === 'nulls' ? null : v.slice(0, 384) })).reverse();
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ object: 'list', data, model: body.model }));
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
});
afterAll(() => new Promise((r) => server.close(r)));

describe('OpenAI-compatible provider', () => {
  it('stores and searches through the remote endpoint, zero-padding 384-d vectors', async () => {
    const engine = await createEngine({
      env: {
        EMBEDDING_PROVIDER: 'openai',
        EMBEDDING_BASE_URL: baseUrl,
        EMBEDDING_API_KEY: 'sk-local',
        EMBEDDING_MODEL: 'bge-small',
        EMBEDDING_DIMENSIONS: '384',
      },
    });
    try {
      const t = await engine.newTenant();
      for (const observation of ['Mount Everest is the highest mountain.', 'Bananas are rich in potassium.']) {
        expect((await engine.request('POST', '/v1/memories', { key: t.key, body: { observation } })).status).toBe(201);
      }
      const res = await engine.request('GET', '/v1/memories/search?q=highest%20mountain', { key: t.key });
      expect(res.body.memories[0].observation).toMatch(/Everest/);
      expect(res.body.memories[0].similarity).toBeGreaterThan(res.body.memories[1].similarity);
      const last = requests.at(-1)!;
      expect(last.auth).toBe('Bearer sk-local');
      expect(last.body).toEqual({ model: 'bge-small', input: ['highest mountain'], dimensions: 384 });

      status = 500;
      const down = await engine.request('POST', '/v1/memories', { key: t.key, body: { observation: 'not stored' } });
      expect(down.status).toBe(503);
      status = 400;
      const refused = await engine.request('POST', '/v1/memories', { key: t.key, body: { observation: 'not stored' } });
      expect(refused.status).toBe(502);
      expect(errorOf(refused).code).toBe('UPSTREAM_ERROR');
      status = 200;
      answer = 'nulls';
      const broken = await engine.request('POST', '/v1/memories', { key: t.key, body: { observation: 'not stored' } });
      expect(broken.status).toBe(502);
      expect(errorOf(broken).code).toBe('UPSTREAM_ERROR');
      expect((await engine.request('GET', '/v1/memories', { key: t.key })).body.total).toBe(2);
    } finally {
      status = 200;
      answer = 'vectors';
      await engine.close();
    }
  });
});

describe('offline Universal Sentence Encoder (the embedded default)', () => {
  it('ranks a paraphrase above an unrelated memory', async () => {
    const engine = await createEngine({ env: { EMBEDDING_PROVIDER: 'use' } });
    try {
      const t = await engine.newTenant();
      for (const observation of ['I forgot my login credentials and need to change them.', 'The recipe calls for two cups of flour and an egg.']) {
        await engine.request('POST', '/v1/memories', { key: t.key, body: { observation, auto_link: false } });
      }
      const res = await engine.request('GET', '/v1/memories/search?q=How%20do%20I%20reset%20my%20account%20password%3F&limit=2', { key: t.key });
      expect(res.body.memories[0].observation).toMatch(/login credentials/);
      expect(res.body.memories[0].similarity).toBeGreaterThan(0.45);
      expect(res.body.memories[1].similarity).toBeLessThan(0.25);
    } finally {
      await engine.close();
    }
  }, 60_000);
});
