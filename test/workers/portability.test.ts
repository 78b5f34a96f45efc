import { env } from 'cloudflare:workers';
import { beforeAll, describe, expect, it } from 'vitest';
import { type RequestOptions, testClient } from '../client';
import worker from '../../functions/worker';

/**
 * Portability inside workerd: the bundle streams with its SHA-256 trailer (@noble/hashes, no Node
 * crypto), and imports into another account through the batch store path.
 */
const bindings = env as unknown as Record<string, string>;
const pending: Promise<unknown>[] = [];
const ctx = { waitUntil: (p: Promise<unknown>) => void pending.push(p), passThroughOnException() {}, props: {} } as unknown as ExecutionContext;
const request = testClient((req) => worker.fetch(req, bindings, ctx), { base: 'https://engram.test' });
const call = async <T = never, M extends string = string, P extends string = string>(method: M, path: P, opts: RequestOptions = {}) => {
  const res = await request<T, M, P>(method, path, opts);
  await Promise.all(pending.splice(0));
  return res;
};

const newKey = async () => {
  const res = await call('POST', '/admin/v1/tenants', {
    key: bindings.ADMIN_TOKEN,
    body: { email: `portability-${crypto.randomUUID().slice(0, 12)}@example.com`, tier: 'pro' },
  });
  expect(res.status, res.text).toBe(201);
  return res.body.api_key as string;
};

let source = '';
let target = '';
beforeAll(async () => {
  source = await newKey();
  target = await newKey();
});

describe('worker in workerd: bundle export and import', () => {
  it('exports a bundle whose trailer verifies, and imports it once', async () => {
    for (const observation of ['workerd bundle one', 'workerd bundle two'])
      expect((await call('POST', '/v1/memories', { key: source, body: { observation, tags: ['wd'], auto_link: false } })).status).toBe(201);
    const bundle = await call('GET', '/v1/export/bundle', { key: source });
    expect(bundle.status, bundle.text).toBe(200);
    const lines = bundle.text.trimEnd().split('\n');
    const trailer = JSON.parse(lines.at(-1)!) as { lines: number; sha256: string };
    const before = bundle.text.slice(0, bundle.text.length - lines.at(-1)!.length - 1);
    const digest = [...new Uint8Array(await crypto.subtle.digest('SHA-256', new TextEncoder().encode(before)))]
      .map((b) => b.toString(16).padStart(2, '0'))
      .join('');
    expect(trailer).toMatchObject({ lines: lines.length - 1, sha256: digest });

    const send = () => call('POST', '/v1/import?format=bundle', { key: target, raw: bundle.text, headers: { 'content-type': 'application/x-ndjson' } });
    const first = await send();
    expect(first.status, first.text).toBe(200);
    expect(first.body).toMatchObject({ stored: { memory: 2 }, errors: [] });
    const again = await send();
    expect(again.body).toMatchObject({ stored: { memory: 0 }, already_imported: 2 });
  });
});
