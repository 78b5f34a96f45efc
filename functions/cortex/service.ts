import type { z } from '@hono/zod-openapi';
import { type SQL, sql } from 'drizzle-orm';
import type { MaintenanceTask } from '../../shared/jobs/maintenance';
import type { JobHandler } from '../../shared/jobs/outbox';
import { cortexConfigRow, cortexSettings, liveOf, probeNeighbours, tenantsToProbe } from '../../shared/memory/cortex';
import { type MemoryRow, toMemoryDto } from '../../shared/memory/rows';
import { systemCtx, type TenantCtx, tenantCtx } from '../../shared/platform/contract/context';
import { toUrn } from '../../shared/platform/contract/ids';
import type { PageInput } from '../../shared/platform/data/pagination';
import { hasFeature, requireFeature, type Tier, TIERS } from '../../shared/platform/contract/tiers';
import { DAY, HOUR } from '../../shared/platform/contract/time';
import { write } from '../../shared/platform/data/unit-of-work';
import { insightText, planInsights, writeInsights } from './insights';
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

/** One change a run makes (serialisable: a large run hands its changes to jobs). */
interface Planned {
  id: string;
  pass: Pass;
  detail: Record<string, unknown>;
  /** consolidate: the memory that supersedes this one. */
  keep?: string;
}

/** The moments a run's passes are measured from, fixed when it is planned. */
interface RunWindow {
  weekAgo: string;
  decayBefore: string;
}

/** What applying `p` re-checks on the locked row (it applies only if the memory still qualifies) and what it sets. */
function changeOf(tenantId: string, now: Date, p: Planned, window: RunWindow): { where: SQL; sets: SQL[] } {
  if (p.pass === 'consolidate') {
    return {
      where: sql`${liveOf(tenantId, now)} AND EXISTS (SELECT 1 FROM memories k WHERE k.id = ${p.keep!}::uuid AND ${liveOf(tenantId, now, 'k')})`,
      sets: [sql`superseded_by = ${p.keep!}::uuid`],
    };
  }
  if (p.pass === 'reinforce') return { where: q.reinforceWhere(tenantId, now, new Date(window.weekAgo)), sets: [sql`importance = m.importance + 1`] };
  return { where: q.decayWhere(tenantId, now, new Date(window.decayBefore)), sets: [sql`importance = m.importance - 1`, sql`confidence = m.confidence * 0.9`] };
}

const newer = (a: { createdAt: number; id: string }, b: { createdAt: number; id: string }) =>
  a.createdAt > b.createdAt || (a.createdAt === b.createdAt && a.id > b.id);

/**
 * Consolidate (docs/architecture.md#eval-and-cortex): near-duplicate pairs in a space (same content hash, or the near-duplicate
 * index at cosine ≥ threshold: never all pairs) joined into groups; in each group the newest memory
 * supersedes every other. Nothing is deleted.
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
  const node = (id: string, created: Date | string) => {
    if (!nodes.has(id)) {
      nodes.set(id, { createdAt: new Date(created).getTime(), id });
      parent.set(id, id);
    }
  };
  const pairs = await q.nearDuplicates(ctx.db, ctx.tenantId, ctx.now, threshold);
  for (const p of pairs) {
    node(p.a, p.a_created);
    node(p.b, p.b_created);
  }
  for (const { a, b } of pairs) {
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
    planned.push({ id: n.id, pass: 'consolidate', detail: { superseded_by: toUrn(keep.id) }, keep: keep.id });
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
          ? { id: r.id, pass, detail: { importance: { from: importance, to: importance + 1 } } }
          : {
              id: r.id,
              pass,
              detail: { importance: { from: importance, to: importance - 1 }, confidence: { from: confidence, to: Math.round(confidence * 0.9 * 1e6) / 1e6 } },
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
async function apply(ctx: TenantCtx, planned: Planned[], window: RunWindow): Promise<number> {
  let done = 0;
  for (let i = 0; i < planned.length; i += BATCH) {
    const chunk = planned.slice(i, i + BATCH);
    done += await write(ctx, async (work) => {
      const events = [];
      for (const p of chunk) {
        const { where, sets } = changeOf(ctx.tenantId, ctx.now, p, window);
        const current = await q.lockIf(work.tx, ctx.tenantId, p.id, where);
        if (!current) continue;
        const row = await q.update(work.tx, ctx.tenantId, p.id, sets, ctx.now);
        const [before, after] = [toMemoryDto(current), toMemoryDto(row)];
        const changed = CHANGED[p.pass];
        events.push({
          memoryId: p.id,
          kind: 'update' as const,
          before,
          after,
          embedding: JSON.parse(row.embedding_text) as number[],
          metadata: { pass: p.pass },
        });
        await work.audit({
          operation: 'memory.update',
          resourceType: 'memory',
          resourceId: after.uuid,
          metadata: { changed, pass: p.pass, hash: after.hash, agent_id: after.agent_id },
        });
        await work.event('memory.updated', { memory: after, changed });
      }
      await work.memoryEvents(events);
      return events.length;
    });
  }
  return done;
}

export const CORTEX_APPLY_TOPIC = 'cortex_apply';

/**
 * One Cortex run over the tenant's memories: plans every pass from the store as it is, then (unless
 * dry) applies the first CORTEX_BATCH changes and queues the rest as jobs of as many. Counts are what was
 * planned; every change re-checks its memory when applied, so one that no longer qualifies is skipped.
 */
