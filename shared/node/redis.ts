import { createHash } from 'node:crypto';
import { Redis } from 'ioredis';
import type { RedisOps } from '../platform/data/redis';

/** ioredis behind the same operations as the Upstash adapter. */
export function ioredisOps(url: string): RedisOps {
  const redis = new Redis(url, { maxRetriesPerRequest: 2, enableOfflineQueue: true, lazyConnect: false });
  const shas = new Map<string, string>();
  const exec = async (multi: ReturnType<Redis['multi']>) => {
    const replies = (await multi.exec()) ?? [];
    const failed = replies.find(([err]) => err);
    if (failed) throw failed[0];
    return replies.map(([, value]) => value);
  };
  return {
    async incrWindow(key, windowMs, by = 1) {
      const [, count] = await exec(redis.multi().set(key, 0, 'PX', windowMs, 'NX').incrby(key, by));
      return Number(count);
    },
    async addToSlidingWindow(key, member, nowMs, windowMs) {
      const [, , count] = await exec(
        redis
          .multi()
          .zremrangebyscore(key, 0, nowMs - windowMs)
          .zadd(key, nowMs, member)
          .zcard(key)
          .pexpire(key, windowMs),
      );
      return Number(count);
    },
    async removeFromSlidingWindow(key, member) {
      await redis.zrem(key, member);
    },
    async eval(script, args) {
      // EVALSHA first: the script text travels once per server, not with every call.
      let sha = shas.get(script);
      if (!sha) shas.set(script, (sha = createHash('sha1').update(script).digest('hex')));
      try {
        return await redis.evalsha(sha, 0, ...args);
      } catch (err) {
        if (!String((err as Error).message).startsWith('NOSCRIPT')) throw err;
        return redis.eval(script, 0, ...args);
      }
    },
    async get(key) {
      return redis.get(key);
    },
    async set(key, value) {
      await redis.set(key, value);
    },
    async ping() {
      await redis.ping();
    },
    async close() {
      await redis.quit().catch(() => redis.disconnect());
    },
  };
}
