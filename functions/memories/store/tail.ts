import type { TenantCtx } from '../../../shared/platform/contract/context';
import { eventPayload } from '../../../shared/jobs/events';
import { toUrn } from '../../../shared/platform/contract/ids';
import { ANOMALY_THRESHOLDS, crossed, recordAnomaly } from '../../../shared/platform/data/anomalies';
import type { Work } from '../../../shared/platform/data/unit-of-work';
import * as q from '../queries';
import { resultOf, type StoreOutcome } from './prepare';
import type { Plan } from './plan';
import type { Locking } from './write';

/** Memories a store creates or changes: what the rapid_writes window counts. */
const changes = (p: Plan) => p.events.filter((e) => e.kind === 'create' || e.kind === 'update').length;

/** Step 4 and around it: webhook deliveries, the per-tenant rows, anomaly counts, results. */
export async function commitTail(work: Work<TenantCtx>, plans: Plan[], probe: q.StoreProbe, outcomes: Map<number, StoreOutcome>, locking: Locking) {
  const { ctx } = work;
  const at = ctx.now;
  const byOwner = new Map<string, Plan[]>();
  for (const p of plans) byOwner.set(p.group.target.owner, [...(byOwner.get(p.group.target.owner) ?? []), p]);
  const tails = [...byOwner].map(([owner, mine]) => ({
    owner,
    tier: mine[0].group.target.ownerTier,
    audits: mine.map((p) => ({
      tenantId: owner,
      operation: 'memory.create',
      resourceType: 'memory',
      resourceId: p.memory.uuid,
      ...p.item.who,
      at,
      metadata: {
        hash: p.item.hash,
        agent_id: p.memory.agent_id,
        conflict: p.conflict,
        superseded: p.superseded.map(toUrn),
        writer_tenant_id: ctx.tenantId === owner ? undefined : ctx.tenantId,
        ...(p.group.teams ? { via: 'team', team_ids: p.group.teams } : {}),
        ...(ctx.via ? { via: ctx.via } : {}),
      },
    })),
    events: mine.map((p) => eventPayload({ tenantId: owner, type: 'memory.created', data: { memory: p.memory }, at })),
    mine,
    rapidWrites: mine.reduce((n, p) => n + changes(p), 0),
  }));
  // The deliveries of the events the tail stores, before it: they take no per-tenant row.
  let jobs = false;
  for (const t of tails) {
    const hooks = probe.webhooks.get(t.owner) ?? [];
    for (const e of t.events) {
      for (const webhookId of hooks) await q.enqueueWebhookDelivery(work.tx, { tenantId: t.owner, webhookId, eventId: e.id, at });
    }
    jobs ||= hooks.length > 0;
  }
  // The tail is the transaction's last statement and commits with it, unless an earlier attempt
  // found it could not (an anomaly to record after it, or a quota that moved).
  const commitsWithTail = !locking.separateCommit;
  const committed = await q.storeTail(work.tx, tails, ctx.now, commitsWithTail ? work.lastStatement : undefined).catch((err: unknown) => {
    if (commitsWithTail) locking.separateCommit = true;
    throw err;
  });
  if (!committed) {
    // Another request spent the quota between our read and now: decide again from the new count.
    throw Object.assign(new Error('memory quota moved while storing; retrying'), { code: '40001' });
  }
  for (const t of tails) {
    // The anomaly window was counted in the statement above (shared/platform/data/anomalies.ts); a
    // tail that committed with its statement reached no threshold (it would have run again).
    const count = committed.rapidWrites.get(t.owner)!;
    if (crossed('rapid_writes', count, t.rapidWrites)) {
      // Named by the store that reached the threshold, in order, with the count it brought.
      let reached = count - t.rapidWrites;
      const by = t.mine.find((p) => (reached += changes(p)) >= ANOMALY_THRESHOLDS.rapid_writes)!;
      await recordAnomaly(work.system(), { tenantId: t.owner, kind: 'rapid_writes', now: ctx.now, count: reached, requestId: by.item.who.requestId });
    }
  }
  work.noteWritten({ eventTenants: tails.map((t) => t.owner), jobs });
  for (const p of plans) outcomes.set(p.item.index, { ok: true, result: resultOf(p.memory, p, p.item.warnings) });
}
