// Proves the stand-ins in this folder work with the real client libraries (no mocks). The Postgres and
// Redis cases need real servers (env TEST_DATABASE_URL / TEST_REDIS_URL, e.g. from .ci/services.sh);
// the QStash case needs nothing but this process.
import http from 'node:http';
import { createHash } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { afterAll, describe, expect, it } from 'vitest';
import ws from 'ws';
import { Pool, neonConfig } from '@neondatabase/serverless';
import { Redis } from '@upstash/redis';
import { Client, Receiver } from '@upstash/qstash';
import { startNeonWsProxy } from './neon-ws-proxy.js';
import { startUpstashProxy } from './upstash-redis-proxy.js';
import { startFakeQstash } from './fake-qstash.js';
import { readBody } from './read-body.js';

const DB = process.env.TEST_DATABASE_URL;
const REDIS = process.env.TEST_REDIS_URL;
const cleanups: Array<() => Promise<unknown>> = [];
afterAll(async () => {
  for (const c of cleanups.reverse()) await c();
});

describe('neon ws proxy', () => {
  it.skipIf(!DB)(`@neondatabase/serverless Pool queries Postgres through it${DB ? '' : ' [SKIPPED: TEST_DATABASE_URL unset]'}`, async () => {
    const proxy = await startNeonWsProxy({ port: 0 });
    cleanups.push(() => proxy.close());
    // neonConfig is module-global (accessors, so `{...neonConfig}` copies nothing): save and restore the
    // keys we set so other tests sharing the module are unaffected.
    const local = {
      webSocketConstructor: ws,
      useSecureWebSocket: false,
      pipelineTLS: false,
      pipelineConnect: false,
      wsProxy: (host: string, port: number | string) => `127.0.0.1:${proxy.port}/v1?address=${host}:${port}`,
    } as const;
    const cfg = neonConfig as unknown as Record<string, unknown>;
    const saved = Object.fromEntries(Object.keys(local).map((k) => [k, cfg[k]]));
    cleanups.push(async () => Object.assign(neonConfig, saved));
    Object.assign(neonConfig, local);
    const pool = new Pool({ connectionString: DB, max: 3 });
    cleanups.push(() => pool.end());

    const { rows } = await pool.query('SELECT $1::int + 1 AS n, current_database() AS db', [41]);
    expect(rows[0].n).toBe(42);
    // A transaction on one pooled connection proves the session survives multiple round trips.
    const client = await pool.connect();
    try {
      await client.query('BEGIN');
      await client.query('CREATE TEMP TABLE standin_t (v text) ON COMMIT DROP');
      await client.query('INSERT INTO standin_t VALUES ($1), ($2)', ['a', 'ü']);
      const r = await client.query("SELECT string_agg(v, ',' ORDER BY v) AS s FROM standin_t");
      expect(r.rows[0].s).toBe('a,ü');
      await client.query('COMMIT');
    } finally {
      client.release();
    }
    const many = await Promise.all(Array.from({ length: 10 }, (_, i) => pool.query('SELECT $1::int AS i', [i])));
    expect(many.map((r) => r.rows[0].i)).toEqual([...Array(10).keys()]);
  });

  it('refuses targets other than localhost', async () => {
    const proxy = await startNeonWsProxy({ port: 0 });
    cleanups.push(() => proxy.close());
    const code = await new Promise<number>((resolve) => {
      const sock = new ws(`ws://127.0.0.1:${proxy.port}/v1?address=10.0.0.1:5432`);
      sock.on('close', (c) => resolve(c));
    });
    expect(code).toBe(1008);
  });
});

