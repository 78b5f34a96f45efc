import { sql } from 'drizzle-orm';
import type { JobHandler } from '../../shared/jobs/outbox';
import { batchStore } from '../../shared/memory/store-port';
import { systemCtx, type TenantCtx, tenantCtx } from '../../shared/platform/contract/context';
import { rows } from '../../shared/platform/data/db';
import { errorFields } from '../../shared/platform/contract/error-fields';
import type { Tier } from '../../shared/platform/contract/tiers';
import { type Work, write } from '../../shared/platform/data/unit-of-work';
import type { LineError } from './parse';
import { bodyOf, restoreLine } from './restore';
import * as st from './staging';

export const IMPORT_TOPIC = 'import_run';
/** Memories a transaction stores, as a batch request does. */
const CHUNK = 100;
/** Spaces, agents, packs, policies and triples a transaction restores. */
const OTHERS_CHUNK = 500;
/**
 * A job slice stops after this many memory chunks or this long, whichever comes first, and queues
 * the next slice: it stays well inside the job lease and a Worker's limits, and each slice reports.
 */
const SLICE_CHUNKS = 10;
const SLICE_MS = 15_000;

/**
 * One chunk of an import, in one unit of work: the import lock (two chunks, an erasure and an
 * import never interleave: docs/portability.md#large-imports), the import row locked, the chunk's
 * staged lines read, `fn` storing them, the lines deleted and the counts added. Null when the
 * import is not running or has no such lines left.
 */
function chunk(ctx: TenantCtx, importId: string, memories: boolean, fn: (work: Work<TenantCtx>, lines: st.StagedLine[]) => Promise<st.Progress>) {
  let taken: number[] = [];
  return write(ctx, async (work) => {
    await work.lock(`import:${ctx.tenantId}`);
    const row = await st.importOf(work.tx, ctx.tenantId, importId, { forUpdate: true });
    if (row?.status !== 'running') return null;
    const lines = await st.nextLines(work.tx, ctx.tenantId, importId, memories, memories ? CHUNK : OTHERS_CHUNK);
    if (!lines.length) return null;
    taken = lines.map((l) => l.line);
    const progress = await fn(work, lines);
    await st.unstage(work.tx, ctx.tenantId, importId, taken);
    await st.record(work.tx, row, progress, ctx.now);
    return progress;
  }).catch(async (err: unknown) => {
    if (!taken.length) throw err;
    // A chunk that fails as a whole (an embedding outage) stores nothing; its lines say so and the import goes on.
    ctx.services.log.warn('import chunk failed', { request_id: ctx.requestId, import_id: importId, ...errorFields(err) });
    const lines = taken;
    taken = [];
    return write(ctx, async (work) => {
      await work.lock(`import:${ctx.tenantId}`);
      const row = await st.importOf(work.tx, ctx.tenantId, importId, { forUpdate: true });
      if (row?.status !== 'running') return null;
      await st.unstage(work.tx, ctx.tenantId, importId, lines);
      const errors: LineError[] = lines.map((line) => ({
        line,
        code: 'SERVICE_UNAVAILABLE',
        message: 'this chunk could not be stored; import the file again to retry it',
      }));
      const progress = { processed: lines.length, failed: lines.length, errors };
      await st.record(work.tx, row, progress, ctx.now);
      return progress;
    });
  });
}

/**
 * Spaces, packs, agents, policies and triples, each through the create verb of its family inside
 * the chunk's unit of work (docs/portability.md#what-an-import-checks): the family's schema, caps,
 * locks, tier gates, audit entry and ids. A record the verb refuses is that line's error.
 */
const restoreOthers = (ctx: TenantCtx, importId: string) =>
  chunk(ctx, importId, false, async (work, lines) => {
    const again = await st.knownSources(
      work.tx,
      ctx.tenantId,
      lines.map((l) => l.source),
    );
    const p = { processed: lines.length, stored: st.zeroCounts(), alreadyImported: 0, failed: 0, errors: [] as LineError[] };
    const done: { source: string; target: string | null }[] = [];
    for (const l of lines) {
      if (l.kind === 'memory') continue; // not in this group
      if (again.has(l.source)) {
        p.alreadyImported += 1;
        continue;
      }
      const outcome = await restoreLine(work, { line: l.line, kind: l.kind, body: bodyOf(l.kind, l.record.data ?? {}) });
      if ('code' in outcome) {
        p.failed += 1;
        p.errors.push(outcome);
        continue;
      }
      if (outcome.target) p.stored[l.kind] += 1;
      else p.alreadyImported += 1;
      done.push({ source: l.source, target: outcome.target });
    }
    await st.remember(work.tx, ctx.tenantId, ctx.now, done);
    return p;
  });

