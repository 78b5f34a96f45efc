import { createHash, randomBytes } from 'node:crypto';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  Client,
  type OAuthClientInformationMixed,
  type OAuthClientMetadata,
  type OAuthClientProvider,
  type OAuthDiscoveryState,
  type OAuthTokens,
  StreamableHTTPClientTransport,
  UnauthorizedError,
} from '@modelcontextprotocol/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { listen } from '../shared/node/http-server';
import { type ConsoleVisitor, csrfIn, signIn } from './console-session';
import { createEngine, type Tenant, type TestEngine } from './harness';

const REDIRECT = 'http://127.0.0.1:9/callback';

/** An MCP host as the official client sees it: it stores what the SDK hands it and records where it was sent to sign in. */
class TestProvider implements OAuthClientProvider {
  client?: OAuthClientInformationMixed;
  saved?: OAuthTokens;
  verifier = '';
  authorizationUrl?: URL;
  get redirectUrl() {
    return REDIRECT;
  }
  get clientMetadata(): OAuthClientMetadata {
    return {
      client_name: 'Test MCP host',
      redirect_uris: [REDIRECT],
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: 'none',
    };
  }
  state() {
    return 'state-123';
  }
  clientInformation() {
    return this.client;
  }
  saveClientInformation(info: OAuthClientInformationMixed) {
    this.client = info;
  }
  tokens() {
    return this.saved;
  }
  saveTokens(tokens: OAuthTokens) {
    this.saved = tokens;
  }
  redirectToAuthorization(url: URL) {
    this.authorizationUrl = url;
  }
  saveCodeVerifier(verifier: string) {
    this.verifier = verifier;
  }
  codeVerifier() {
    return this.verifier;
  }
  discovery?: OAuthDiscoveryState;
  saveDiscoveryState(state: OAuthDiscoveryState) {
    this.discovery = state;
  }
  discoveryState() {
    return this.discovery;
  }
}

const pkce = () => {
  const verifier = randomBytes(32).toString('base64url');
  return { verifier, challenge: createHash('sha256').update(verifier).digest('base64url') };
};

