import type { z } from '@hono/zod-openapi';
import type { TenantCtx } from '../../../shared/platform/contract/context';
import { validationFailure } from '../../../shared/platform/http/app';
import { AppError, errorBody } from '../../../shared/platform/contract/errors';
import { errorFields } from '../../../shared/platform/contract/error-fields';
import { write } from '../../../shared/platform/data/unit-of-work';
import { Coalescer } from '../../../shared/platform/limits/coalesce';
import { oneConnectionPerRequest, type Services } from '../../../shared/platform/contract/services';
import { type BatchStoreBody, StoreBody } from '../schemas';
import { importSource } from '../../../shared/memory/provenance';
import { type Origin, prepare, type Prepared, type StoreInput, type StoreOutcome, type StoreResult } from './prepare';
import { type Locking, writeStores } from './write';
import { GovernanceChanged, type HeldAnswer, judgeAgain, writeHolds } from './govern';
import { newMemoryId } from '../queries';
import type { BatchStorePort } from '../../../shared/memory/store-port';

/**
 * Store: check the target and embed first (outside the transaction, so a slow or failing provider
 * holds no locks and leaves nothing half-written), then one unit of work for the quota, the
 * duplicates, the row, superseding, links, events, audit entry, webhook event and milestone.
 */
export async function storeMemory(ctx: TenantCtx, input: StoreInput): Promise<{ status: 201; body: StoreResult } | { status: 202; body: HeldAnswer }> {
  const [outcome] = joinsOthers(ctx) ? [await storeWithOthers(ctx, input)] : await storeMemories(ctx, [input], { throwFailure: true });
  if (outcome.ok === 'held') return { status: 202, body: outcome.held };
  if (!outcome.ok) throw outcome.error;
  return { status: 201, body: outcome.result };
}

/**
 * Single stores of one tenant that arrive while two of its stores are being written commit together
 * in its next transaction (shared/platform/limits/coalesce.ts): they would queue on the tenant's audit chain
 * head one by one otherwise. Each still gets what storing it alone, in arrival order, would have
 * answered, and its own audit entry and events naming its own key and request. Not on Workers (a
 * request's connection is its own), nor for a request holding an Idempotency-Key (its transaction
 * marks the key) or a store composed into another verb's transaction.
 */
const joinsOthers = (ctx: TenantCtx) => !oneConnectionPerRequest(ctx.services) && !ctx.idempotency && !ctx.work;

interface Queued {
  ctx: TenantCtx;
  item: Prepared;
}
type Settled = { ok: true; result: StoreResult } | { ok: false; error: unknown } | { ok: 'held'; held: HeldAnswer };

const queues = new WeakMap<Services, Coalescer<Queued, Settled>>();

async function storeWithOthers(ctx: TenantCtx, input: StoreInput): Promise<Settled> {
  const { prepared, held, outcomes } = await prepare(ctx, [input], true);
  if (held.length) {
    await writeHolds(ctx, held, outcomes, newMemoryId, true);
    return outcomes[0];
  }
  let queue = queues.get(ctx.services);
  if (!queue) queues.set(ctx.services, (queue = new Coalescer(writeQueued, TOGETHER)));
  return queue.submit(ctx.tenantId, { ctx, item: prepared[0] });
}

/**
 * At most 100 stores a transaction (as a batch request) and two transactions of a tenant at once:
 * while one holds the chain head for its tail and commit, the next runs its probe and inserts (the
 * HNSW insert most of all). Grouping beats writing each store alone, two at once keep the chain
 * head busy without queueing behind it, and a third adds nothing (docs/performance.md has the runs).
 */
const TOGETHER = { max: 100, parallel: 2 };

/**
 * One transaction for stores of several requests of one tenant, at the clock's time when it starts
 * (after every one of them began). If it fails, each runs again alone, so that a failure is only
 * that of the store that caused it; so too when the tenant's memory policies changed since some of
 * them were judged: each is judged again as its own request (its holds are its key's).
 */
async function writeQueued(queued: Queued[]): Promise<Settled[]> {
  if (queued.length > 1) {
    const first = queued[0].ctx;
    const ctx: TenantCtx = { ...first, now: first.services.clock.now() };
    const written = await writeTogether(
      ctx,
      queued.map((q, index) => ({ ...q.item, index })),
      { judgeAgain: false },
    ).catch((err: unknown) => {
      if (!(err instanceof GovernanceChanged)) {
        ctx.services.log.warn('stores committed together failed; each runs again alone', {
          request_id: ctx.requestId,
          stores: queued.length,
          ...errorFields(err),
        });
      }
      return null;
    });
    if (written) return queued.map((_, index) => written.get(index)!);
  }
  const settled: Settled[] = [];
  for (const q of queued)
    settled.push(
      await writeTogether(q.ctx, [{ ...q.item, index: 0 }]).then(
        (w) => w.get(0)!,
        (error: unknown) => ({ ok: false as const, error }),
      ),
    );
  return settled;
}

