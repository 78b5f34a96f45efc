import { pgArray, type RawQuery } from '../data/db';
import { sqlState } from '../data/pg-errors';
import type { Logger } from '../data/log';
import type { RedisOps } from '../data/redis';
import { dayOf, periodOf, periodResetsAt } from '../contract/time';

/**
 * The self-hosted hot path with Redis (several Node instances on one Postgres): a request's key
 * check, per-key rate and monthly quota in one Redis round trip, shared by every request waiting
 * in the same tick (one script call for all of them).
 *
 * - Keys are cached per instance (KeyCache) with the tenant's key epoch, a random token in Redis
 *   that every change to a tenant's keys, tier or memory policies replaces after its commit
 *   (`bumpKeyEpoch`; the store path keeps its copy of the policies under it). The
 *   script compares each request's cached epoch with the current one before it counts anything;
 *   a mismatch sends the request back to read its key from Postgres (a record read during the
 *   request is not checked: a change after that read is concurrent with the request). So a key revoked through any
 *   instance is refused by every instance on its very next request.
 * - api_calls (month, with its ceiling) and api_calls_day are counted in Redis, where one script
 *   decides every hit atomically, so instances stay exact. A counter missing in Redis (a new
 *   period, a restarted Redis) is seeded from Postgres first. Counted values are copied to
 *   usage_counters in batches (`flush`, every FLUSH_MS and at shutdown) as GREATEST(stored, value):
 *   idempotent and order-free, so instances can flush the same counter concurrently. With Redis
 *   configured, every instance must use it (an instance counting in Postgres directly would be
 *   overwritten); Redis needs `maxmemory-policy noeviction` (the default) and, to keep the counts
 *   of its last second across its own restart, `appendonly yes`.
 * - A usage report's Postgres-held counters (memories, rollbacks) are cached per instance under the
 *   tenant's usage epoch, which changes with every write. A keyed write request announces itself
 *   in its gate call: the script gives the tenant a new usage epoch and counts the request among
 *   the tenant's writers in flight until it ends (`writeEnded`, sent with the instance's next gate
 *   call). A report is cached only when no writer was in flight, so no copy can predate a write
 *   that commits later: the write needs no second Redis call after its commit, which
 *   takes a round trip and CPU off every store. A write that changes another
 *   tenant's counters, one without a request (jobs), or one that commits too long after its
 *   announcement (the writers' count expires) changes the epochs after its commit (`bumpUsageEpochs`).
 */
export interface GateHit {
  tenantId: string;
  keyId: string;
  /** The tenant's key epoch the caller's key record was read under; null: no check (read during the request). */
  epoch: string | null;
  /** Requests per window for this key. */
  rateLimit: number;
  windowMs: number;
  /** The month's api_calls ceiling; null: none. */
  quotaLimit: number | null;
  now: Date;
  /** A request that may write: admitted, it announces itself as one of the tenant's writers. */
  writes: boolean;
}

/** A write request announced in its gate call, until it ends. */
export interface UsageWrite {
  tenantId: string;
  /** When it was announced (Date.now()). */
  at: number;
  ended: boolean;
}

export type GateOutcome =
  | { kind: 'stale' }
  | {
      kind: 'counted';
      /** The tenant's key epoch when the request was counted. */
      epoch: string;
      rate: { allowed: boolean; count: number; resetAt: Date };
      /** Whether the month's quota granted this request, and the month's count after it. */
      quota: { allowed: boolean; value: number };
      today: number;
      /** The tenant's usage epoch: a new one with every write (see the top of this file). */
      usageEpoch: string;
      /** The tenant's write requests in flight, this one included. */
      usageWriters: number;
      /** This request, announced as a writer: end it with `writeEnded`. */
      usageWrite: UsageWrite | null;
    };

const EPOCH = 'engram:kepoch:';
const USAGE_EPOCH = 'engram:uepoch:';
/** Sent for a hit that checks no epoch: no epoch token (a UUID, or '' for none) can equal it. */
const ANY_EPOCH = '*';
const WRITERS = 'engram:uwriters:';
const COUNTER = 'engram:ctr:';
const DIRTY = 'engram:ctr-dirty';
const FIELDS = 9;
/** A writers' count expires this long after its last announcement (a crashed instance never ends its writes). */
const WRITERS_TTL_MS = 120_000;
/** A write that commits later than this after its announcement changes the epoch after its commit. */
const ANNOUNCED_FOR_MS = WRITERS_TTL_MS / 2;

