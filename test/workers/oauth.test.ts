import { env } from 'cloudflare:workers';
import { describe, expect, it } from 'vitest';
import { testClient } from '../client';
import { csrfIn, signIn } from '../console-session';
import worker from '../../functions/worker';

/** MCP sign-in inside workerd: the metadata documents, a registered client, consent, a token exchange and a tool list with the token. */
const bindings = env as unknown as Record<string, string>;
const pending: Promise<unknown>[] = [];
const ctx = { waitUntil: (p: Promise<unknown>) => void pending.push(p), passThroughOnException() {}, props: {} } as unknown as ExecutionContext;
const send = async (req: Request) => {
  const res = await worker.fetch(req, bindings, ctx);
  const body = await res.arrayBuffer();
  await Promise.all(pending.splice(0));
  return new Response(res.status === 204 || res.status === 302 || res.status === 303 ? null : body, res);
};
const BASE = 'https://engram.test';
const request = testClient(send, { base: BASE });
const REDIRECT = 'http://127.0.0.1:9/callback';

const b64url = (bytes: ArrayBuffer | Uint8Array) =>
  btoa(String.fromCharCode(...new Uint8Array(bytes)))
    .replace(/\+/g, '-')
    .replace(/\//g, '_')
    .replace(/=+$/, '');

describe('worker in workerd: OAuth sign-in for /mcp', () => {
  it('publishes the metadata, registers a client, and a consented code becomes a token /mcp accepts', async () => {
    const issuer = bindings.PUBLIC_URL.replace(/\/+$/, '');
    const meta = await send(new Request(`${BASE}/.well-known/oauth-authorization-server`));
    expect(await meta.json()).toMatchObject({ issuer, token_endpoint: `${issuer}/oauth/token`, code_challenge_methods_supported: ['S256'] });

    const registered = await send(
      new Request(`${BASE}/oauth/register`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ client_name: 'workerd host', redirect_uris: [REDIRECT] }),
      }),
    );
    expect(registered.status).toBe(201);
    const { client_id } = (await registered.json()) as { client_id: string };

    const email = `oauth-${crypto.randomUUID().slice(0, 12)}@example.com`;
    const tenant = await request('POST', '/admin/v1/tenants', { key: bindings.ADMIN_TOKEN, body: { email, tier: 'pro' } });
    expect(tenant.status, tenant.text).toBe(201);
    const visitor = await signIn(send, tenant.body.api_key as string, BASE);

    const verifier = b64url(crypto.getRandomValues(new Uint8Array(32)));
    const challenge = b64url(await crypto.subtle.digest('SHA-256', new TextEncoder().encode(verifier)));
    const query = new URLSearchParams({
      client_id,
      redirect_uri: REDIRECT,
      response_type: 'code',
      code_challenge: challenge,
      code_challenge_method: 'S256',
      state: 'w',
      resource: `${issuer}/mcp`,
    });
    const page = await visitor.get(`/console/oauth/authorize?${query}`);
    expect(page.status).toBe(200);
    const html = await page.text();
    const hidden = Object.fromEntries([...html.matchAll(/<input type="hidden" name="(\w+)" value="([^"]*)"/g)].map((m) => [m[1], m[2].replace(/&amp;/g, '&')]));
    const approved = await visitor.post('/console/oauth/authorize', {
      ...hidden,
      _csrf: csrfIn(html),
      decision: 'approve',
      scope_memories: 'write',
      expires: '1',
    });
    expect(approved.status).toBe(303);
    const code = new URL(approved.headers.get('location')!).searchParams.get('code')!;

    const token = await send(
      new Request(`${BASE}/oauth/token`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({
          grant_type: 'authorization_code',
          code,
          code_verifier: verifier,
          redirect_uri: REDIRECT,
          client_id,
          resource: `${issuer}/mcp`,
        }),
      }),
    );
    const tokens = (await token.json()) as { access_token: string };
    expect(token.status, JSON.stringify(tokens)).toBe(200);
    const listed = await send(
      new Request(`${BASE}/mcp`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', authorization: `Bearer ${tokens.access_token}` },
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
      }),
    );
    expect(listed.status).toBe(200);
  });
});
