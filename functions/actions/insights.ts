import type { z } from '@hono/zod-openapi';
import { actionNotFound, invalidViolationsParam } from '../../shared/control/errors';
import type { TenantCtx } from '../../shared/platform/contract/context';
import { DAY, HOUR, MINUTE, parseTimestamp } from '../../shared/platform/contract/time';
import * as q from './queries';
import {
  type DashboardQuery,
  MAX_EXPLAIN_MEMORIES,
  MAX_RECALLED_MEMORIES,
  type PolicyResultSchema,
  RECALL_WINDOW_MINUTES,
  type ViolationsQuery,
  ViolationsPaging,
  WINDOWS,
} from './schemas';

type PolicyResult = z.infer<typeof PolicyResultSchema>;
type Connector = 'github' | 'slack' | 'linear' | 'pagerduty' | 'http';

/** One paragraph that tells what happened to an action, from its row, its decisions and its policy result. */
function summarize(row: q.ActionRow, decisions: q.DecisionRow[], memoriesThen: number, recalled: number): string {
  const pr = row.policyResult as unknown as PolicyResult;
  const who = row.agentId ? `Agent ${row.agentId}` : 'An agent';
  const looked = recalled ? `, having recalled ${recalled} of them in the ${RECALL_WINDOW_MINUTES} minutes before` : '';
  const parts = [
    `${who} asked to run ${row.action} on ${row.submittedAt.toISOString()}, with ${memoriesThen} ${memoriesThen === 1 ? 'memory' : 'memories'} in the store${looked}.`,
  ];
  const evaluated = `${pr.policies_evaluated.length} ${pr.policies_evaluated.length === 1 ? 'policy was' : 'policies were'} evaluated`;
  const why = `${pr.reason ?? 'no reason given'}; severity ${pr.severity ?? 'n/a'}, risk ${pr.risk_score.toFixed(2)}`;
  if (row.outcome === 'allowed') {
    const warnings = pr.warnings.length ? ` with ${pr.warnings.length} warning${pr.warnings.length === 1 ? '' : 's'}` : '';
    parts.push(`No policy blocked or held it${warnings} after ${evaluated}, so it was allowed.`);
  } else {
    const verb = row.outcome === 'blocked' ? 'blocked it' : 'held it for review';
    parts.push(`${pr.triggered_policy ?? 'A policy'} ${verb} (${why}) after ${evaluated}.`);
    if (row.evaluationMode === 'shadow') parts.push('The tenant was in shadow mode, so this was recorded but not enforced: the action was allowed.');
  }
  const approvals = decisions.filter((d) => d.decision === 'approve');
  if (row.status === 'approved' || row.status === 'denied' || ((row.status === 'executed' || row.status === 'failed') && row.reviewable)) {
    const final = row.reviewable && row.decidedAt;
    if (final && row.reason === 'expired' && !decisions.some((d) => d.decision === 'deny')) {
      parts.push(`Nobody decided in time: it expired and was denied on ${row.decidedAt!.toISOString()}.`);
    } else if (final) {
      const denied = decisions.find((d) => d.decision === 'deny');
      const by = denied ? denied.approverId : approvals.map((d) => d.approverId).join(', ');
      parts.push(
        `${by || 'The reviewer'} ${denied ? 'denied' : 'approved'} it in ${row.approvalMode} mode on ${row.decidedAt!.toISOString()}${row.reason ? `: "${row.reason}"` : ''}.`,
      );
    }
  } else if (row.status === 'pending_review') {
    const rules = row.approvalRules;
    parts.push(
      `It is still pending review in ${row.approvalMode} mode${approvals.length ? ` with ${approvals.length} of ${rules?.min_approvals ?? 1} approvals` : ''}.`,
    );
  }
  if (row.status === 'executed' || row.status === 'failed') parts.push(`The agent reported it ${row.status}.`);
  return parts.join(' ');
}

/**
 * Everything about one action: the policy result, the approval with each decision, the tenant's
 * memories as they were when it was submitted (the replay interval tables), its audit trail and a
 * one-paragraph summary. 404 actions.not_found for an unknown id or another tenant's.
 */
export async function explain(ctx: TenantCtx, input: { actionId: string }) {
  const row = await q.actionOf(ctx.db, ctx.tenantId, input.actionId);
  if (!row) throw actionNotFound(input.actionId);
  const [decisions, trail, memories, recalled] = await Promise.all([
    q.decisionsOf(ctx.db, ctx.tenantId, row.id),
    q.auditTrail(ctx.db, ctx.tenantId, row.id),
    q.memoriesAt(ctx.db, ctx.tenantId, row.submittedAt, MAX_EXPLAIN_MEMORIES),
    row.submittedBy ? q.recalledBefore(ctx.db, ctx.tenantId, row.submittedBy, row.submittedAt, RECALL_WINDOW_MINUTES * MINUTE, MAX_RECALLED_MEMORIES) : [],
  ]);
  if (!trail.length) throw actionNotFound(input.actionId);
  const approval = row.reviewable
    ? {
        approval_id: row.id,
        status: row.status,
        approval_mode: row.approvalMode ?? 'solo',
        approvals_required: row.approvalRules?.min_approvals ?? 1,
        decided_at: row.decidedAt?.toISOString() ?? null,
        reason: row.reviewable && row.decidedAt ? row.reason : null,
        decisions: decisions.map((d) => ({
          decision: d.decision,
          approver_id: d.approverId,
          approver_tenant_id: d.approverTenantId,
          decided_by_key_id: d.approverKeyId,
          approver_role: d.approverRole,
          reason: d.reason,
          created_at: d.createdAt.toISOString(),
        })),
      }
    : null;
  return {
    action_id: row.id,
    action: row.action,
    agent_id: row.agentId,
    connector: row.connector as Connector | null,
    operation: row.operation,
    status: row.status,
    submitted_at: row.submittedAt.toISOString(),
    params: row.params,
    policy_result: row.policyResult as unknown as PolicyResult,
    approval,
    memories_at_time: memories.memories.map((m) => ({
      memory_id: m.uuid,
      observation: m.observation,
      importance: m.importance,
      tags: m.tags,
      created_at: m.created_at,
    })),
    memories_at_time_total: memories.total,
    memories_recalled: recalled.map((r) => ({
      memory_id: r.memory.uuid,
      observation: r.memory.observation,
      importance: r.memory.importance,
      tags: r.memory.tags,
      created_at: r.memory.created_at,
      recalled_at: r.recalledAt.toISOString(),
      query: r.query,
      recalls: r.recalls,
    })),
    audit_trail: trail.map((e) => ({
      sequence_number: e.seq,
      timestamp: e.createdAt.toISOString(),
      event: e.operation,
      entry_hash: e.entryHash,
      actor: e.actor,
      metadata: e.metadata,
    })),
    summary: summarize(row, decisions, memories.total, recalled.length),
  };
}

