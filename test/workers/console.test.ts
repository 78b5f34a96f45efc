import { env } from 'cloudflare:workers';
import { describe, expect, it } from 'vitest';
import { testClient } from '../client';
import { signIn } from '../console-session';
import worker from '../../functions/worker';

/** The console inside workerd: sign in with a key, see the inbox with a pending action, its assets served. */
const bindings = env as unknown as Record<string, string>;
const pending: Promise<unknown>[] = [];
const ctx = { waitUntil: (p: Promise<unknown>) => void pending.push(p), passThroughOnException() {}, props: {} } as unknown as ExecutionContext;
/** The worker's answer, read to its end before the work it left running (waitUntil) is awaited. */
const send = async (req: Request) => {
  const res = await worker.fetch(req, bindings, ctx);
  const body = await res.arrayBuffer();
  await Promise.all(pending.splice(0));
  return new Response(res.status === 204 ? null : body, res);
};
const request = testClient(send, { base: 'https://engram.test' });

describe('worker in workerd: the console', () => {
  it('signs in with a key and shows the inbox', async () => {
    const email = `console-${crypto.randomUUID().slice(0, 12)}@example.com`;
    const tenant = await request('POST', '/admin/v1/tenants', { key: bindings.ADMIN_TOKEN, body: { email, tier: 'pro' } });
    expect(tenant.status, tenant.text).toBe(201);
    const key = tenant.body.api_key as string;
    const held = await request('POST', '/v1/actions', {
      key,
      body: { action: 'http.post', params: { url: 'https://bank.example/wire', amount: 250000, memo: 'wire transfer' } },
    });
    expect(held.body.status).toBe('pending_review');

    const visitor = await signIn(send, key, 'https://engram.test');
    expect(visitor.cookie).toMatch(/^engram_console=/);
    const inbox = await visitor.get('/console/approvals');
    expect(inbox.status).toBe(200);
    expect(inbox.headers.get('content-security-policy')).toContain("default-src 'self'");
    const html = await inbox.text();
    expect(html).toContain(`card-${held.body.action_id}`);
    expect(html).toContain('Type ROLLBACK to confirm approving <code>http.post</code>');

    const style = /href="(\/console\/assets\/[^"]+\.css)"/.exec(html)![1];
    const htmx = /src="(\/console\/assets\/htmx-2[^"]+)"/.exec(html)![1];
    for (const path of [style, htmx]) expect((await send(new Request(`https://engram.test${path}`))).status, path).toBe(200);

    const out = await visitor.post('/console/sign-out', { _csrf: visitor.csrf });
    expect(out.status).toBe(303);
    expect((await visitor.get('/console/approvals')).headers.get('location')).toBe('/console/sign-in');
  });
});
