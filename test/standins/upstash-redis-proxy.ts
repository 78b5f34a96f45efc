// Upstash REST API → plain Redis, so @upstash/redis and @upstash/ratelimit run unmodified against a
// local redis-server. No npm package serves this API (Upstash's own SRH is not on npm), hence this.
// Client: new Redis({ url: proxy.url, token }).
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { createHash } from 'node:crypto';
import { pathToFileURL } from 'node:url';
import { Redis } from 'ioredis';
import { readBody } from './read-body.js';

// The SDK sends "Upstash-Encoding: base64" and base64-decodes every string result except a literal
// "OK", so bulk replies must go back base64-encoded. ioredis turns HGETALL into an object; Upstash
// returns a flat [k, v, ...] array and the SDK crashes on anything else.
const enc = (v: unknown, b64: boolean): unknown =>
  Buffer.isBuffer(v)
    ? b64
      ? v.toString('base64')
      : v.toString('utf8')
    : Array.isArray(v)
      ? v.map((x) => enc(x, b64))
      : v && typeof v === 'object'
        ? Object.entries(v).flatMap(([k, x]) => [enc(Buffer.from(k), b64), enc(x, b64)])
        : (v ?? null);
const one = (err: Error | null | undefined, res: unknown, b64: boolean) => (err ? { error: err.message } : { result: enc(res, b64) });

const sha1 = (s: string) => createHash('sha1').update(s).digest('hex');
const SHEBANG = /^#!lua flags=allow-key-locking/;

export interface UpstashProxy {
  port: number;
  url: string;
  close(): Promise<void>;
}

export async function startUpstashProxy({
  port = 0,
  redisUrl = 'redis://127.0.0.1:6379',
  token = 'local-token',
}: {
  port?: number;
  redisUrl?: string;
  token?: string;
} = {}): Promise<UpstashProxy> {
  // Fail fast instead of queueing commands forever when Redis is down.
  const redis = new Redis(redisUrl, { maxRetriesPerRequest: 2 });
  redis.on('error', () => {}); // surfaced per command instead of as "Unhandled error event" noise
  try {
    await redis.ping();
  } catch (e) {
    redis.disconnect();
    throw new Error(`upstash proxy: cannot reach ${redisUrl}: ${(e as Error).message}`);
  }

  // @upstash/ratelimit 2.x scripts start with '#!lua flags=allow-key-locking', an Upstash-only flag that
  // Redis 7 rejects. Strip it, and remember sha(original) → sha(stripped) because the SDK computes the
  // EVALSHA sha from the original text.
  const shaMap = new Map<string, string>();
  const fix = ([cmd, ...args]: unknown[]): [string, ...string[]] => {
    const c = String(cmd).toUpperCase(),
      a = args.map(String);
    const i = c === 'EVAL' || c === 'EVAL_RO' ? 0 : c === 'SCRIPT' && a[0]?.toUpperCase() === 'LOAD' ? 1 : -1;
    const script = a[i];
    if (script !== undefined && SHEBANG.test(script)) {
      const stripped = script.replace(SHEBANG, '#!lua');
      shaMap.set(sha1(script), sha1(stripped));
      a[i] = stripped;
    }
    const mapped = shaMap.get(a[0] ?? '');
    if ((c === 'EVALSHA' || c === 'EVALSHA_RO') && mapped) a[0] = mapped;
    return [String(cmd), ...a];
  };

  const server = http.createServer(async (req, res) => {
    const send = (status: number, body: unknown) => {
      res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
    };
    const body = await readBody(req);
    if (body === null) return;
    const raw = body.toString();
    if (req.headers.authorization !== `Bearer ${token}`) return send(401, { error: 'Unauthorized' });
    const b64 = String(req.headers['upstash-encoding'] ?? '').toLowerCase() === 'base64';
    const path = (req.url ?? '/').split('?')[0] ?? '/';
    try {
      // POST / with a JSON array, or the GET /cmd/arg/... form.
      const body = raw ? JSON.parse(raw) : path.split('/').filter(Boolean).map(decodeURIComponent);
      if (path === '/pipeline' || path === '/multi-exec') {
        const batch = path === '/pipeline' ? redis.pipeline() : redis.multi();
        for (const c of body as unknown[][]) {
          const [cmd, ...args] = fix(c);
          batch.callBuffer(cmd, ...args);
        }
        const out = (await batch.exec()) ?? [];
        return send(
          200,
          out.map(([e, r]) => one(e, r, b64)),
        );
      }
      const [cmd, ...args] = fix(body as unknown[]);
      return send(200, one(null, await redis.callBuffer(cmd, ...args), b64));
    } catch (e) {
      return send(400, { error: (e as Error).message });
    }
  });

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', resolve);
  });
  const bound = (server.address() as AddressInfo).port;
  return {
    port: bound,
    url: `http://127.0.0.1:${bound}`,
    close: async () => {
      // fetch keeps connections alive; without this, server.close() waits for them to time out.
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await redis.quit().catch(() => redis.disconnect());
    },
  };
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const proxy = await startUpstashProxy({
    port: Number(process.env.UPSTASH_PROXY_PORT ?? 58080),
    redisUrl: process.env.REDIS_URL ?? 'redis://127.0.0.1:6379',
    token: process.env.UPSTASH_REDIS_REST_TOKEN ?? 'local-token',
  });
  console.log(`upstash redis proxy listening on ${proxy.url}`);
  const stop = () => void proxy.close().then(() => process.exit(0));
  process.on('SIGINT', stop);
  process.on('SIGTERM', stop);
}
