/**
 * The few Redis operations the service needs, so that ioredis (Node) and Upstash REST (Workers)
 * can stand behind the same limiter code.
 */
export interface RedisOps {
  /** Increments a fixed-window counter that expires with its window; returns the new count. */
  incrWindow(key: string, windowMs: number): Promise<number>;
  /**
   * Adds `member` to a sliding window of `windowMs` unless that would make more than `max`
   * members; atomic, so concurrent callers cannot both squeeze in. Returns whether it was added.
   */
  addToSlidingWindow(key: string, member: string, nowMs: number, windowMs: number, max: number): Promise<boolean>;
  removeFromSlidingWindow(key: string, member: string): Promise<void>;
  ping(): Promise<void>;
  close?(): Promise<void>;
}