const OUTCOMES = ['allowed', 'blocked', 'pending_review'] as const;
const empty = () => ({ actions: 0, allowed: 0, blocked: 0, pending_review: 0, violations: 0 });

/** Start of the UTC hour or day holding `d`. */
const truncate = (d: Date, bucket: 'hour' | 'day') => new Date(Math.floor(d.getTime() / (bucket === 'hour' ? HOUR : DAY)) * (bucket === 'hour' ? HOUR : DAY));

/**
 * The control dashboard over the last `window`: totals by evaluation outcome, current statuses,
 * violations by policy and by agent, and a series with every bucket present (empty ones as zeros).
 */
export async function dashboard(ctx: TenantCtx, input: z.infer<typeof DashboardQuery>) {
  const bucket = input.bucket ?? (input.window === '24h' ? 'hour' : 'day');
  const until = ctx.now;
  const since = new Date(until.getTime() - WINDOWS[input.window] * HOUR);
  const found = await q.dashboard(ctx.db, ctx.tenantId, since, new Date(until.getTime() + 1), bucket);

  const totals = { ...empty(), shadow: 0 };
  for (const t of found.totals) {
    const n = Number(t.n);
    totals.actions += n;
    totals[t.outcome as (typeof OUTCOMES)[number]] += n;
    totals.violations += Number(t.violations);
    if (t.shadow) totals.shadow += n;
  }
  const step = bucket === 'hour' ? HOUR : DAY;
  const buckets = new Map<number, ReturnType<typeof empty>>();
  for (let at = truncate(since, bucket).getTime(); at <= until.getTime(); at += step) buckets.set(at, empty());
  for (const s of found.series) {
    const entry = buckets.get(Number(s.at) * 1000);
    if (!entry) continue;
    const n = Number(s.n);
    entry.actions += n;
    entry[s.outcome as (typeof OUTCOMES)[number]] += n;
    entry.violations += Number(s.violations);
  }
  return {
    window: input.window,
    bucket,
    since: since.toISOString(),
    until: until.toISOString(),
    backend: 'postgres' as const,
    totals,
    by_status: Object.fromEntries(found.byStatus.map((s) => [s.status, Number(s.n)])),
    violations_by_policy: found.byPolicy.map((p) => ({ policy: p.policy, violations: Number(p.n), blocked: Number(p.blocked), held: Number(p.held) })),
    violations_by_agent: found.byAgent.map((a) => ({ agent_id: a.agent_id, violations: Number(a.n), actions: Number(a.actions) })),
    series: [...buckets].map(([at, counts]) => ({ bucket_start: new Date(at).toISOString(), ...counts })),
  };
}

function timeParam(field: 'since' | 'until', value: string | undefined, fallback: Date): Date {
  if (value === undefined) return fallback;
  const at = parseTimestamp(value);
  if (!at) throw invalidViolationsParam(field, 'must be an ISO 8601 timestamp, e.g. 2026-11-01T00:00:00Z');
  return at;
}

/** An agent's actions with violations between `since` (default 30 days ago) and `until` (default now), newest first. */
export async function agentViolations(ctx: TenantCtx, input: { agentId: string } & z.infer<typeof ViolationsQuery>) {
  const since = timeParam('since', input.since, new Date(ctx.now.getTime() - 30 * DAY));
  const until = timeParam('until', input.until, ctx.now);
  if (since > until) throw invalidViolationsParam('since', 'must not be after until');
  const found = await q.agentViolations(ctx.db, ctx.tenantId, input.agentId, since, until, input);
  return {
    agent_id: input.agentId,
    since: since.toISOString(),
    until: until.toISOString(),
    violation_count: found.violations,
    actions: found.page.map((row) => ({
      action_id: row.id,
      action: row.action,
      connector: row.connector as Connector | null,
      status: row.status,
      outcome: row.outcome,
      evaluation_mode: row.evaluationMode,
      submitted_at: row.submittedAt.toISOString(),
      risk_score: row.riskScore,
      violations: (row.policyResult as unknown as PolicyResult).violations ?? [],
    })),
    ...ViolationsPaging.meta(found.total, input, found.page.length),
  };
}