/** Lua: the writes ended, ARGV[from..to]: each leaves its tenant's writers' count. */
const END_WRITES = (from: string, to: string) => `
for i = ${from}, ${to} do
  local key = '${WRITERS}' .. ARGV[i]
  if redis.call('DECR', key) <= 0 then redis.call('DEL', key) end
end`;

/**
 * ARGV: n, a new usage epoch, n hits of FIELDS values, then the tenants of writes that ended.
 * First the ended writes leave their counts; then per hit: the epoch check, then (only when both
 * counters exist) the rate window, then the month with its ceiling and the day, and for an admitted
 * write its announcement (a new usage epoch, one more writer). Returns per hit {0, epoch} (stale:
 * nothing counted), {2, epoch, hasMonth, hasDay} (seed first: nothing counted) or {1, epoch, rate,
 * allowed, month, day, usage epoch, writers}.
 * A counted value is put in the dirty set with the value as its score, for `flush`.
 */
const GATE = `
local out = {}
local n = tonumber(ARGV[1])
${END_WRITES(`3 + n * ${FIELDS}`, '#ARGV')}
for i = 0, n - 1 do
  local b = 2 + i * ${FIELDS}
  local tenant, epoch, rateKey, windowMs = ARGV[b + 1], ARGV[b + 2], ARGV[b + 3], ARGV[b + 4]
  local rateLimit, month, day, quota = tonumber(ARGV[b + 5]), ARGV[b + 6], ARGV[b + 7], tonumber(ARGV[b + 8])
  local writes = ARGV[b + 9] == '1'
  local current = redis.call('GET', '${EPOCH}' .. tenant) or ''
  if epoch ~= '${ANY_EPOCH}' and current ~= epoch then
    out[#out + 1] = {0, current}
  else
    local monthId = tenant .. '|api_calls|' .. month
    local dayId = tenant .. '|api_calls_day|' .. day
    local m = redis.call('GET', '${COUNTER}' .. monthId)
    local d = redis.call('GET', '${COUNTER}' .. dayId)
    if not m or not d then
      out[#out + 1] = {2, current, m and 1 or 0, d and 1 or 0}
    else
      m = tonumber(m)
      d = tonumber(d)
      local rate = redis.call('INCR', rateKey)
      if rate == 1 then redis.call('PEXPIRE', rateKey, windowMs) end
      local allowed = 0
      if rate <= rateLimit then
        if quota < 0 or m < quota then
          m = redis.call('INCR', '${COUNTER}' .. monthId)
          allowed = 1
          redis.call('ZADD', '${DIRTY}', m, monthId)
        end
        d = redis.call('INCR', '${COUNTER}' .. dayId)
        redis.call('ZADD', '${DIRTY}', d, dayId)
      end
      if writes and allowed == 1 then
        redis.call('SET', '${USAGE_EPOCH}' .. tenant, ARGV[2])
        redis.call('INCR', '${WRITERS}' .. tenant)
        redis.call('PEXPIRE', '${WRITERS}' .. tenant, ${WRITERS_TTL_MS})
      end
      out[#out + 1] = {1, current, rate, allowed, m, d, redis.call('GET', '${USAGE_EPOCH}' .. tenant) or '', tonumber(redis.call('GET', '${WRITERS}' .. tenant) or '0')}
    end
  end
end
return out`;

/** ARGV: n, then per counter id, value, ttl ms: creates the counters that do not exist yet. */
const SEED = `
for i = 0, tonumber(ARGV[1]) - 1 do
  redis.call('SET', '${COUNTER}' .. ARGV[2 + i * 3], ARGV[3 + i * 3], 'PX', ARGV[4 + i * 3], 'NX')
end
return 1`;

