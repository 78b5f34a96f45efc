import type { z } from '@hono/zod-openapi';
import { type SQL, sql } from 'drizzle-orm';
import type { MaintenanceTask } from '../../shared/jobs/maintenance';
import { cortexConfigRow, cortexSettings, liveOf, nearDuplicatePage } from '../../shared/memory/cortex';
import { type MemoryRow, toMemoryDto } from '../../shared/memory/rows';
import { type TenantCtx, tenantCtx } from '../../shared/platform/context';
import { toUrn } from '../../shared/platform/ids';
import { hasFeature, requireFeature, type Tier, TIERS } from '../../shared/platform/tiers';
import { DAY, HOUR } from '../../shared/platform/time';
import { write } from '../../shared/platform/unit-of-work';
import * as q from './queries';
import * as s from './schemas';

/** Memories read per page and changed per transaction. */
const BATCH = 500;
const WEEK = 7 * DAY;
/** The daily schedule: a tenant is due when its last run is older than this (slack for the cron's own jitter). */
const DUE_AFTER = 20 * HOUR;

export async function getConfig(ctx: TenantCtx) {
  return s.toConfig(ctx.tenantId, await cortexConfigRow(ctx.db, ctx.tenantId));
}

export async function updateConfig(ctx: TenantCtx, input: z.infer<typeof s.ConfigPatch>) {
  if (input.insight_generation_enabled) requireFeature(ctx.tier, 'cortex_insights');
  return write(ctx, async (work) => {
    await work.lock(`cortex-config:${ctx.tenantId}`);
    const current = s.toConfig(ctx.tenantId, await cortexConfigRow(work.tx, ctx.tenantId));
    const next = { ...current, ...Object.fromEntries(Object.entries(input).filter(([, v]) => v !== undefined)) };
    const row = await q.upsertConfig(work.tx, {
      tenantId: ctx.tenantId,
      enabled: next.enabled,
      consolidationEnabled: next.consolidation_enabled,
      consolidationThreshold: next.consolidation_threshold,
      reinforcementEnabled: next.reinforcement_enabled,
      decayEnabled: next.decay_enabled,
      decayAgeDays: next.decay_age_days,
      insightGenerationEnabled: next.insight_generation_enabled,
      updatedAt: ctx.now,
    });
    const changed = Object.keys(input).filter((k) => input[k as keyof typeof input] !== undefined);
    await work.audit({ operation: 'cortex.config', resourceType: 'cortex_config', resourceId: ctx.tenantId, metadata: { changed } });
    return s.toConfig(ctx.tenantId, row);
  });
}

export async function status(ctx: TenantCtx) {
  const config = await getConfig(ctx);
  return { enabled: config.enabled, last_run_at: config.last_run_at, run_stats: config.run_stats, config };
}

type Pass = 'consolidate' | 'reinforce' | 'decay';

/** One change a run makes: applied only if the memory still matches `where` when it is locked. */
interface Planned {
  id: string;
  pass: Pass;
  detail: Record<string, unknown>;
  where: SQL;
  sets: SQL[];
}

const newer = (a: { createdAt: number; id: string }, b: { createdAt: number; id: string }) => a.createdAt > b.createdAt || (a.createdAt === b.createdAt && a.id > b.id);

/**
 * Consolidate (DESIGN §5): near-duplicate pairs in a space (same content hash, or nearest neighbour
 * at cosine ≥ threshold: one index probe per memory, never all pairs) joined into groups; in each
 * group the newest memory supersedes every other. Nothing is deleted.
 */
async function planConsolidate(ctx: TenantCtx, threshold: number): Promise<Planned[]> {
  const nodes = new Map<string, { createdAt: number; id: string }>();
  const parent = new Map<string, string>();
  const find = (x: string): string => {
    let r = x;
    while (parent.get(r) !== r) r = parent.get(r)!;
    parent.set(x, r);
    return r;
  };
  const pairs: [string, string][] = [];
  for (let afterId: string | null = null; ; ) {
    const page = await nearDuplicatePage(ctx.db, ctx.tenantId, ctx.now, { threshold, afterId, limit: BATCH });
    for (const r of page) {
      nodes.set(r.id, { createdAt: new Date(r.created_at).getTime(), id: r.id });
      parent.set(r.id, r.id);
      if (r.dup) pairs.push([r.id, r.dup]);
    }
    if (page.length < BATCH) break;
    afterId = page[page.length - 1].id;
  }
  for (const [a, b] of pairs) {
    if (!parent.has(b)) continue; // not live by now
    const [ra, rb] = [find(a), find(b)];
    if (ra !== rb) parent.set(ra, rb);
  }
  const survivor = new Map<string, { createdAt: number; id: string }>();
  for (const n of nodes.values()) {
    const root = find(n.id);
    const best = survivor.get(root);
    if (!best || newer(n, best)) survivor.set(root, n);
  }
  const planned: Planned[] = [];
  for (const n of [...nodes.values()].sort((a, b) => (a.id < b.id ? -1 : 1))) {
    const keep = survivor.get(find(n.id))!;
    if (keep.id === n.id) continue;
    planned.push({
      id: n.id,
      pass: 'consolidate',
      detail: { superseded_by: toUrn(keep.id) },
      where: sql`${liveOf(ctx.tenantId, ctx.now)} AND EXISTS (SELECT 1 FROM memories k WHERE k.id = ${keep.id}::uuid AND ${liveOf(ctx.tenantId, ctx.now, 'k')})`,
      sets: [sql`superseded_by = ${keep.id}::uuid`],
    });
  }
  return planned;
}

