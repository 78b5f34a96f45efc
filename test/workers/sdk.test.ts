import { env, exports } from 'cloudflare:workers';
import { beforeAll, describe, expect, it } from 'vitest';
import { Engram, EngramError, verifyTraceCertificate } from '../../sdk/src/index';
import { uniqueEmail } from '../client';

/**
 * engram-sdk inside workerd against the worker's own fetch handler: the SDK's fetch and WebCrypto
 * paths on the Workers runtime (store, search, an error, a trace certificate verified offline).
 */
const worker = (exports as unknown as { default: { fetch(req: Request): Promise<Response> } }).default;
const bindings = env as unknown as Record<string, string>;
const BASE = 'https://engram.test';
const fetchWorker = (url: string, init: RequestInit) => worker.fetch(new Request(url, init));

describe('engram-sdk in workerd', () => {
  let engram: Engram;
  beforeAll(async () => {
    const admin = new Engram({ apiKey: bindings.ADMIN_TOKEN, baseUrl: BASE, fetch: fetchWorker });
    const tenant = await admin.admin.createTenant({ email: uniqueEmail('sdk-workerd'), tier: 'pro' });
    engram = new Engram({ apiKey: tenant.api_key, baseUrl: BASE, fetch: fetchWorker });
  });

  it('stores and searches', async () => {
    const stored = await engram.memories.store({ observation: 'The workerd SDK tenant drinks flat whites', tags: ['coffee'] });
    const found = await engram.memories.search({ q: 'flat white coffee', mode: 'hybrid' });
    expect(found.memories.map((m) => m.uuid)).toContain(stored.uuid);
    expect((await engram.memories.list({ tags: 'coffee' }).toArray()).map((m) => m.uuid)).toEqual([stored.uuid]);
  });

  it('maps an API error to EngramError', async () => {
    const err = await engram.memories.get('urn:uuid:00000000-0000-7000-8000-000000000000').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(EngramError);
    expect(err).toMatchObject({ status: 404, code: 'NOT_FOUND' });
    expect((err as EngramError).requestId).toBeTruthy();
  });

  it('verifies a trace certificate offline with WebCrypto', async () => {
    const { trace_id } = await engram.traces.start({ agent_id: 'workerd-sdk' });
    await engram.traces.addStep(trace_id, { type: 'THOUGHT', content: 'check the signature in workerd' });
    await engram.traces.complete(trace_id);
    const certificate = await engram.traces.certificate(trace_id);
    const { public_key } = await engram.traces.publicKey();
    expect((await verifyTraceCertificate(certificate, { publicKey: public_key })).valid).toBe(true);
    expect((await verifyTraceCertificate({ ...certificate, integrity_root_hash: '0'.repeat(64) })).valid).toBe(false);
  });
});
