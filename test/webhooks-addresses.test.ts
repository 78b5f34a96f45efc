import { createServer as createHttpServer, type IncomingHttpHeaders } from 'node:http';
import net from 'node:net';
import tls from 'node:tls';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fetchAt } from '../shared/node/fetch-at';
import { createEngine, errorOf, type TestEngine } from './harness';
import { testResolveHost } from './standins/dns';

/**
 * Where a webhook may connect. DNS rebinding during delivery: the address rule resolves the name and checks every
 * address; the connection must then go to an address that was checked, never to what the name
 * resolves to on a second lookup. Here the rule's resolver (the DNS stand-in) answers a public
 * address for `localhost`, while the system resolver, which a plain fetch would ask again, answers
 * loopback: a rebinding name in one line.
 */
const PUBLIC = '93.184.216.34';
let engine: TestEngine;
let loopback: net.Server;
let connections = 0;

beforeAll(async () => {
  loopback = net.createServer((socket) => {
    connections++;
    socket.destroy();
  });
  await new Promise<void>((r) => loopback.listen(0, '127.0.0.1', r));
  engine = await createEngine({
    resolveHost: async (name) => (name === 'localhost' ? [PUBLIC] : testResolveHost(name)),
    // Long enough for the first fetch of the process to get as far as connecting.
    env: { WEBHOOK_TIMEOUT_MS: '3000' },
  });
});
afterAll(async () => {
  await engine?.close();
  await new Promise<void>((r) => loopback.close(() => r()));
});

describe('webhook delivery and DNS rebinding', () => {
  it('connects to the address the rule checked, not to what the name resolves to again', async () => {
    const t = await engine.newTenant('pro');
    const port = (loopback.address() as net.AddressInfo).port;
    const hook = await engine.request('POST', '/v1/webhooks', { key: t.key, body: { url: `https://localhost:${port}/hook`, events: ['memory.created'] } });
    expect(hook.status, hook.text).toBe(201);
    await engine.request('POST', '/v1/memories', { key: t.key, body: { observation: 'rebinding attempt' } });
    await engine.node.runner.drain();
    const log = await engine.request('GET', `/v1/webhooks/${hook.body.webhook_id}/deliveries`, { key: t.key });
    expect(log.body.deliveries[0]).toMatchObject({ success: false });
    expect(connections).toBe(0);
  });
});

describe('webhook URLs that write a local IPv4 address in IPv6', () => {
  it('are refused with 422 naming url', async () => {
    const t = await engine.newTenant('pro');
    for (const url of ['https://[::127.0.0.1]/', 'https://[::ffff:7f00:1]/', 'https://[64:ff9b::169.254.169.254]/', 'https://[2002:a00:1::]/hook']) {
      const res = await engine.request('POST', '/v1/webhooks', { key: t.key, body: { url, events: ['memory.created'] } });
      expect(res.status, url).toBe(422);
      expect(errorOf(res).details, url).toEqual([{ path: 'url', message: expect.stringMatching(/loopback|private|linkLocal/) }]);
    }
  });
});

describe('fetchAt (Node)', () => {
  it('sends to the given address with the name in the Host header', async () => {
    let seen: { host?: string; address?: string; headers?: IncomingHttpHeaders; body?: string } = {};
    // All of 127/8 is loopback on Linux: 127.0.0.2 is an address the name never resolves to.
    const server = createHttpServer((req, res) => {
      let body = '';
      req.on('data', (c) => (body += c));
      req.on('end', () => {
        seen = { host: req.headers.host, address: req.socket.localAddress, headers: req.headers, body };
        res.writeHead(201, { 'x-answer': 'yes' }).end('stored');
      });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.2', r));
    const port = (server.address() as net.AddressInfo).port;
    try {
      const res = await fetchAt(`http://pinned.invalid:${port}/in?x=1`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"a":1}' }, [
        '127.0.0.2',
      ]);
      expect(res.status).toBe(201);
      expect(res.headers.get('x-answer')).toBe('yes');
      expect(await res.text()).toBe('stored');
      expect(seen).toMatchObject({ host: `pinned.invalid:${port}`, address: '127.0.0.2', body: '{"a":1}' });
      expect(seen.headers?.['content-type']).toBe('application/json');
    } finally {
      await new Promise<void>((r) => server.close(() => r()));
    }
  });

  it('keeps the name for TLS (SNI) while connecting to the address', async () => {
    let servername: string | null = null;
    const server = tls.createServer({
      SNICallback: (name, cb) => {
        servername = name;
        cb(new Error('no certificate here'));
      },
    });
    server.on('tlsClientError', () => undefined);
    await new Promise<void>((r) => server.listen(0, '127.0.0.2', r));
    const port = (server.address() as net.AddressInfo).port;
    try {
      await expect(fetchAt(`https://hooks.example.com:${port}/`, { method: 'POST', body: '{}' }, ['127.0.0.2'])).rejects.toThrow();
      expect(servername).toBe('hooks.example.com');
    } finally {
      await new Promise<void>((r) => server.close(() => r()));
    }
  });

  it('gives the abort reason when the signal fires, as fetch does', async () => {
    const sockets: net.Socket[] = [];
    const silent = net.createServer((socket) => void sockets.push(socket));
    await new Promise<void>((r) => silent.listen(0, '127.0.0.2', r));
    const port = (silent.address() as net.AddressInfo).port;
    try {
      const err = await fetchAt(`http://slow.invalid:${port}/`, { method: 'POST', body: '{}', signal: AbortSignal.timeout(100) }, ['127.0.0.2']).catch(
        (e: Error) => e,
      );
      expect((err as Error).name).toBe('TimeoutError');
    } finally {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((r) => silent.close(() => r()));
    }
  });
});
