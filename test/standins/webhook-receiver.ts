import { createHmac, timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * Standard Webhooks verification written from the specification, independent of the service's
 * code: the signed content is `${webhook-id}.${webhook-timestamp}.${body}`, the key is the base64
 * after `whsec_`, and `webhook-signature` holds space-separated `v1,<base64 HMAC-SHA256>`; one
 * match is enough. (A production receiver also refuses timestamps more than 5 minutes off.)
 */
export function verifySignature(secret: string, headers: IncomingHttpHeaders, body: string): boolean {
  const id = headers['webhook-id'];
  const timestamp = headers['webhook-timestamp'];
  const signatures = headers['webhook-signature'];
  if (typeof id !== 'string' || typeof timestamp !== 'string' || typeof signatures !== 'string') return false;
  const key = Buffer.from(secret.replace(/^whsec_/, ''), 'base64');
  const expected = createHmac('sha256', key).update(`${id}.${timestamp}.${body}`).digest();
  return signatures.split(' ').some((s) => {
    const [version, value] = s.split(',');
    const given = Buffer.from(value ?? '', 'base64');
    return version === 'v1' && given.length === expected.length && timingSafeEqual(given, expected);
  });
}

export interface Received {
  path: string;
  headers: IncomingHttpHeaders;
  body: string;
  json: any;
  at: number;
}

/**
 * A local HTTP receiver for webhook tests and benchmarks: records every request; `respond` decides
 * the status per path (200 by default), `delayMs` holds the answer back. A refusal quotes what it
 * refused, as many real receivers' error pages do.
 */
export async function startReceiver(opts: { respond?: (path: string) => number; delayMs?: number } = {}) {
  const received: Received[] = [];
  const waiters: { count: number; resolve: () => void }[] = [];
  const server: Server = createServer((req, res) => {
    let raw = '';
    req.on('data', (c) => (raw += c));
    req.on('end', () => {
      let parsed: unknown = null;
      try {
        parsed = JSON.parse(raw);
      } catch {
        parsed = null;
      }
      received.push({ path: req.url ?? '/', headers: req.headers, body: raw, json: parsed, at: performance.now() });
      for (const w of waiters.filter((w) => received.length >= w.count)) {
        waiters.splice(waiters.indexOf(w), 1);
        w.resolve();
      }
      const status = opts.respond?.(req.url ?? '/') ?? 200;
      const answer = () => res.writeHead(status, { 'content-type': 'text/plain' }).end(status < 300 ? 'ok' : `refused with ${status}: ${raw}`);
      if (opts.delayMs) setTimeout(answer, opts.delayMs);
      else answer();
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as AddressInfo).port;
  return {
    url: (path = '/hook') => `http://127.0.0.1:${port}${path}`,
    received,
    /** Resolves once `count` requests have arrived in total. */
    waitFor: (count: number) => (received.length >= count ? Promise.resolve() : new Promise<void>((resolve) => waiters.push({ count, resolve }))),
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}
