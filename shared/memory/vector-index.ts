import { sql } from '../platform/data/db';
import { type Db, rows } from '../platform/data/db';
import type { MaintenanceTask } from '../jobs/maintenance';
import { enqueueJob, type JobHandler } from '../jobs/outbox';
import type { Work } from '../platform/data/unit-of-work';

export const VECTOR_INDEX_TOPIC = 'vector_index';

/**
 * Rows per transaction: each costs an HNSW insert, which grows with the graph and with how much of
 * it is out of memory (docs/scaling.md: at 250,000 vectors a batch of 200 held its row locks for
 * seconds). A small batch keeps that wait short for a PATCH of one of its rows; the commit per batch
 * costs little beside the inserts.
 */
const BATCH = 50;
/** One run stops after this long and leaves the rest to the next (a Worker's request has limits). */
const BUDGET_MS = 20_000;

/** Queues moving the rows a rollback left index_pending into the graph (in the rollback's transaction). */
export function enqueueVectorIndexing(work: Work) {
  return work.enqueue({ topic: VECTOR_INDEX_TOPIC, payload: {} });
}

/**
 * Moves index_pending rows (migrations/0006) into the HNSW graph, a batch per transaction, one
 * tenant's or everyone's, until none are left or the time budget is spent. Searches see the rows
 * throughout (exactly while pending, through the graph after), so stopping anywhere is safe.
 */
export async function indexPendingVectors(db: Db, opts: { tenantId?: string | null; budgetMs?: number } = {}) {
  const tenant = opts.tenantId ? sql`AND tenant_id = ${opts.tenantId}` : sql``;
  const deadline = Date.now() + (opts.budgetMs ?? BUDGET_MS);
  let indexed = 0;
  for (;;) {
    const moved = await rows<{ id: string }>(
      db,
      sql`UPDATE memories SET index_pending = false
          WHERE id IN (SELECT id FROM memories WHERE index_pending ${tenant} LIMIT ${BATCH} FOR UPDATE SKIP LOCKED)
          RETURNING id`,
    );
    indexed += moved.length;
    if (moved.length < BATCH) return { indexed, remaining: false };
    if (Date.now() > deadline) return { indexed, remaining: true };
  }
}

/** The job a rollback queues; when its budget runs out it queues the rest as a new job. */
export const vectorIndexJob: JobHandler = async (job, { db, now }) => {
  const { remaining } = await indexPendingVectors(db, { tenantId: job.tenant_id });
  // A job, not a request: the runner that runs it drains the outbox again, so no wake-up is needed.
  if (remaining && job.tenant_id) await enqueueJob(db, { tenantId: job.tenant_id, topic: VECTOR_INDEX_TOPIC, payload: {}, runAt: now });
};

/** Safety net on the maintenance schedule: whatever a lost job left pending. */
export const indexPendingVectorsTask: MaintenanceTask = async ({ services }) => (await indexPendingVectors(services.db)).indexed;