export async function runPasses(ctx: TenantCtx, dryRun: boolean) {
  const config = s.toConfig(ctx.tenantId, await cortexConfigRow(ctx.db, ctx.tenantId));
  const { threshold, decayAgeDays } = await cortexSettings(ctx.db, ctx.tenantId);
  const window: RunWindow = {
    weekAgo: new Date(ctx.now.getTime() - WEEK).toISOString(),
    decayBefore: new Date(ctx.now.getTime() - decayAgeDays * DAY).toISOString(),
  };
  const cortex: TenantCtx = { ...ctx, actor: 'cortex', idempotency: undefined };
  const changes: Planned[] = [];
  const touched = new Set<string>();
  const plan = (planned: Planned[]) => {
    for (const p of planned) touched.add(p.id);
    changes.push(...planned);
    return planned.length;
  };
  const counts = { consolidated: 0, boosted: 0, decayed: 0, insights_generated: 0 };
  if (config.consolidation_enabled) counts.consolidated = plan(await planConsolidate(ctx, threshold));
  if (config.reinforcement_enabled)
    counts.boosted = plan(await planPass(ctx, 'reinforce', q.reinforceWhere(ctx.tenantId, ctx.now, new Date(window.weekAgo)), touched));
  if (config.decay_enabled) counts.decayed = plan(await planPass(ctx, 'decay', q.decayWhere(ctx.tenantId, ctx.now, new Date(window.decayBefore)), touched));
  const clusters = config.insight_generation_enabled && hasFeature(ctx.tier, 'cortex_insights') ? await planInsights(ctx, touched) : [];
  counts.insights_generated = clusters.length;
  if (dryRun) {
    const insights = clusters.map((c) => ({
      memory_id: toUrn(c.central.id),
      pass: 'insights' as const,
      detail: { observation: insightText(c), sources: c.members.map((m) => toUrn(m.id)) },
    }));
    return {
      ...counts,
      dry_run: true,
      queued_changes: 0,
      changes: [...changes.map((c) => ({ memory_id: toUrn(c.id), pass: c.pass, detail: c.detail })), ...insights],
    };
  }
  const batch = ctx.services.config.CORTEX_BATCH;
  await apply(cortex, changes.slice(0, batch), window);
  const queued = changes.slice(batch);
  await writeInsights(cortex, clusters);
  await write({ ...cortex, idempotency: ctx.idempotency }, async (work) => {
    for (let i = 0; i < queued.length; i += batch) {
      await work.enqueue({
        topic: CORTEX_APPLY_TOPIC,
        payload: { tier: ctx.tier, window, changes: queued.slice(i, i + batch).map(({ id, pass, keep }) => ({ id, pass, keep })) },
      });
    }
    await q.recordRun(work.tx, ctx.tenantId, ctx.now, { ...counts, queued_changes: queued.length });
    await work.audit({ operation: 'cortex.run', resourceType: 'memory_store', metadata: { ...counts, queued_changes: queued.length } });
    await work.milestone('first_cortex', counts);
  });
  return { ...counts, dry_run: false, queued_changes: queued.length };
}

/** The job a large run queues: applies its share of the changes as the actor `cortex`. */
export const applyJob: JobHandler = async (job, { db, now, services }) => {
  if (!job.tenant_id) return;
  const payload = job.payload as { tier: Tier; window: RunWindow; changes: Planned[] };
  const auth = { tenantId: job.tenant_id, keyId: 'cortex', tier: payload.tier, email: '' };
  await apply(tenantCtx({ ...systemCtx(services, now), db, actor: 'cortex' }, auth), payload.changes, payload.window);
};

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

/** Tenants a maintenance tick serves at most. */
const TENANTS_PER_TICK = 20;

/**
 * Maintenance: brings the near-duplicate index (eval conflicts, consolidation) up to date in the
 * background, when experimental features are on. The tick's NEAR_DUPLICATE_PROBES_PER_TICK probes
 * are shared: each waiting tenant (served longest ago first) gets an equal part, then those with
 * more to probe share what the others left.
 */
export const neighbourProbes: MaintenanceTask = async (sys) => {
  if (!sys.services.config.SVC_ENABLE_EXPERIMENTAL) return 0;
  const budget = sys.services.config.NEAR_DUPLICATE_PROBES_PER_TICK;
  const tenants = await tenantsToProbe(sys.db, sys.now, TENANTS_PER_TICK);
  const share = Math.ceil(budget / Math.max(1, tenants.length));
  let left = budget;
  const unfinished: string[] = [];
  for (const tenantId of tenants) {
    if (left <= 0) break;
    const allowed = Math.min(share, left);
    const probed = await probeNeighbours(sys.db, tenantId, sys.now, allowed);
    left -= probed;
    if (probed === allowed) unfinished.push(tenantId);
  }
  for (const tenantId of unfinished) {
    if (left <= 0) break;
    left -= await probeNeighbours(sys.db, tenantId, sys.now, left);
  }
  return budget - left;
};

export async function listInsights(ctx: TenantCtx, page: PageInput) {
  const found = await q.insights(ctx.db, ctx.tenantId, ctx.now, page);
  return { insights: found.page.map(s.toInsight), ...s.insightsMeta(found.total, page, found.page.length) };
}
