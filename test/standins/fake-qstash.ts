// Fake QStash: accepts publish / enqueue / batch from the real @upstash/qstash Client and delivers each
// message to its destination with a real Upstash-Signature, so handlers are tested with the real Receiver.
// Why a fake: the official local server (@upstash/qstash-cli, and the SDK's QSTASH_DEV mode) downloads a
// binary at install/run time, which cannot work offline. Never set QSTASH_DEV in tests.
// Client: new Client({ baseUrl: fake.url, token }); Receiver: new Receiver({ currentSigningKey, nextSigningKey }).
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { createHash, randomUUID } from 'node:crypto';
import { pathToFileURL } from 'node:url';
import { SignJWT } from 'jose';
import { readBody } from './read-body.js';

export interface PublishedMessage {
  id: string;
  url: string;
  body: string;
  headers: Record<string, string>;
}
export interface FakeQstash {
  port: number;
  url: string;
  published: PublishedMessage[];
  close(): Promise<void>;
}
export interface FakeQstashOptions {
  port?: number;
  token?: string;
  currentSigningKey?: string;
  // Real QStash signs with the current key only; the next key matters to the Receiver during rotation.
  nextSigningKey?: string;
  retryDelayMs?: number; // first retry delay, doubled per attempt (real QStash waits minutes; tests cannot)
}

const UNIT: Record<string, number> = { s: 1e3, m: 60e3, h: 3600e3, d: 86400e3 };
const delayMs = (h: Record<string, string>) =>
  h['upstash-not-before']
    ? Math.max(0, Number(h['upstash-not-before']) * 1000 - Date.now())
    : [...(h['upstash-delay'] ?? '').matchAll(/(\d+)([smhd])/g)].reduce((t, [, n, u]) => t + Number(n) * (UNIT[u ?? 's'] ?? 0), 0);

export async function startFakeQstash({
  port = 0,
  token = 'local-qstash-token',
  currentSigningKey = 'sig_local_current',
  retryDelayMs = 200,
}: FakeQstashOptions = {}): Promise<FakeQstash> {
  const key = new TextEncoder().encode(currentSigningKey);
  const published: PublishedMessage[] = [];
  const timers = new Set<NodeJS.Timeout>();
  const inflight = new AbortController();
  const later = (ms: number, fn: () => void) => {
    const t = setTimeout(() => {
      timers.delete(t);
      fn();
    }, ms);
    timers.add(t);
  };

  // Same claims as QStash: iss "Upstash", sub = destination URL, body = base64url(sha256(body)).
  const sign = (url: string, body: Buffer) => {
    const now = Math.floor(Date.now() / 1000);
    return new SignJWT({ body: createHash('sha256').update(body).digest('base64url') })
      .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
      .setIssuer('Upstash')
      .setSubject(url)
      .setIssuedAt(now)
      .setNotBefore(now)
      .setExpirationTime(now + 300)
      .setJti(`jwt_${randomUUID()}`)
      .sign(key);
  };

  const attempt = async (msg: PublishedMessage, n: number) => {
    const h = msg.headers,
      body = Buffer.from(msg.body);
    const fwd: Record<string, string> = {
      'upstash-signature': await sign(msg.url, body),
      'upstash-message-id': msg.id,
      'upstash-retried': String(n),
      'content-type': h['content-type'] ?? 'application/octet-stream',
    };
    for (const [k, v] of Object.entries(h)) if (k.startsWith('upstash-forward-')) fwd[k.slice(16)] = v;
    const method = h['upstash-method'] ?? 'POST';
    const res = await fetch(msg.url, {
      method,
      headers: fwd,
      body: method === 'GET' || method === 'HEAD' ? null : body,
      signal: inflight.signal,
    }).catch(() => null);
    await res?.arrayBuffer().catch(() => {}); // drain, or undici keeps the socket busy
    if (res && res.status >= 200 && res.status < 300) return;
    if (n < Number(h['upstash-retries'] ?? 3) && !inflight.signal.aborted) later(retryDelayMs * 2 ** n, () => void attempt(msg, n + 1));
  };

  const accept = (url: string, body: string, headers: Record<string, string>) => {
    const msg = { id: `msg_${randomUUID()}`, url, body, headers };
    published.push(msg);
    later(delayMs(headers), () => void attempt(msg, 0));
    return { messageId: msg.id };
  };
  const lower = (h: Record<string, unknown>) => Object.fromEntries(Object.entries(h).map(([k, v]) => [k.toLowerCase(), String(v)]));

  const server = http.createServer(async (req, res) => {
    const raw = await readBody(req);
    if (raw === null) return;
    const send = (status: number, body: unknown) => res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
    if (req.headers.authorization !== `Bearer ${token}`) return send(401, { error: 'unauthorized' });
    const path = req.url ?? '';
    if (req.method === 'POST' && path === '/v2/batch') {
      const batch = JSON.parse(raw.toString()) as Array<{ destination: string; headers?: Record<string, unknown>; body?: string }>;
      return send(
        201,
        batch.map((m) => accept(m.destination, m.body ?? '', lower(m.headers ?? {}))),
      );
    }
    // The SDK puts the destination URL unencoded after the prefix, e.g. /v2/publish/http://127.0.0.1:3000/x
    const m = path.match(/^\/v2\/(?:publish|enqueue\/[^/]+)\/(.+)$/);
    if (req.method !== 'POST' || !m) return send(404, { error: `not implemented in fake: ${req.method} ${path}` });
    send(201, accept(decodeURIComponent(m[1] ?? ''), raw.toString(), lower(req.headers as Record<string, unknown>)));
  });

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', resolve);
  });
  const bound = (server.address() as AddressInfo).port;
  return {
    port: bound,
    url: `http://127.0.0.1:${bound}`,
    published,
    close: async () => {
      // Pending deliveries/retries would otherwise fire after the test's receiver is gone.
      for (const t of timers) clearTimeout(t);
      timers.clear();
      inflight.abort();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const fake = await startFakeQstash({
    port: Number(process.env.QSTASH_FAKE_PORT ?? 58081),
    token: process.env.QSTASH_TOKEN ?? 'local-qstash-token',
    currentSigningKey: process.env.QSTASH_CURRENT_SIGNING_KEY ?? 'sig_local_current',
    nextSigningKey: process.env.QSTASH_NEXT_SIGNING_KEY ?? 'sig_local_next',
  });
  console.log(`fake qstash listening on ${fake.url}`);
  const stop = () => void fake.close().then(() => process.exit(0));
  process.on('SIGINT', stop);
  process.on('SIGTERM', stop);
}