/** ARGV: n, then per counter id and the value flushed: forgets the ids not counted since. */
const ACK = `
for i = 0, tonumber(ARGV[1]) - 1 do
  local id, flushed = ARGV[2 + i * 2], tonumber(ARGV[3 + i * 2])
  if tonumber(redis.call('ZSCORE', '${DIRTY}', id)) == flushed then redis.call('ZREM', '${DIRTY}', id) end
end
return 1`;

/** Stored values catch up, never go back: a flush that arrives late changes nothing. */
const UPSERT = `
  INSERT INTO usage_counters AS u (tenant_id, metric, bucket, value)
  SELECT h.tenant_id, h.metric, h.bucket, h.value
  FROM unnest($1::text[], $2::text[], $3::text[], $4::bigint[]) AS h(tenant_id, metric, bucket, value)
  WHERE EXISTS (SELECT 1 FROM tenants t WHERE t.id = h.tenant_id)
  ORDER BY h.tenant_id, h.metric, h.bucket
  ON CONFLICT (tenant_id, metric, bucket) DO UPDATE SET value = GREATEST(u.value, EXCLUDED.value)`;

/** ARGV: the new epoch, then the tenants whose usage epoch takes it. */
const BUMP_USAGE = `for i = 2, #ARGV do redis.call('SET', '${USAGE_EPOCH}' .. ARGV[i], ARGV[1]) end return 1`;

const DAY = 86_400_000;
/** Redis keeps a counter this long past its period, for late reports; Postgres keeps it for good. */
const KEEP_MS = 35 * DAY;
const FLUSH_MS = 250;
/** Ended writes wait this long for a gate call to carry them. */
const END_WRITES_AFTER_MS = 20;
const REPORT_TTL_MS = 5_000;
const FLUSH_BATCH = 1000;

type Reply = GateOutcome | { kind: 'seed' };

interface Waiter {
  hit: GateHit;
  resolve: (o: Reply) => void;
  reject: (e: unknown) => void;
}

const nextTick = () =>
  new Promise<void>((resolve) => ((globalThis as { setImmediate?: (f: () => void) => void }).setImmediate ?? ((f) => setTimeout(f, 0)))(resolve));

/** A fresh epoch token: random, so a Redis that lost its data can never bring back an old one. */
const newEpoch = () => crypto.randomUUID();

export class RequestGate {
  private pending: Waiter[] = [];
  private draining: Promise<void> | null = null;
  private timer: ReturnType<typeof setInterval> | null = null;
  private flushing: Promise<void> | null = null;
  private reports = new Map<string, { epoch: string; values: number[]; at: number }>();
  private bumps: { tenants: Set<string>; done: Promise<void> } | null = null;
  /** Tenants of write requests that ended, for the next gate call (or `endWrites` on its own). */
  private ended: string[] = [];
  private endTimer: ReturnType<typeof setTimeout> | null = null;

  constructor(
    private readonly redis: RedisOps,
    private readonly query: RawQuery,
    private readonly log: Logger,
  ) {}

  /** Starts the periodic flush to Postgres (Node). */
  start(): void {
    this.timer ??= setInterval(() => void this.flush().catch((err) => this.log.warn('counter flush failed', { error: String(err) })), FLUSH_MS);
    (this.timer as { unref?: () => void }).unref?.();
  }

  async close(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    while (this.draining) await this.draining;
    await this.endWrites();
    await this.flush();
  }

  /** The tenant's current key epoch ('' when none was ever set). */
  async epochOf(tenantId: string): Promise<string> {
    return ((await this.redis.get(EPOCH + tenantId)) as string | null) ?? '';
  }

  /** After a commit that changed a tenant's keys or tier: every instance's cached keys of it go stale. */
  async bumpKeyEpoch(tenantId: string): Promise<void> {
    await this.redis.set(EPOCH + tenantId, newEpoch());
  }

  /** After a commit that changed these tenants' Postgres-held counters: every instance's copies go stale. */
  async bumpUsageEpochs(tenantIds: string[]): Promise<void> {
    // Writes that commit in the same tick share one script call (16 writers: one call, not 16).
    if (!this.bumps) {
      const batch = { tenants: new Set<string>(), done: Promise.resolve() };
      batch.done = nextTick().then(async () => {
        if (this.bumps === batch) this.bumps = null;
        await this.redis.eval(BUMP_USAGE, [newEpoch(), ...batch.tenants]);
      });
      this.bumps = batch;
    }
    for (const t of tenantIds) this.bumps.tenants.add(t);
    return this.bumps.done;
  }