/** Times the stores of one request are judged again when the memory policies keep changing under them. */
const JUDGEMENTS = 4;

/**
 * One transaction for `prepared`; with `throwFailure`, a store that fails rolls it back (its
 * Idempotency-Key stays unused). A transaction that finds the caller's memory policies changed since
 * the stores were judged wrote nothing: they are judged again (some may now be blocked or held,
 * their outcomes in the answer) and the rest written in a new one.
 */
async function writeTogether(
  ctx: TenantCtx,
  prepared: Prepared[],
  opts: { throwFailure?: boolean; judgeAgain?: boolean } = {},
): Promise<Map<number, StoreOutcome>> {
  const { throwFailure = false } = opts;
  const outcomes = new Map<number, StoreOutcome>();
  for (let judged = 1; ; judged++) {
    const locking: Locking = { first: false, separateCommit: false };
    try {
      const done = await write(ctx, async (work) => {
        const done = await writeStores(work, prepared, locking);
        for (const o of done.values()) if (!o.ok && throwFailure) throw o.error;
        return done;
      });
      for (const [index, outcome] of done) outcomes.set(index, outcome);
      return outcomes;
    } catch (err) {
      if (!(err instanceof GovernanceChanged) || opts.judgeAgain === false) throw err;
      // Nothing was written; retrying the request judges it against the policies as they then are.
      if (judged >= JUDGEMENTS) throw new AppError('SERVICE_UNAVAILABLE', 'The memory policies are changing; retry the request', { retry_after: 1 });
      prepared = await judgeAgain(ctx, prepared, outcomes, newMemoryId, throwFailure);
      if (!prepared.length) return outcomes;
    }
  }
}

/**
 * Stores several memories as one request: each gets what storing it alone would have answered (in
 * order, so a later one sees the earlier ones as duplicates, link targets and quota spent), one
 * embedding call serves all, and everything that succeeds commits in one transaction. A memory that
 * fails (403, 409, 429, ...) writes nothing and does not stop the others.
 */
export async function storeMemories(ctx: TenantCtx, inputs: StoreInput[], opts: { throwFailure?: boolean; origin?: Origin } = {}): Promise<StoreOutcome[]> {
  const { prepared, outcomes, held } = await prepare(ctx, inputs, opts.throwFailure ?? false, { origin: opts.origin });
  await writeHolds(ctx, held, outcomes, newMemoryId, opts.throwFailure ?? false);
  if (!prepared.length) return outcomes;
  const written = await writeTogether(ctx, prepared, { throwFailure: opts.throwFailure });
  for (const [index, outcome] of written) outcomes[index] = outcome;
  return outcomes;
}

/** POST /v1/memories/batch: each body validated on its own, then stored as storeMemories does. */
export async function storeBatch(ctx: TenantCtx, body: z.infer<typeof BatchStoreBody>) {
  const results: { index: number; status: number; memory?: StoreResult; held?: HeldAnswer; error?: ReturnType<typeof errorBody> }[] = [];
  const valid: { index: number; input: StoreInput }[] = [];
  for (const [index, raw] of body.memories.entries()) {
    const parsed = StoreBody.safeParse(raw);
    if (parsed.success) valid.push({ index, input: parsed.data });
    else results[index] = failed(ctx, index, validationFailure(parsed.error, `memories[${index}]`));
  }
  const outcomes = await storeMemories(
    ctx,
    valid.map((v) => v.input),
  );
  outcomes.forEach((o, i) => {
    const { index } = valid[i];
    results[index] = o.ok === 'held' ? { index, status: 202, held: o.held } : o.ok ? { index, status: 201, memory: o.result } : failed(ctx, index, o.error);
  });
  const stored = results.filter((r) => r.status === 201).length;
  const held = results.filter((r) => r.status === 202).length;
  return { results, stored, held, failed: results.length - stored - held };
}

const failed = (ctx: TenantCtx, index: number, error: AppError) => ({ index, status: error.status, error: errorBody(error, ctx.requestId ?? '') });

/** The batch path as shared/memory/store-port.ts offers it to other families (the importer). */
export const batchStorePort: BatchStorePort = {
  invalid(input) {
    const parsed = StoreBody.safeParse(input);
    return parsed.success ? null : parsed.error.issues.map((i) => `${i.path.join('.') || 'body'}: ${i.message}`).join('; ');
  },
  store: async (ctx, inputs, imported) =>
    (
      await storeMemories(
        ctx,
        inputs.map((i) => StoreBody.parse(i)),
        imported ? { origin: (index, input) => importSource(ctx, input.agent_id ?? null, imported.refs[index] ?? null) } : {},
      )
    ).map((o) => (o.ok === 'held' ? { ok: true as const, result: { id: o.held.memory_id }, held: true } : o)),
};
