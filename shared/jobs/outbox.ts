import { sql } from 'drizzle-orm';
import { outbox } from '../../schema';
import { type Db, type DbOrTx, rows } from '../platform/data/db';
import { newId } from '../platform/contract/ids';
import type { Services } from '../platform/contract/services';
import { errorFields } from '../platform/contract/error-fields';

export interface Job {
  id: string;
  tenant_id: string | null;
  topic: string;
  payload: Record<string, unknown>;
  attempts: number;
}

/**
 * Runs one job; `db` is the dispatcher's connection (per request on Workers), `now` its clock,
 * `services` the rest of the runtime (config, log, outbound address checks).
 */
export type JobHandler = (job: Job, ctx: { db: Db; now: Date; services: Services }) => Promise<void>;
export type JobHandlers = Record<string, JobHandler>;

/** Backoff between attempts (about 30 s, 2 m, 10 m, 1 h, 6 h, 24 h), then the job is dead. */
export const RETRY_DELAYS_MS = [30_000, 120_000, 600_000, 3_600_000, 21_600_000, 86_400_000];
const LEASE_MS = 60_000;

/** Writes a job in the caller's transaction; it exists exactly when the change it belongs to does. */
export async function enqueueJob(tx: DbOrTx, job: { tenantId?: string | null; topic: string; payload: Record<string, unknown>; runAt: Date }): Promise<string> {
  const id = newId('job');
  await tx.insert(outbox).values({
    id,
    tenantId: job.tenantId ?? null,
    topic: job.topic,
    payload: job.payload,
    status: 'pending',
    attempts: 0,
    runAt: job.runAt,
    createdAt: job.runAt,
  });
  return id;
}

/**
 * Claims due jobs with a lease (`FOR UPDATE SKIP LOCKED`, so instances never take the same job),
 * runs them, and records the outcome. Delivery is at least once: a crash after the handler ran and
 * before the outcome was stored runs it again when the lease ends, so handlers are idempotent by id.
 */
export async function runDueJobs(services: Services, opts: { limit?: number; onlyId?: string } = {}): Promise<number> {
  const { db, jobHandlers: handlers, log } = services;
  const now = services.clock.now();
  const leaseUntil = new Date(now.getTime() + LEASE_MS).toISOString();
  const nowIso = now.toISOString();
  const idFilter = opts.onlyId ? sql`AND id = ${opts.onlyId}` : sql``;
  const claimed = await rows<Job>(
    db,
    sql`
    UPDATE outbox SET locked_until = ${leaseUntil}, attempts = attempts + 1
    WHERE id IN (
      SELECT id FROM outbox
      WHERE status = 'pending' AND run_at <= ${nowIso}
        AND (locked_until IS NULL OR locked_until < ${nowIso}) ${idFilter}
      ORDER BY run_at LIMIT ${opts.limit ?? 20}
      FOR UPDATE SKIP LOCKED)
    RETURNING id, tenant_id, topic, payload, attempts`,
  );
  // The claimed jobs are independent: run them side by side, so one slow webhook receiver (up to
  // its 10 s timeout) does not hold up the rest of the batch.
  await Promise.all(
    claimed.map(async (job) => {
      const handler = handlers[job.topic];
      try {
        if (!handler) throw new Error(`no handler for topic ${job.topic}`);
        await handler(job, { db, now, services });
        await db.execute(sql`UPDATE outbox SET status = 'done', done_at = ${nowIso}, locked_until = NULL WHERE id = ${job.id}`);
      } catch (err) {
        const message = errorFields(err).error;
        const delay = RETRY_DELAYS_MS[job.attempts - 1];
        const dead = delay === undefined;
        log.warn('job failed', { job_id: job.id, topic: job.topic, attempt: job.attempts, dead, ...errorFields(err) });
        await db.execute(sql`
          UPDATE outbox SET status = ${dead ? 'dead' : 'pending'}, last_error = ${message.slice(0, 1000)},
            locked_until = NULL, run_at = ${new Date(now.getTime() + (delay ?? 0)).toISOString()}
          WHERE id = ${job.id}`);
        if (!dead) services.scheduleJobs?.(delay);
      }
    }),
  );
  return claimed.length;
}