  /**
   * Whether a commit of `write` (this request's announcement, if any) needs no epoch change after
   * it for `tenantId`: announced for that tenant, still in flight, and recently enough that its
   * writers' count cannot have expired.
   */
  announced(write: UsageWrite | undefined, tenantId: string): boolean {
    return !!write && !write.ended && write.tenantId === tenantId && Date.now() - write.at < ANNOUNCED_FOR_MS;
  }

  /** A write request ended (answered or failed, after its commits): it leaves its tenant's writers with the next gate call. */
  writeEnded(write: UsageWrite): void {
    if (write.ended) return;
    write.ended = true;
    // Past ANNOUNCED_FOR_MS its count may have expired and been set afresh by other writers, which
    // this one must not take from: it is left to expire (its commits changed the epoch themselves).
    if (Date.now() - write.at >= ANNOUNCED_FOR_MS) return;
    this.ended.push(write.tenantId);
    // An instance that gets no request soon sends them on their own.
    this.endTimer ??= setTimeout(
      () => void this.endWrites().catch((err) => this.log.warn('ending writes failed', { error: String(err) })),
      END_WRITES_AFTER_MS,
    );
    (this.endTimer as { unref?: () => void }).unref?.();
  }

  private async endWrites(): Promise<void> {
    if (this.endTimer) clearTimeout(this.endTimer);
    this.endTimer = null;
    const tenants = this.takeEnded();
    if (tenants.length) await this.redis.eval(`${END_WRITES('1', '#ARGV')} return 1`, tenants);
  }

  private takeEnded(): string[] {
    const tenants = this.ended;
    this.ended = [];
    return tenants;
  }

  /**
   * A report's Postgres-held counters (usage, dashboard) as last read under `usageEpoch`, when no
   * write changed them since; `remember` stores a read made after the epoch was. Entries also age
   * out after REPORT_TTL_MS, a bound for a change whose epoch bump never happened (a crash between
   * commit and bump).
   */
  cachedReport(key: string, usageEpoch: string, now: number): number[] | undefined {
    const hit = this.reports.get(key);
    return hit && hit.epoch === usageEpoch && now - hit.at < REPORT_TTL_MS ? hit.values : undefined;
  }

  rememberReport(key: string, usageEpoch: string, values: number[], now: number): void {
    if (this.reports.size >= 10_000) this.reports.clear();
    this.reports.set(key, { epoch: usageEpoch, values, at: now });
  }

  /** Checks the epoch and counts the request (rate, month, day); seeds missing counters from Postgres first. */
  async admit(hit: GateHit): Promise<GateOutcome> {
    for (let attempt = 0; ; attempt++) {
      const result = await this.enqueue(hit);
      if (result.kind !== 'seed') return result;
      if (attempt === 3) throw new Error('usage counters could not be seeded in Redis');
      await this.seed(hit.tenantId, hit.now);
    }
  }

  private enqueue(hit: GateHit): Promise<Reply> {
    return new Promise((resolve, reject) => {
      this.pending.push({ hit, resolve, reject });
      this.draining ??= this.drain();
    });
  }

  private async drain(): Promise<void> {
    await nextTick(); // let the requests already in the event loop's queues join this call
    while (this.pending.length) {
      const batch = this.pending;
      this.pending = [];
      await this.run(batch);
    }
    this.draining = null;
  }

