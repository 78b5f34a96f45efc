import { afterAll, describe, expect, it } from 'vitest';
import { ioredisOps } from '../shared/node/redis';
import type { RedisOps } from '../shared/platform/data/redis';
import { upstashRedis } from '../shared/platform/data/redis-upstash';
import { startUpstashProxy } from './standins/upstash-redis-proxy';

/**
 * The window operations the rate limits, signup throttle and stream leases count with, as each
 * adapter runs them: ioredis on Node, Upstash's REST API on Workers (through the stand-in). Both
 * must count the same way, atomically.
 */
const REDIS = process.env.TEST_REDIS_URL;
const cleanups: (() => Promise<unknown>)[] = [];
afterAll(async () => {
  for (const c of cleanups.reverse()) await c();
});

const adapters: [string, () => Promise<RedisOps>][] = [
  [
    'ioredis',
    async () => {
      const ops = ioredisOps(REDIS!);
      cleanups.push(() => ops.close!());
      return ops;
    },
  ],
  [
    'upstash',
    async () => {
      const proxy = await startUpstashProxy({ redisUrl: REDIS!, token: 'ops-token' });
      cleanups.push(() => proxy.close());
      return upstashRedis(proxy.url, 'ops-token');
    },
  ],
];
const key = (what: string) => `test:ops:${what}:${crypto.randomUUID()}`;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe.skipIf(!REDIS).each(adapters)(`%s window operations${REDIS ? '' : ' [SKIPPED: TEST_REDIS_URL unset]'}`, (_name, open) => {
  it('a fixed window counts each hit once, concurrent hits included, and starts again when it expires', async () => {
    const ops = await open();
    const k = key('fixed');
    expect(await ops.incrWindow(k, 300)).toBe(1);
    const counts = await Promise.all(Array.from({ length: 10 }, () => ops.incrWindow(k, 300)));
    expect(counts.sort((a, b) => a - b)).toEqual([2, 3, 4, 5, 6, 7, 8, 9, 10, 11]);
    expect(await ops.incrWindow(key('other'), 300)).toBe(1);
    await sleep(450);
    expect(await ops.get(k)).toBeNull();
    expect(await ops.incrWindow(k, 300)).toBe(1);
  });

  it('a hit may count several (a JSON-RPC batch, one per message)', async () => {
    const ops = await open();
    const k = key('weighted');
    expect(await ops.incrWindow(k, 300, 5)).toBe(5);
    expect(await ops.incrWindow(k, 300)).toBe(6);
  });

  it('a sliding window counts the members inside it, each concurrent caller a different count, and forgets the older ones', async () => {
    const ops = await open();
    const k = key('sliding');
    const at = 1_000_000;
    const counts = await Promise.all(Array.from({ length: 8 }, (_, i) => ops.addToSlidingWindow(k, `m${i}`, at + i, 100)));
    expect(counts.sort((a, b) => a - b)).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
    await ops.removeFromSlidingWindow(k, 'm0');
    expect(await ops.addToSlidingWindow(k, 'm8', at + 50, 100)).toBe(8);
    // 200 later the first eight are out of the window; m8 (at + 50) too.
    expect(await ops.addToSlidingWindow(k, 'm9', at + 200, 100)).toBe(1);
  });
});
