/**
 * The few Redis operations the service needs, so that ioredis (Node) and Upstash REST (Workers)
 * can stand behind the same limiter code.
 */
export interface RedisOps {
  /** Increments a fixed-window counter that expires with its window; returns the new count. */
  incrWindow(key: string, windowMs: number, by?: number): Promise<number>;
  /**
   * Drops members older than `windowMs`, adds `member` and returns the count including it, in one
   * MULTI, so concurrent callers each see a distinct count.
   */
  addToSlidingWindow(key: string, member: string, nowMs: number, windowMs: number): Promise<number>;
  removeFromSlidingWindow(key: string, member: string): Promise<void>;
  /** Runs a Lua script (no KEYS; everything in ARGV). Cached by the server where the client can. */
  eval(script: string, args: (string | number)[]): Promise<unknown>;
  get(key: string): Promise<string | null>;
  set(key: string, value: string): Promise<void>;
  ping(): Promise<void>;
  close?(): Promise<void>;
}
