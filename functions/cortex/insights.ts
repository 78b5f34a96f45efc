import { v7 as uuidv7 } from 'uuid';
import { probeNeighbours } from '../../shared/memory/cortex';
import { embedAll } from '../../shared/memory/embeddings';
import { minTrust, type Trust } from '../../shared/memory/provenance';
import { toMemoryDto } from '../../shared/memory/rows';
import type { TenantCtx } from '../../shared/platform/contract/context';
import { sha256Hex } from '../../shared/platform/contract/crypto';
import { toUrn } from '../../shared/platform/contract/ids';
import { write } from '../../shared/platform/data/unit-of-work';
import { adjustLiveMemories } from '../../shared/platform/data/usage';
import * as q from './queries';

/** docs/architecture.md#eval-and-cortex: a cluster is at least MIN_CLUSTER live memories with pairwise cosine ≥ INSIGHT_COSINE. */
const INSIGHT_COSINE = 0.75;
const MIN_CLUSTER = 3;
/** Candidates one seed gathers (itself, its index neighbours and theirs): the exact pairwise check stays small. */
const MAX_CANDIDATES = 12;
/** Insights one run writes at most; the next run takes the rest. */
const MAX_INSIGHTS_PER_RUN = 100;
/** What an insight's text may hold (the store's limit on observations). */
const MAX_TEXT = 16_000;

export interface Cluster {
  central: { id: string; observation: string };
  members: { id: string; cosine: number; importance: number; trust: Trust }[];
  spaceId: string | null;
}

/**
 * Clusters for insights among the tenant's live memories that are no insight and no insight's
 * source yet: seeds in order of their near-duplicate index degree, each grown greedily from its
 * neighbourhood by exact pairwise cosines. `skip`: memories this run already changes.
 */
export async function planInsights(ctx: TenantCtx, skip: Set<string>): Promise<Cluster[]> {
  await probeNeighbours(ctx.db, ctx.tenantId, ctx.now);
  const pairs = await q.insightPairs(ctx.db, ctx.tenantId, ctx.now, 1 - INSIGHT_COSINE);
  const near = new Map<string, string[]>();
  for (const { a, b } of pairs) {
    if (skip.has(a) || skip.has(b)) continue;
    near.set(a, [...(near.get(a) ?? []), b]);
    near.set(b, [...(near.get(b) ?? []), a]);
  }
  const seeds = [...near.keys()].sort((x, y) => near.get(y)!.length - near.get(x)!.length || (x < y ? -1 : 1));
  const taken = new Set<string>();
  const clusters: Cluster[] = [];
  for (const seed of seeds) {
    if (clusters.length >= MAX_INSIGHTS_PER_RUN) break;
    if (taken.has(seed)) continue;
    const around = [seed, ...near.get(seed)!, ...near.get(seed)!.flatMap((n) => near.get(n) ?? [])];
    const candidates = [...new Set(around)].filter((id) => !taken.has(id)).slice(0, MAX_CANDIDATES);
    if (candidates.length < MIN_CLUSTER) continue;
    const found = await q.pairwise(ctx.db, ctx.tenantId, candidates);
    const cos = new Map(found.pairs.map((p) => [`${p.a}|${p.b}`, Number(p.cosine)]));
    const cosine = (x: string, y: string) => (x === y ? 1 : (cos.get(`${x}|${y}`) ?? cos.get(`${y}|${x}`) ?? 0));
    const cluster = [seed];
    for (const c of candidates.filter((id) => id !== seed).sort((x, y) => cosine(seed, y) - cosine(seed, x))) {
      if (cluster.every((m) => cosine(c, m) >= INSIGHT_COSINE)) cluster.push(c);
    }
    if (cluster.length < MIN_CLUSTER) continue;
    const centrality = (id: string) => cluster.reduce((sum, m) => sum + cosine(id, m), 0);
    const centralId = cluster.reduce((best, id) => (centrality(id) > centrality(best) ? id : best));
    const rows = new Map(found.rows.map((r) => [r.id, r]));
    for (const id of cluster) taken.add(id);
    clusters.push({
      central: { id: centralId, observation: rows.get(centralId)!.observation },
      members: cluster.map((id) => ({ id, cosine: cosine(centralId, id), importance: Number(rows.get(id)!.importance), trust: rows.get(id)!.trust })),
      spaceId: rows.get(centralId)!.space_id,
    });
  }
  return clusters;
}

/** The text of a cluster's insight: extractive, its most central memory and its size (no model needed). */
export const insightText = (c: Cluster) => `Insight from ${c.members.length} related memories: ${c.central.observation}`.slice(0, MAX_TEXT);

/**
 * Writes one memory tagged `insight` per cluster, linked (`derived_from`) to its sources, as the
 * actor `cortex`: ordinary creates with their events, links, audit entries and webhooks, so replay
 * shows them and a rollback removes them. Returns how many it wrote.
 */
export async function writeInsights(ctx: TenantCtx, clusters: Cluster[]): Promise<number> {
  if (!clusters.length) return 0;
  const texts = clusters.map(insightText);
  const embeddings = await embedAll(ctx.services.embedder, texts);
  const hashes = await Promise.all(texts.map(sha256Hex));
  return write(ctx, async (work) => {
    for (const [i, c] of clusters.entries()) {
      const id = uuidv7();
      const importance = Math.max(...c.members.map((m) => m.importance));
      const row = await q.insertInsight(
        work.tx,
        {
          id,
          tenantId: ctx.tenantId,
          observation: texts[i],
          importance,
          spaceId: c.spaceId,
          hash: hashes[i],
          embedding: embeddings[i],
          trust: minTrust(...c.members.map((m) => m.trust)),
        },
        ctx.now,
      );
      await q.linkSources(work.tx, ctx.tenantId, id, c.members, ctx.now);
      const memory = toMemoryDto(row);
      await work.memoryEvents([
        { tenantId: ctx.tenantId, memoryId: id, kind: 'create', after: memory, embedding: embeddings[i], metadata: { pass: 'insights' } },
        ...c.members.map((m) => ({
          tenantId: ctx.tenantId,
          memoryId: id,
          kind: 'link' as const,
          metadata: { target_id: toUrn(m.id), relation: q.INSIGHT_RELATION, weight: m.cosine },
        })),
      ]);
      await work.audit({
        operation: 'memory.create',
        resourceType: 'memory',
        resourceId: memory.uuid,
        metadata: { hash: hashes[i], agent_id: null, pass: 'insights', sources: c.members.map((m) => toUrn(m.id)) },
      });
      await work.event('memory.created', { memory });
    }
    await adjustLiveMemories(work.tx, ctx.tenantId, clusters.length);
    return clusters.length;
  });
}