async function planPass(ctx: TenantCtx, pass: 'reinforce' | 'decay', where: SQL, skip: Set<string>): Promise<Planned[]> {
  const planned: Planned[] = [];
  for (let afterId: string | null = null; ; ) {
    const page: MemoryRow[] = await q.candidatePage(ctx.db, where, afterId, BATCH);
    for (const r of page) {
      if (skip.has(r.id)) continue;
      const importance = Number(r.importance);
      const confidence = Number(r.confidence);
      planned.push(
        pass === 'reinforce'
          ? { id: r.id, pass, where, detail: { importance: { from: importance, to: importance + 1 } }, sets: [sql`importance = m.importance + 1`] }
          : {
              id: r.id,
              pass,
              where,
              detail: { importance: { from: importance, to: importance - 1 }, confidence: { from: confidence, to: Math.round(confidence * 0.9 * 1e6) / 1e6 } },
              sets: [sql`importance = m.importance - 1`, sql`confidence = m.confidence * 0.9`],
            },
      );
    }
    if (page.length < BATCH) break;
    afterId = page[page.length - 1].id;
  }
  return planned;
}

const CHANGED: Record<Pass, string[]> = { consolidate: ['superseded_by'], reinforce: ['importance'], decay: ['importance', 'confidence'] };

/** Applies planned changes, BATCH per transaction, each an ordinary memory update by `ctx.actor`. */
async function apply(ctx: TenantCtx, planned: Planned[]): Promise<number> {
  let done = 0;
  for (let i = 0; i < planned.length; i += BATCH) {
    const chunk = planned.slice(i, i + BATCH);
    done += await write(ctx, async (work) => {
      const events = [];
      for (const p of chunk) {
        const current = await q.lockIf(work.tx, ctx.tenantId, p.id, p.where);
        if (!current) continue;
        const row = await q.update(work.tx, ctx.tenantId, p.id, p.sets, ctx.now);
        const [before, after] = [toMemoryDto(current), toMemoryDto(row)];
        const changed = CHANGED[p.pass];
        events.push({ memoryId: p.id, kind: 'update' as const, before, after, embedding: JSON.parse(row.embedding_text) as number[], metadata: { pass: p.pass } });
        await work.audit({ operation: 'memory.update', resourceType: 'memory', resourceId: after.uuid, metadata: { changed, pass: p.pass, hash: after.hash, agent_id: after.agent_id } });
        await work.event('memory.updated', { memory: after, changed });
      }
      await work.memoryEvents(events);
      return events.length;
    });
  }
  return done;
}

/** One Cortex run over the tenant's memories: plans each pass from the store as it is, then (unless dry) applies it. */
export async function runPasses(ctx: TenantCtx, dryRun: boolean) {
  const config = s.toConfig(ctx.tenantId, await cortexConfigRow(ctx.db, ctx.tenantId));
  const { threshold, decayAgeDays } = await cortexSettings(ctx.db, ctx.tenantId);
  const cortex: TenantCtx = { ...ctx, actor: 'cortex', idempotency: undefined };
  const counts = { consolidated: 0, boosted: 0, decayed: 0, insights_generated: 0 };
  const changes: Planned[] = [];
  const touched = new Set<string>();
  const step = async (planned: Planned[]) => {
    for (const p of planned) touched.add(p.id);
    changes.push(...planned);
    return dryRun ? planned.length : apply(cortex, planned);
  };
  if (config.consolidation_enabled) counts.consolidated = await step(await planConsolidate(ctx, threshold));
  if (config.reinforcement_enabled) {
    counts.boosted = await step(await planPass(ctx, 'reinforce', q.reinforceWhere(ctx.tenantId, ctx.now, new Date(ctx.now.getTime() - WEEK)), touched));
  }
  if (config.decay_enabled) {
    counts.decayed = await step(await planPass(ctx, 'decay', q.decayWhere(ctx.tenantId, ctx.now, new Date(ctx.now.getTime() - decayAgeDays * DAY)), touched));
  }
  if (dryRun) {
    return { ...counts, dry_run: true, changes: changes.map((c) => ({ memory_id: toUrn(c.id), pass: c.pass, detail: c.detail })) };
  }
  await write({ ...cortex, idempotency: ctx.idempotency }, async (work) => {
    await q.recordRun(work.tx, ctx.tenantId, ctx.now, counts);
    await work.audit({ operation: 'cortex.run', resourceType: 'memory_store', metadata: counts });
    await work.milestone('first_cortex', counts);
  });
  return { ...counts, dry_run: false };
}

export const run = (ctx: TenantCtx, query: { dry_run?: 'true' | 'false' }) => runPasses(ctx, query.dry_run === 'true');

/** Maintenance: the daily Cortex run of every tenant that enabled it (and whose tier has Cortex). */
export const dailyRuns: MaintenanceTask = async (sys) => {
  const tiers = TIERS.filter((t) => hasFeature(t, 'cortex'));
  const due = await q.dueTenants(sys.db, new Date(sys.now.getTime() - DUE_AFTER), tiers);
  for (const t of due) {
    const ctx = tenantCtx({ ...sys, actor: 'cortex' }, { tenantId: t.id, keyId: 'cortex', tier: t.tier as Tier, email: t.email });
    await runPasses(ctx, false);
  }
  return due.length;
};