  private async run(batch: Waiter[]): Promise<void> {
    const ended = this.takeEnded();
    try {
      const args: (string | number)[] = [batch.length, newEpoch()];
      for (const { hit } of batch) {
        const start = Math.floor(hit.now.getTime() / hit.windowMs) * hit.windowMs;
        args.push(
          hit.tenantId,
          hit.epoch ?? ANY_EPOCH,
          `engram:rl:${hit.keyId}:${start}`,
          hit.windowMs,
          hit.rateLimit,
          periodOf(hit.now),
          dayOf(hit.now),
          hit.quotaLimit ?? -1,
          hit.writes ? 1 : 0,
        );
      }
      args.push(...ended);
      const at = Date.now();
      const replies = (await this.redis.eval(GATE, args)) as (string | number)[][];
      for (const [i, { hit, resolve }] of batch.entries()) {
        const [code, epoch, rate, allowed, month, day, usageEpoch, writers] = replies[i];
        if (Number(code) === 0) {
          resolve({ kind: 'stale' });
          continue;
        }
        if (Number(code) === 2) {
          resolve({ kind: 'seed' });
          continue;
        }
        const start = Math.floor(hit.now.getTime() / hit.windowMs) * hit.windowMs;
        resolve({
          kind: 'counted',
          epoch: String(epoch ?? ''),
          rate: { allowed: Number(rate) <= hit.rateLimit, count: Number(rate), resetAt: new Date(start + hit.windowMs) },
          quota: { allowed: Number(allowed) === 1, value: Number(month) },
          today: Number(day),
          usageEpoch: String(usageEpoch ?? ''),
          usageWriters: Number(writers ?? 0),
          usageWrite: hit.writes && Number(allowed) === 1 ? { tenantId: hit.tenantId, at, ended: false } : null,
        });
      }
    } catch (err) {
      // Whether the script ran is unknown: counts it may have left too high expire (sending the ended
      // writes again could take a count below the writers still in flight).
      for (const w of batch) w.reject(err);
    }
  }

  /** Creates the tenant's month and day counters in Redis from their values in Postgres. */
  private async seed(tenantId: string, now: Date): Promise<void> {
    const month = periodOf(now);
    const day = dayOf(now);
    const stored = await this.query<{ metric: string; value: string | number }>(
      `SELECT metric, value FROM usage_counters WHERE tenant_id = $1 AND ((metric = 'api_calls' AND bucket = $2) OR (metric = 'api_calls_day' AND bucket = $3))`,
      [tenantId, month, day],
    );
    const value = (metric: string) => Number(stored.find((s) => s.metric === metric)?.value ?? 0);
    const monthTtl = Math.max(DAY, periodResetsAt(now).getTime() + KEEP_MS - now.getTime());
    const dayTtl = KEEP_MS + DAY;
    await this.redis.eval(SEED, [
      2,
      `${tenantId}|api_calls|${month}`,
      value('api_calls'),
      monthTtl,
      `${tenantId}|api_calls_day|${day}`,
      value('api_calls_day'),
      dayTtl,
    ]);
  }

  /** Copies counted values to Postgres; one flush at a time per instance. */
  flush(): Promise<void> {
    this.flushing ??= this.flushOnce().finally(() => {
      this.flushing = null;
    });
    return this.flushing;
  }

  /**
   * UPSERT skips tenants that no longer exist, but a tenant deleted while the statement runs fails
   * its foreign key check (23503) for the whole batch; once more, the statement sees the deletion.
   */
  private async upsert(params: string[]): Promise<void> {
    try {
      await this.query(UPSERT, params);
    } catch (err) {
      if (sqlState(err) !== '23503') throw err;
      await this.query(UPSERT, params);
    }
  }

  private async flushOnce(): Promise<void> {
    for (;;) {
      const flat = (await this.redis.eval(`return redis.call('ZRANGE', '${DIRTY}', 0, ${FLUSH_BATCH - 1}, 'WITHSCORES')`, [])) as string[];
      if (!flat.length) return;
      const ids: string[] = [];
      const columns: (string | number)[][] = [[], [], [], []];
      for (let i = 0; i < flat.length; i += 2) {
        const parts = flat[i].split('|');
        ids.push(flat[i], flat[i + 1]);
        if (parts.length !== 3) continue;
        columns[0].push(parts[0]);
        columns[1].push(parts[1]);
        columns[2].push(parts[2]);
        columns[3].push(Number(flat[i + 1]));
      }
      await this.upsert(columns.map(pgArray));
      await this.redis.eval(ACK, [ids.length / 2, ...ids]);
      if (flat.length < FLUSH_BATCH * 2) return;
    }
  }
}
