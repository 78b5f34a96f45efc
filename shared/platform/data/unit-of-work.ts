import { type SQL } from 'drizzle-orm';
import { sql } from './db';
import { emitEvent, type EventType } from '../../jobs/events';
import { enqueueJob } from '../../jobs/outbox';
import { recordMemoryEvents, type MemoryEventInput } from '../../memory/events';
import { countMemoryChanges, type MemoryChangeTally, recordAnomaly, tallyMemoryChanges } from './anomalies';
import { appendAudit } from './audit';
import { markCommitted } from './idempotency';
import { sqlState } from './pg-errors';
import type { Ctx } from '../contract/context';
import { preparedRows, rowsAndCommit, type Tx } from './db';
import { type Milestone, recordMilestone } from './milestones';
import { usageChangedIn } from './usage';

type Tenanted<T> = Omit<T, 'tenantId'> & { tenantId?: string };

/**
 * The open transaction of a write and its actor-bound helpers. Everything written through it
 * commits or fails together: the change, its audit entry, its memory events, its outbox rows.
 * Entries go to the caller's tenant unless `tenantId` names another (a write through a share lands
 * in the owner's store and chain).
 */
export interface Work<C extends Ctx = Ctx> {
  readonly tx: Tx;
  /** The caller's ctx bound to this transaction: pass it to another verb to compose in one transaction. */
  readonly ctx: C;
  audit(entry: {
    operation: string;
    resourceType: string;
    resourceId?: string | null;
    metadata?: Record<string, unknown>;
    tenantId?: string;
  }): Promise<{ id: string; seq: number; hash: string }>;
  memoryEvents(events: Tenanted<Omit<MemoryEventInput, 'at' | 'actor' | 'requestId'>>[]): Promise<void>;
  /** A webhook/stream event, stored with the change, with a delivery job per subscribed webhook. */
  event(type: EventType, data: Record<string, unknown>, opts?: { tenantId?: string }): Promise<string>;
  /** A background job, in the outbox with the change; the runner is woken after commit. */
  enqueue(job: { topic: string; payload: Record<string, unknown>; runAt?: Date; tenantId?: string | null }): Promise<string>;
  milestone(name: Milestone, metadata?: Record<string, unknown>, opts?: { tenantId?: string }): Promise<void>;
  /**
   * For a verb that writes its memory events, stream events or jobs with its own statements (the
   * store path): counts its memory changes for the anomaly windows, and wakes the job runner and
   * the tenants' live streams after commit, as memoryEvents, event and enqueue do.
   */
  noteWritten(written: { memoryEvents?: readonly { tenantId: string; kind: string }[]; eventTenants?: readonly string[]; jobs?: boolean }): void;
  /**
   * Runs `fn` after the outermost commit, before the write answers (a rollback runs nothing): what
   * other processes must learn of the change only once it is visible, such as an epoch in Redis.
   */
  afterCommit(fn: () => Promise<void>): void;
  /** The same transaction acting as `system` (what the service records on its own, such as anomalies). */
  system(): Work<C>;
  /**
   * The same transaction acting for another caller of the same tenant: an approved held memory is
   * stored as a write of the key that wrote it (docs/governed-memories.md), in the approver's transaction.
   */
  actingAs<D extends Ctx>(ctx: D): Work<D>;
  /** Serializes writers that take the same lock key until this transaction ends. */
  lock(key: string): Promise<void>;
  /**
   * The rows of the transaction's last statement (a named prepared statement, as `preparedRows`).
   * Where the driver allows, and this is the outermost write with nothing left for after it (no
   * Idempotency-Key to mark, no memory changes to count), it commits in the same round trip:
   * `build(true)` is that statement, which may then raise 40001 for whatever must not commit that
   * way (the write runs again); otherwise `build(false)` runs and the write commits as usual.
   * Nothing may run in the transaction after it.
   */
  lastStatement<T>(build: (commitsWithIt: boolean) => SQL): Promise<T[]>;
}

function tenantOf(ctx: Ctx, explicit: string | undefined): string {
  const tenantId = explicit ?? ctx.auth?.tenantId;
  if (!tenantId) throw new Error('a write without a tenant must name the tenant of its audit entries and events');
  return tenantId;
}

interface WorkState {
  jobsEnqueued: boolean;
  /** Tenants this transaction stored stream events for: their live streams are woken after commit. */
  eventTenants: Set<string>;
  /** Memory creates, updates and deletes per tenant, counted for the anomaly windows at the end. */
  memoryChanges: MemoryChangeTally;
  /** `afterCommit`'s work, in order; null while there is none. */
  afterCommit: (() => Promise<void>)[] | null;
}

