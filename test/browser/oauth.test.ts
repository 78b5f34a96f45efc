import { createServer, type Server } from 'node:http';
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
import { type Browser, chromium } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ServerProcess, startServer, stopServer } from '../server-process';

/**
 * MCP sign-in as a person does it: the official MCP client's OAuth support sends Debian's headless
 * Chromium to the authorization URL; the person signs in to the console with their key, picks a
 * scope on the consent page and approves; the browser lands on the host's loopback callback, whose
 * code the client exchanges, then calls a tool with the token.
 */
const ADMIN_TOKEN = 'browser-admin-token-0123456789';

let server: ServerProcess;
let browser: Browser;
let callback: Server;
let redirectUrl: string;
const codes: URL[] = [];

class BrowserProvider implements OAuthClientProvider {
  client?: OAuthClientInformationMixed;
  saved?: OAuthTokens;
  verifier = '';
  discovery?: OAuthDiscoveryState;
  authorizationUrl?: URL;
  get redirectUrl() {
    return redirectUrl;
  }
  get clientMetadata(): OAuthClientMetadata {
    return { client_name: 'Browser MCP host', redirect_uris: [redirectUrl], token_endpoint_auth_method: 'none' };
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
  saveDiscoveryState(state: OAuthDiscoveryState) {
    this.discovery = state;
  }
  discoveryState() {
    return this.discovery;
  }
}

beforeAll(async () => {
  callback = createServer((req, res) => {
    codes.push(new URL(req.url ?? '/', redirectUrl));
    res.writeHead(200, { 'content-type': 'text/plain' }).end('You can close this window.');
  });
  await new Promise<void>((r) => callback.listen(0, '127.0.0.1', r));
  redirectUrl = `http://127.0.0.1:${(callback.address() as AddressInfo).port}/callback`;
  server = await startServer({ ADMIN_TOKEN, DATA_DIR: 'memory://', EMBEDDING_PROVIDER: 'hash', LOG_LEVEL: 'warn' }, { timeoutMs: 90_000 });
  browser = await chromium.launch({
    executablePath: '/usr/bin/chromium',
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
});

afterAll(async () => {
  await browser?.close();
  if (server) await stopServer(server);
  await new Promise((r) => callback?.close(r));
});

describe('MCP sign-in in a browser', () => {
  it('the official client signs in through the console consent page in Chromium and calls a tool', async () => {
    const created = await fetch(`${server.base}/admin/v1/tenants`, {
      method: 'POST',
      headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify({ email: 'oauth-browser@example.com', tier: 'pro' }),
    });
    const key = ((await created.json()) as { api_key: string }).api_key;

    const provider = new BrowserProvider();
    const mcpUrl = new URL(`${server.base}/mcp`);
    await expect(
      new Client({ name: 'browser-host', version: '1.0.0' }).connect(new StreamableHTTPClientTransport(mcpUrl, { authProvider: provider })),
    ).rejects.toBeInstanceOf(UnauthorizedError);

    const context = await browser.newContext();
    const page = await context.newPage();
    await page.goto(provider.authorizationUrl!.toString());
    expect(new URL(page.url()).pathname).toBe('/console/sign-in');
    await page.getByLabel('API key').fill(key);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.waitForURL('**/console/oauth/authorize?**');
    expect(await page.getByRole('heading', { level: 1 }).textContent()).toContain('Browser MCP host');
    await page.getByLabel('memories').selectOption('write');
    await page.getByRole('button', { name: 'Approve' }).click();
    await page.waitForURL(`${redirectUrl}?**`);
    await context.close();

    const back = codes.filter((u) => u.pathname === '/callback').at(-1)!; // not the browser's favicon request
    expect(back.searchParams.get('iss')).toBe(server.base);
    await new StreamableHTTPClientTransport(mcpUrl, { authProvider: provider }).finishAuth(
      back.searchParams.get('code')!,
      back.searchParams.get('iss') ?? undefined,
    );
    const client = new Client({ name: 'browser-host', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(mcpUrl, { authProvider: provider }));
    try {
      const stored = (await client.callTool({ name: 'remember', arguments: { observation: 'Approved in a browser' } })) as { isError?: boolean };
      expect(stored.isError, JSON.stringify(stored)).toBeFalsy();
    } finally {
      await client.close();
    }
  });
});