describe('MCP sign-in with OAuth 2.1 (engram as its own authorization server)', () => {
  let e: TestEngine;
  let server: Server;
  let base: string;
  let owner: Tenant;
  let visitor: ConsoleVisitor;
  let clientId: string;
  const http = (request: Request) => fetch(request);

  const form = (fields: Record<string, string>) => ({
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams(fields).toString(),
  });
  const tokenCall = async (fields: Record<string, string>) => {
    const res = await fetch(`${base}/oauth/token`, form(fields));
    return { status: res.status, body: (await res.json()) as Record<string, string | number> };
  };
  const mcpList = (token: string) =>
    fetch(`${base}/mcp`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', authorization: `Bearer ${token}` },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
    });

  /** The consent page for an authorization URL, approved (or denied) as the person would; answers the redirect. */
  async function consent(authorizationUrl: string, choice: Record<string, string> = { all_scopes: '1' }, who = visitor) {
    const first = await fetch(authorizationUrl, { redirect: 'manual' });
    expect(first.status).toBe(302);
    const pageUrl = new URL(first.headers.get('location')!, base);
    const page = await who.get(`${pageUrl.pathname}${pageUrl.search}`);
    if (page.status !== 200) return page;
    const html = await page.text();
    expect(html).toContain('Connect ');
    const hidden = Object.fromEntries([...html.matchAll(/<input type="hidden" name="(\w+)" value="([^"]*)"/g)].map((m) => [m[1], m[2].replace(/&amp;/g, '&')]));
    return who.post('/console/oauth/authorize', { ...hidden, _csrf: csrfIn(html), decision: 'approve', expires: '30', ...choice });
  }

  const authorizeUrl = (params: Record<string, string>) => `${base}/oauth/authorize?${new URLSearchParams(params)}`;

  /** A code for the registered client, through the consent page. */
  async function codeFor(challenge: string, choice?: Record<string, string>) {
    const res = await consent(
      authorizeUrl({
        client_id: clientId,
        redirect_uri: REDIRECT,
        response_type: 'code',
        code_challenge: challenge,
        code_challenge_method: 'S256',
        state: 's1',
        resource: `${base}/mcp`,
      }),
      choice,
    );
    expect(res.status).toBe(303);
    const back = new URL(res.headers.get('location')!);
    expect(back.searchParams.get('state')).toBe('s1');
    expect(back.searchParams.get('iss')).toBe(base);
    return back.searchParams.get('code')!;
  }

  async function tokensFor(choice?: Record<string, string>) {
    const { verifier, challenge } = pkce();
    const code = await codeFor(challenge, choice);
    const res = await tokenCall({
      grant_type: 'authorization_code',
      code,
      code_verifier: verifier,
      redirect_uri: REDIRECT,
      client_id: clientId,
      resource: `${base}/mcp`,
    });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    return res.body as { access_token: string; refresh_token: string; expires_in: number; scope: string };
  }

  beforeAll(async () => {
    e = await createEngine();
    ({ server } = await listen(e.app.fetch, { host: '127.0.0.1', port: 0 }));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    owner = await e.newTenant('pro');
    visitor = await signIn(http, owner.key, base);
    const registered = await fetch(`${base}/oauth/register`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ client_name: 'Direct client', redirect_uris: [REDIRECT] }),
    });
    expect(registered.status).toBe(201);
    clientId = ((await registered.json()) as { client_id: string }).client_id;
  });
  afterAll(async () => {
    await new Promise((r) => server?.close(r));
    await e?.close();
  });

  it('publishes protected-resource and authorization-server metadata naming this server, from the listening address', async () => {
    for (const path of ['/.well-known/oauth-protected-resource', '/.well-known/oauth-protected-resource/mcp']) {
      const prm = (await (await fetch(`${base}${path}`, { headers: { host: 'evil.example' } })).json()) as Record<string, unknown>;
      expect(prm).toMatchObject({ resource: `${base}/mcp`, authorization_servers: [base] });
    }
    const as = (await (await fetch(`${base}/.well-known/oauth-authorization-server`)).json()) as Record<string, unknown>;
    expect(as).toMatchObject({
      issuer: base,
      authorization_endpoint: `${base}/oauth/authorize`,
      token_endpoint: `${base}/oauth/token`,
      registration_endpoint: `${base}/oauth/register`,
      revocation_endpoint: `${base}/oauth/revoke`,
      code_challenge_methods_supported: ['S256'],
      grant_types_supported: ['authorization_code', 'refresh_token'],
      token_endpoint_auth_methods_supported: ['none'],
      client_id_metadata_document_supported: true,
    });
  });

  it('the official MCP client signs in (registration, consent, PKCE, resource) and calls tools with the issued token', async () => {
    const provider = new TestProvider();
    const first = new Client({ name: 'oauth-test', version: '1.0.0' });
    await expect(first.connect(new StreamableHTTPClientTransport(new URL(`${base}/mcp`), { authProvider: provider }))).rejects.toBeInstanceOf(
      UnauthorizedError,
    );
    const url = provider.authorizationUrl!;
    expect(url.searchParams.get('code_challenge_method')).toBe('S256');
    expect(url.searchParams.get('resource')).toBe(`${base}/mcp`);

    // Not signed in: sign-in first, then back to the consent page.
    const fresh = await fetch(url, { redirect: 'manual' });
    const anonymous = await fetch(new URL(fresh.headers.get('location')!, base), { redirect: 'manual' });
    expect(anonymous.status).toBe(303);
    const signInAt = new URL(anonymous.headers.get('location')!, base);
    expect(signInAt.pathname).toBe('/console/sign-in');
    expect(signInAt.searchParams.get('next')).toMatch(/^\/console\/oauth\/authorize\?/);
    const signedIn = await fetch(`${base}/console/sign-in`, {
      ...form({ api_key: owner.key, next: signInAt.searchParams.get('next')! }),
      redirect: 'manual',
    });
    expect(signedIn.status).toBe(303);
    expect(signedIn.headers.get('location')).toBe(signInAt.searchParams.get('next'));

    const approved = await consent(url.toString(), { scope_memories: 'write' });
    expect(approved.status).toBe(303);
    const back = new URL(approved.headers.get('location')!);
    expect(`${back.origin}${back.pathname}`).toBe(REDIRECT);
    expect(back.searchParams.get('state')).toBe('state-123');
    const transport = new StreamableHTTPClientTransport(new URL(`${base}/mcp`), { authProvider: provider });
    await transport.finishAuth(back.searchParams.get('code')!, back.searchParams.get('iss') ?? undefined);
    expect(provider.saved?.access_token).toMatch(/^eat_/);
    expect(provider.saved?.refresh_token).toMatch(/^ert_/);

    const client = new Client({ name: 'oauth-test', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(`${base}/mcp`), { authProvider: provider }));
    try {
      const stored = (await client.callTool({ name: 'remember', arguments: { observation: 'Signed in over OAuth' } })) as { isError?: boolean };
      expect(stored.isError, JSON.stringify(stored)).toBeFalsy();
      // The grant is a restricted key: memories only, so another family's tool is refused.
      const names = (await client.listTools()).tools.map((t) => t.name);
      expect(names).toContain('recall');
      expect(names).not.toContain('rollback');
    } finally {
      await client.close();
    }
  });

  it('an access token works like its restricted key on the API too, and API keys keep working on /mcp', async () => {
    const tokens = await tokensFor({ scope_memories: 'read' });
    expect(tokens.scope).toBe('memories:read');
    expect(tokens.expires_in).toBe(3600);
    expect((await e.request('GET', '/v1/memories', { key: tokens.access_token })).status).toBe(200);
    const refused = await e.request('POST', '/v1/memories', { key: tokens.access_token, body: { observation: 'x' } });
    expect(refused.status).toBe(403);
    expect((refused.body as unknown as { required_scope: string }).required_scope).toBe('memories:write');
    expect((await mcpList(owner.key)).status).toBe(200);
  });

  it('refresh rotates: the new tokens work, the old access token stops, a used refresh token is refused and revokes the grant', async () => {
    const tokens = await tokensFor();
    const refreshed = await tokenCall({ grant_type: 'refresh_token', refresh_token: tokens.refresh_token, client_id: clientId });
    expect(refreshed.status).toBe(200);
    expect(refreshed.body.refresh_token).not.toBe(tokens.refresh_token);
    expect((await mcpList(refreshed.body.access_token as string)).status).toBe(200);
    const old = await mcpList(tokens.access_token);
    expect(old.status).toBe(401);
    expect(old.headers.get('www-authenticate')).toBe(`Bearer error="invalid_token", resource_metadata="${base}/.well-known/oauth-protected-resource"`);

    const replay = await tokenCall({ grant_type: 'refresh_token', refresh_token: tokens.refresh_token, client_id: clientId });
    expect(replay).toMatchObject({ status: 400, body: { error: 'invalid_grant' } });
    expect((await mcpList(refreshed.body.access_token as string)).status).toBe(401);
  });

  it('revocation (RFC 7009) ends the grant: its access token answers 401 invalid_token with a body that says so', async () => {
    const tokens = await tokensFor();
    const res = await fetch(`${base}/oauth/revoke`, form({ token: tokens.refresh_token, client_id: clientId }));
    expect(res.status).toBe(200);
    const after = await mcpList(tokens.access_token);
    expect(after.status).toBe(401);
    expect(after.headers.get('www-authenticate')).toContain('error="invalid_token"');
    expect(((await after.json()) as { message: string }).message).toMatch(/revoked/);
    expect((await tokenCall({ grant_type: 'refresh_token', refresh_token: tokens.refresh_token, client_id: clientId })).body.error).toBe('invalid_grant');
    // Unknown tokens answer the same 200 (RFC 7009 §2.2).
    expect((await fetch(`${base}/oauth/revoke`, form({ token: 'nothing' }))).status).toBe(200);
  });

  it('refuses a replayed code (and revokes what it made), a wrong PKCE verifier, a wrong resource, a mismatched redirect_uri, another client', async () => {
    const { verifier, challenge } = pkce();
    const code = await codeFor(challenge);
    const exchange = (fields: Record<string, string>) =>
      tokenCall({
        grant_type: 'authorization_code',
        code,
        code_verifier: verifier,
        redirect_uri: REDIRECT,
        client_id: clientId,
        resource: `${base}/mcp`,
        ...fields,
      });
    expect(await exchange({ code_verifier: pkce().verifier })).toMatchObject({ status: 400, body: { error: 'invalid_grant' } });
    expect(await exchange({ resource: 'https://elsewhere.example/mcp' })).toMatchObject({ status: 400, body: { error: 'invalid_target' } });
    expect(await exchange({ redirect_uri: 'http://127.0.0.1:9/other' })).toMatchObject({ status: 400, body: { error: 'invalid_grant' } });
    expect(await exchange({ client_id: 'oac_unknown' })).toMatchObject({ status: 400, body: { error: 'invalid_grant' } });
    expect(await tokenCall({ grant_type: 'password' })).toMatchObject({ status: 400, body: { error: 'unsupported_grant_type' } });
    const good = await exchange({});
    expect(good.status).toBe(200);
    expect(await exchange({})).toMatchObject({ status: 400, body: { error: 'invalid_grant' } });
    expect((await mcpList(good.body.access_token as string)).status).toBe(401);
  });

  it('authorization errors: before the redirect URI is trusted they are shown, never redirected; after, they go back with the RFC codes', async () => {
    const { challenge } = pkce();
    const params = {
      client_id: clientId,
      redirect_uri: REDIRECT,
      response_type: 'code',
      code_challenge: challenge,
      code_challenge_method: 'S256',
      state: 'st',
      resource: `${base}/mcp`,
    };
    for (const bad of [{ client_id: 'oac_unknown' }, { redirect_uri: 'https://attacker.example/cb' }]) {
      const first = await fetch(authorizeUrl({ ...params, ...bad }), { redirect: 'manual' });
      const at = new URL(first.headers.get('location')!, base);
      const page = await visitor.get(`${at.pathname}${at.search}`);
      expect(page.status).toBe(400);
      expect(page.headers.get('location')).toBeNull();
    }
    for (const [bad, error] of [
      [{ resource: 'https://elsewhere.example/mcp' }, 'invalid_target'],
      [{ code_challenge_method: 'plain' }, 'invalid_request'],
      [{ response_type: 'token' }, 'unsupported_response_type'],
    ] as const) {
      const first = await fetch(authorizeUrl({ ...params, ...bad }), { redirect: 'manual' });
      const at = new URL(first.headers.get('location')!, base);
      const res = await visitor.get(`${at.pathname}${at.search}`);
      expect(res.status).toBe(303);
      const back = new URL(res.headers.get('location')!);
      expect(back.searchParams.get('error')).toBe(error);
      expect(back.searchParams.get('state')).toBe('st');
    }
    // Deny: access_denied with the state.
    const denied = await consent(authorizeUrl(params), { decision: 'deny' });
    expect(new URL(denied.headers.get('location')!).searchParams.get('error')).toBe('access_denied');
  });

  it('registration refuses unsafe redirect URIs and client authentication other than none', async () => {
    const register = async (body: unknown) => {
      const res = await fetch(`${base}/oauth/register`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
      return { status: res.status, body: (await res.json()) as Record<string, string> };
    };
    expect(await register({ redirect_uris: ['http://attacker.example/cb'] })).toMatchObject({ status: 400, body: { error: 'invalid_redirect_uri' } });
    expect(await register({ redirect_uris: ['javascript:alert(1)'] })).toMatchObject({ status: 400, body: { error: 'invalid_redirect_uri' } });
    expect(await register({ redirect_uris: [REDIRECT], token_endpoint_auth_method: 'client_secret_basic' })).toMatchObject({
      status: 400,
      body: { error: 'invalid_client_metadata' },
    });
    expect((await register({ redirect_uris: ['cursor://anysphere.cursor-retrieval/oauth/callback'], client_name: 'Cursor' })).status).toBe(201);
  });

  it('grants are listed as connected apps, revoked there, and audited', async () => {
    const tokens = await tokensFor();
    const page = await visitor.get('/console/connected-apps');
    const html = await page.text();
    expect(html).toContain('Direct client');
    const grantIds = [...html.matchAll(/name="grant_id" value="([^"]+)"/g)].map((m) => m[1]);
    expect(grantIds.length).toBeGreaterThan(0);
    for (const grant_id of grantIds) {
      const res = await visitor.post('/console/connected-apps/revoke', { _csrf: visitor.csrf, grant_id });
      expect(res.status).toBe(303);
    }
    expect((await mcpList(tokens.access_token)).status).toBe(401);
    expect(await (await visitor.get('/console/connected-apps')).text()).toContain('No connected apps');
    const other = await e.newTenant('pro');
    const foreign = await (await signIn(http, other.key, base)).post('/console/connected-apps/revoke', { _csrf: visitor.csrf, grant_id: grantIds[0] });
    expect(foreign.status).toBe(403); // another session's CSRF token; with its own, the id is 404
    const audit = await e.request('GET', '/v1/audit?limit=200', { key: owner.key });
    const operations = new Set((audit.body.entries as { operation: string }[]).map((a) => a.operation));
    for (const op of ['oauth.grant_created', 'oauth.code_exchanged', 'oauth.token_refreshed', 'oauth.grant_revoked']) expect(operations).toContain(op);
  });
});