/** `outermost`: the Work of the write that opened the transaction (a joined verb, or `system()`, gets one that is not). */
function openWork<C extends Ctx>(ctx: C, tx: Tx, state: WorkState, outermost = false): Work<C> {
  const bound = { ...ctx, db: tx } as C & { work?: unknown };
  const who = { actor: ctx.actor, requestId: ctx.requestId, at: ctx.now };
  const work: Work<C> = {
    tx,
    ctx: bound,
    audit: (e) =>
      appendAudit(tx, {
        ...e,
        metadata: ctx.via ? { ...e.metadata, via: ctx.via } : e.metadata,
        tenantId: tenantOf(ctx, e.tenantId),
        actor: who.actor,
        requestId: who.requestId,
        at: who.at,
      }),
    memoryEvents: (events) => {
      const rows = events.map((e) => ({ ...e, tenantId: tenantOf(ctx, e.tenantId), actor: who.actor, requestId: who.requestId, at: who.at }));
      tallyMemoryChanges(state.memoryChanges, rows);
      return recordMemoryEvents(tx, rows);
    },
    event: async (type, data, opts = {}) => {
      const tenantId = tenantOf(ctx, opts.tenantId);
      const emitted = await emitEvent(tx, { tenantId, type, data, at: who.at });
      if (emitted.deliveries) state.jobsEnqueued = true;
      state.eventTenants.add(tenantId);
      return emitted.id;
    },
    enqueue: async (job) => {
      state.jobsEnqueued = true;
      return enqueueJob(tx, {
        tenantId: job.tenantId === undefined ? (ctx.auth?.tenantId ?? null) : job.tenantId,
        topic: job.topic,
        payload: job.payload,
        runAt: job.runAt ?? who.at,
      });
    },
    milestone: (name, metadata = {}, opts = {}) => recordMilestone(tx, tenantOf(ctx, opts.tenantId), name, who.at, metadata),
    afterCommit: (fn) => {
      (state.afterCommit ??= []).push(fn);
    },
    system: () => openWork({ ...ctx, actor: 'system', work: undefined, via: undefined }, tx, state),
    actingAs: (other) => openWork({ ...other, work: undefined }, tx, state),
    noteWritten: (written) => {
      if (written.memoryEvents) tallyMemoryChanges(state.memoryChanges, written.memoryEvents);
      for (const tenantId of written.eventTenants ?? []) state.eventTenants.add(tenantId);
      if (written.jobs) state.jobsEnqueued = true;
    },
    lock: async (key) => {
      await tx.execute(sql`SELECT pg_advisory_xact_lock(hashtextextended(${key}, 0))`);
    },
    lastStatement: async <T>(build: (commitsWithIt: boolean) => SQL) => {
      if (outermost && !ctx.idempotency && !state.memoryChanges.size) {
        const committed = await rowsAndCommit<T>(tx, build(true));
        if (committed) return committed;
      }
      return preparedRows<T>(tx, build(false));
    },
  };
  bound.work = work;
  return work;
}

/**
 * The anomaly windows of the memory changes this transaction made (shared/platform/data/anomalies.ts),
 * counted last, in the same transaction; an anomaly it triggers is recorded with it, by `system`.
 */
async function detectAnomalies(ctx: Ctx, tx: Tx, state: WorkState): Promise<void> {
  const system = openWork({ ...ctx, actor: 'system', work: undefined }, tx, state);
  await countMemoryChanges(tx, state.memoryChanges, ctx.now, (tenantId, kind, count) =>
    recordAnomaly(system, { tenantId, kind, now: ctx.now, count, requestId: ctx.requestId }),
  );
}

/** Deadlock (40P01) and serialization failure (40001): Postgres aborted the transaction so another could go on; it is safe to run again. */
function retryable(err: unknown): boolean {
  const code = sqlState(err);
  return code === '40P01' || code === '40001';
}
const ATTEMPTS = 4;

/**
 * The one way to write: opens a transaction, or joins the one `ctx` already belongs to (a verb
 * called with `work.ctx`), and runs `fn` with the actor-bound helpers. A request holding an
 * Idempotency-Key marks it committed in the same transaction; memory creates, updates and deletes
 * are counted in their tenants' anomaly windows there too. After the outermost commit, if any
 * job or event was enqueued, the job runner is woken, and the live event streams of every tenant
 * that got events (shared/platform/data/event-bus.ts); a rollback wakes nothing.
 *
 * A transaction that Postgres aborts for a deadlock or a serialization failure runs again, so `fn`
 * may run more than once: keep its effects inside the transaction.
 */
export async function write<C extends Ctx, T>(ctx: C, fn: (work: Work<C>) => Promise<T>): Promise<T> {
  const joined = ctx.work as Work<C> | undefined;
  // A verb composed into another's transaction: its last statement is not the transaction's.
  if (joined) return fn({ ...joined, lastStatement: (build) => preparedRows(joined.tx, build(false)) });
  for (let attempt = 1; ; attempt++) {
    const state: WorkState = { jobsEnqueued: false, eventTenants: new Set(), memoryChanges: new Map(), afterCommit: null };
    let transaction = null as Tx | null; // assigned in the callback (TS cannot see it)
    try {
      const result = await ctx.services.db.transaction(async (tx) => {
        transaction = tx;
        const done = await fn(openWork(ctx, tx, state, true));
        if (state.memoryChanges.size) await detectAnomalies(ctx, tx, state);
        // With the change, so a retry never repeats a committed write even if its response is lost.
        if (ctx.idempotency) await markCommitted(tx, ctx.idempotency);
        return done;
      });
      // A write request announced itself for its own tenant (request-gate.ts); any other tenant's
      // counters it changed, and a change without a request, take new epochs now.
      const gate = ctx.services.gate;
      const changed = transaction ? usageChangedIn(transaction) : undefined;
      const unannounced = gate && changed ? [...changed].filter((t) => !gate.announced(ctx.usageWrite, t)) : [];
      if (unannounced.length) await gate!.bumpUsageEpochs(unannounced);
      if (state.afterCommit) for (const fn of state.afterCommit) await fn();
      if (state.jobsEnqueued) ctx.services.notifyJobs();
      if (state.eventTenants.size) ctx.services.eventBus?.publish(state.eventTenants);
      return result;
    } catch (err) {
      if (attempt >= ATTEMPTS || !retryable(err)) throw err;
      // A short random pause, so the transactions that collided do not meet again at once.
      await new Promise((resolve) => setTimeout(resolve, Math.random() * 10 * attempt));
    }
  }
}
