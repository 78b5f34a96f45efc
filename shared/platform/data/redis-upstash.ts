import { Redis } from '@upstash/redis/cloudflare';
import type { RedisOps } from './redis';

/** Upstash Redis over its REST API (Workers). Same semantics as the ioredis adapter. */
export function upstashRedis(url: string, token: string): RedisOps {
  const redis = new Redis({ url, token, automaticDeserialization: false });
  return {
    async incrWindow(key, windowMs, by = 1) {
      const [, count] = await redis.multi().set(key, 0, { px: windowMs, nx: true }).incrby(key, by).exec<[unknown, number]>();
      return Number(count);
    },
    async addToSlidingWindow(key, member, nowMs, windowMs) {
      const [, , count] = await redis
        .multi()
        .zremrangebyscore(key, 0, nowMs - windowMs)
        .zadd(key, { score: nowMs, member })
        .zcard(key)
        .pexpire(key, windowMs)
        .exec<[unknown, unknown, number, unknown]>();
      return Number(count);
    },
    async removeFromSlidingWindow(key, member) {
      await redis.zrem(key, member);
    },
    async eval(script, args) {
      return redis.eval(script, [], args.map(String));
    },
    async get(key) {
      return redis.get<string>(key);
    },
    async set(key, value) {
      await redis.set(key, value);
    },
    async ping() {
      await redis.ping();
    },
  };
}