describe('Client ID Metadata Documents: the client id is the URL of its metadata, fetched under the outbound rules', () => {
  let e: TestEngine;
  let strict: TestEngine;
  let server: Server;
  let docs: Server;
  let base: string;
  let clientUrl: string;

  beforeAll(async () => {
    // Loopback is refused unless the development flag webhooks use is on; this engine has it.
    e = await createEngine({ env: { WEBHOOKS_ALLOW_INSECURE: '1' } });
    strict = await createEngine({ env: { PUBLIC_URL: 'https://engram.example.com' } });
    ({ server } = await listen(e.app.fetch, { host: '127.0.0.1', port: 0 }));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    ({ server: docs } = await listen(
      async (req) => {
        const self = req.url;
        return Response.json({ client_id: self, client_name: 'Metadata host', redirect_uris: [REDIRECT] });
      },
      { host: '127.0.0.1', port: 0 },
    ));
    clientUrl = `http://127.0.0.1:${(docs.address() as AddressInfo).port}/oauth/client.json`;
  });
  afterAll(async () => {
    await new Promise((r) => server?.close(r));
    await new Promise((r) => docs?.close(r));
    await e?.close();
    await strict?.close();
  });

  it('a metadata-document client signs in and exchanges its code; without the development flag a plain-http loopback document is refused on the page', async () => {
    const owner = await e.newTenant('pro');
    const visitor = await signIn((r) => fetch(r), owner.key, base);
    const { verifier, challenge } = pkce();
    const query = new URLSearchParams({
      client_id: clientUrl,
      redirect_uri: REDIRECT,
      response_type: 'code',
      code_challenge: challenge,
      code_challenge_method: 'S256',
      state: 'm',
      resource: `${base}/mcp`,
    });
    const page = await visitor.get(`/console/oauth/authorize?${query}`);
    const html = await page.text();
    expect(page.status, html).toBe(200);
    expect(html).toContain('Metadata host');
    const hidden = Object.fromEntries([...html.matchAll(/<input type="hidden" name="(\w+)" value="([^"]*)"/g)].map((m) => [m[1], m[2].replace(/&amp;/g, '&')]));
    const approved = await visitor.post('/console/oauth/authorize', {
      ...hidden,
      _csrf: csrfIn(html),
      decision: 'approve',
      scope_memories: 'read',
      expires: '1',
    });
    expect(approved.status).toBe(303);
    const code = new URL(approved.headers.get('location')!).searchParams.get('code')!;
    const res = await fetch(`${base}/oauth/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({
        grant_type: 'authorization_code',
        code,
        code_verifier: verifier,
        redirect_uri: REDIRECT,
        client_id: clientUrl,
        resource: `${base}/mcp`,
      }),
    });
    expect(res.status).toBe(200);

    const strictOwner = await strict.newTenant('pro');
    const strictVisitor = await signIn((r) => strict.app.request(r), strictOwner.key);
    query.set('resource', 'https://engram.example.com/mcp');
    const refused = await strict.app.request(`/console/oauth/authorize?${query}`, { headers: { cookie: strictVisitor.cookie }, redirect: 'manual' });
    expect(refused.status).toBe(400);
    expect(refused.headers.get('location')).toBeNull();
    expect(await refused.text()).toContain('must use https://');
  });
});