describe('upstash redis proxy', () => {
  it.skipIf(!REDIS)(`@upstash/redis works through it${REDIS ? '' : ' [SKIPPED: TEST_REDIS_URL unset]'}`, async () => {
    const token = 'standin-token';
    const proxy = await startUpstashProxy({ port: 0, redisUrl: REDIS!, token });
    cleanups.push(() => proxy.close());
    const redis = new Redis({ url: proxy.url, token });
    const k = `standins:${crypto.randomUUID()}`;

    expect(await redis.set(`${k}:json`, { hello: 'wörld', n: 1 }, { ex: 60 })).toBe('OK');
    expect(await redis.get(`${k}:json`)).toEqual({ hello: 'wörld', n: 1 });
    // 'abcd' is valid base64: it comes back intact only if the proxy honours Upstash-Encoding: base64.
    await redis.set(`${k}:s`, 'abcd', { ex: 60 });
    expect(await redis.get(`${k}:s`)).toBe('abcd');
    expect(await redis.incr(`${k}:ctr`)).toBe(1);
    expect(await redis.incr(`${k}:ctr`)).toBe(2);
    await redis.expire(`${k}:ctr`, 60);
    await redis.hset(`${k}:h`, { a: '1', b: 'x' });
    expect(await redis.hgetall(`${k}:h`)).toEqual({ a: 1, b: 'x' }); // flattened HGETALL; SDK parses '1'
    await redis.del(`${k}:h`);

    // The fixed-window idiom (shared/platform/data/redis-upstash.ts) through /multi-exec, raw as the app reads it.
    const raw = new Redis({ url: proxy.url, token, automaticDeserialization: false });
    const hit = async () => (await raw.multi().set(`${k}:win`, 0, { px: 30_000, nx: true }).incr(`${k}:win`).exec<[unknown, number]>())[1];
    expect([await hit(), await hit(), await hit()].map(Number)).toEqual([1, 2, 3]);

    // @upstash/ratelimit's flow: EVALSHA of an 'allow-key-locking' script → NOSCRIPT → EVAL → EVALSHA.
    const script = '#!lua flags=allow-key-locking\nreturn redis.call("INCRBY", KEYS[1], ARGV[1])';
    const sha = createHash('sha1').update(script).digest('hex');
    await expect(raw.evalsha(sha, [`${k}:lua`], ['5'])).rejects.toThrow(/NOSCRIPT/);
    expect(await raw.eval(script, [`${k}:lua`], ['5'])).toBe(5);
    expect(await raw.evalsha(sha, [`${k}:lua`], ['2'])).toBe(7);
    await raw.del(`${k}:win`, `${k}:lua`);

    expect(await new Redis({ url: proxy.url, token: 'wrong' }).get('x').catch((e: Error) => e.message)).toMatch(/Unauthorized/);
  });
});

describe('fake qstash', () => {
  it('delivers publishJSON with a signature the real Receiver accepts, retrying on 5xx', async () => {
    const keys = { currentSigningKey: 'sig_test_current', nextSigningKey: 'sig_test_next' };
    const qstash = await startFakeQstash({ port: 0, token: 'qs-token', ...keys, retryDelayMs: 50 });
    cleanups.push(() => qstash.close());

    const got: Array<{ body: string; headers: http.IncomingHttpHeaders }> = [];
    let delivered!: () => void;
    const done = new Promise<void>((r) => {
      delivered = r;
    });
    const target = http.createServer(async (req, res) => {
      const body = (await readBody(req))?.toString() ?? '';
      got.push({ body, headers: req.headers });
      res.writeHead(got.length === 1 ? 503 : 200).end(); // fail once to prove the retry
      if (got.length === 2) delivered();
    });
    await new Promise<void>((r) => target.listen(0, '127.0.0.1', r));
    cleanups.push(
      () =>
        new Promise((r) => {
          target.closeAllConnections();
          target.close(r);
        }),
    );
    const url = `http://127.0.0.1:${(target.address() as AddressInfo).port}/hooks/job?x=1`;

    const client = new Client({ baseUrl: qstash.url, token: 'qs-token' });
    const { messageId } = await client.publishJSON({ url, body: { job: 'reindex', id: 7 }, headers: { 'x-tenant': 't1' } });
    expect(messageId).toMatch(/^msg_/);
    expect(qstash.published[0]).toMatchObject({ id: messageId, url });
    await done;

    const [first, second] = got as [(typeof got)[0], (typeof got)[0]];
    expect(JSON.parse(second.body)).toEqual({ job: 'reindex', id: 7 });
    expect(second.headers['x-tenant']).toBe('t1');
    expect([first.headers['upstash-retried'], second.headers['upstash-retried']]).toEqual(['0', '1']);
    const receiver = new Receiver(keys);
    const signature = String(second.headers['upstash-signature']);
    expect(await receiver.verify({ signature, body: second.body, url })).toBe(true);
    await expect(receiver.verify({ signature, body: `${second.body} `, url })).rejects.toThrow(/body hash/);
    await expect(new Receiver({ currentSigningKey: 'x', nextSigningKey: 'y' }).verify({ signature, body: second.body, url })).rejects.toThrow();
  });
});