/** Memories through the batch store path (quota, duplicates, events, audit as POST /v1/memories/batch). */
const storeMemories = (ctx: TenantCtx, importId: string) =>
  chunk(ctx, importId, true, async (work, lines) => {
    const spaces = lines.map((l) => l.record.spaceSource).filter((s): s is string => !!s);
    const known = await st.knownSources(work.tx, ctx.tenantId, [...lines.map((l) => l.source), ...spaces]);
    const erased = await st.erasedSources(
      work.tx,
      ctx.tenantId,
      lines.map((l) => l.source),
      known,
    );
    const gone = lines.filter((l) => erased.has(l.source));
    const fresh = lines.filter((l) => !known.has(l.source) && !erased.has(l.source));
    const bodies = fresh.map((l) => {
      const space = l.record.spaceSource ? known.get(l.record.spaceSource) : undefined;
      return space ? { ...l.record.body, space_id: space } : (l.record.body ?? {});
    });
    // Imported memories are `import` and `external` whoever runs the import (docs/memories.md#provenance-and-trust).
    const refs = fresh.map((l) => l.record.ref ?? null);
    const outcomes = bodies.length ? await batchStore().store(work.ctx, bodies, { refs }) : [];
    const p = {
      processed: lines.length,
      stored: { memory: 0, held: 0 },
      alreadyImported: lines.length - fresh.length - gone.length,
      erased: gone.length,
      failed: 0,
      errors: [] as LineError[],
    };
    const done: { source: string; target: string | null }[] = [];
    outcomes.forEach((o, k) => {
      if (o.ok) {
        // A held line is remembered under the id it gets when approved: importing the file again holds it no twice.
        if (o.held) p.stored.held += 1;
        else p.stored.memory += 1;
        done.push({ source: fresh[k].source, target: o.result.id });
      } else {
        p.failed += 1;
        p.errors.push({ line: fresh[k].line, code: o.error.code, message: o.error.message });
      }
    });
    await st.remember(work.tx, ctx.tenantId, ctx.now, done);
    return p;
  });

/**
 * Stores the import's staged lines, chunk by chunk, until none are left (true) or, in a job slice,
 * until the slice is spent (false: more to do).
 */
export async function advance(ctx: TenantCtx, importId: string, slice: { deadline: number; chunks: number } | null): Promise<boolean> {
  let chunks = 0;
  const spent = () => slice !== null && (++chunks >= slice.chunks || Date.now() > slice.deadline);
  while (await restoreOthers(ctx, importId)) if (spent()) return false;
  while (await storeMemories(ctx, importId)) if (spent()) return false;
  return true;
}

const countsOf = (row: st.ImportRow) => ({
  lines: row.lines,
  stored: { ...st.zeroCounts(), ...row.stored },
  already_imported: row.already_imported,
  failed: row.failed,
  erased: row.erased,
  errors_total: row.errors_total,
});

/** The import is done: `import.completed` in the audit trail and to webhooks and the live stream, once. */
export async function finish(ctx: TenantCtx, importId: string) {
  await write(ctx, async (work) => {
    await work.lock(`import:${ctx.tenantId}`);
    const row = await st.complete(work.tx, ctx.tenantId, importId, ctx.now);
    if (!row) return;
    const counts = countsOf(row);
    await work.audit({ operation: 'import.completed', resourceType: 'import', resourceId: importId, metadata: { import_id: importId, ...counts } });
    await work.event('import.completed', { import_id: importId, format: row.format, ...counts });
  });
}

/** A slice ended with lines left: `import.progress`, and the next slice queued with it. */
async function continueLater(ctx: TenantCtx, importId: string) {
  await write(ctx, async (work) => {
    const row = await st.importOf(work.tx, ctx.tenantId, importId);
    if (row?.status !== 'running') return;
    await work.event('import.progress', { import_id: importId, processed: row.processed, staged: row.staged, ...countsOf(row) });
    await work.enqueue({ topic: IMPORT_TOPIC, payload: { import_id: importId, key_id: ctx.auth.keyId } });
  });
}

/** Queues the import's first slice; a writing import always has one (for a small import, a fallback). */
export const queueImport = (work: Work<TenantCtx>, importId: string, runAt?: Date) =>
  work.enqueue({ topic: IMPORT_TOPIC, payload: { import_id: importId, key_id: work.ctx.auth.keyId }, runAt });

/**
 * The job: one slice of an import, as the key that started it, at the tenant's tier now. At least
 * once: a slice that runs twice finds the chunks the first one stored gone from the staged lines.
 */
export const importJob: JobHandler = async (job, { db, now, services }) => {
  if (!job.tenant_id) return;
  const { import_id: importId, key_id: keyId } = job.payload as { import_id: string; key_id: string };
  const [tenant] = await rows<{ tier: Tier }>(db, sql`SELECT tier FROM tenants WHERE id = ${job.tenant_id}`);
  if (!tenant) return;
  const ctx = tenantCtx({ ...systemCtx(services, now), db, actor: keyId }, { tenantId: job.tenant_id, keyId, tier: tenant.tier, email: '' });
  if (await advance(ctx, importId, { deadline: Date.now() + SLICE_MS, chunks: SLICE_CHUNKS })) await finish(ctx, importId);
  else await continueLater(ctx, importId);
};
