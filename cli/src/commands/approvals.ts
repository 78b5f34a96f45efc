import { type Command, Option } from 'commander';
import { action, type Context } from '../context.js';
import { positiveInt } from './memories.js';

const STATUSES = ['pending_review', 'approved', 'denied', 'executed', 'failed'] as const;
type ApprovalStatus = (typeof STATUSES)[number];

interface DecideOptions {
  reason?: string;
  confirmation?: string;
}

export function registerApprovalCommands(program: Command): void {
  program
    .command('approvals')
    .description('The approval queue: actions waiting for a person (GET /v1/approvals)')
    .addOption(new Option('--status <status>', 'which ones').choices(STATUSES).default('pending_review'))
    .addOption(new Option('--scope <scope>', 'own, or team: what your teams wait for').choices(['own', 'team']))
    .option('--limit <n>', 'at most this many', positiveInt)
    .action(
      action<{ status: ApprovalStatus; scope?: 'own' | 'team'; limit?: number }>(async (ctx, _args, opts) => {
        const body = await ctx.client().approvals.list({ status: opts.status, scope: opts.scope, limit: opts.limit }).page();
        ctx.output.result(body, () => {
          if (body.approvals.length === 0)
            return ctx.output.line(`Nothing ${opts.status === 'pending_review' ? 'waits for a decision' : `is ${opts.status}`}.`);
          ctx.output.table(body.approvals, [
            { header: 'ID', value: (a) => a.approval_id },
            { header: 'ACTION', value: (a) => a.action, max: 40 },
            { header: 'AGENT', value: (a) => a.agent_id ?? '' },
            { header: 'RISK', value: (a) => a.risk_score?.toFixed(2) },
            { header: 'MODE', value: (a) => a.approval_mode },
            { header: 'SUBMITTED', value: (a) => a.submitted_at },
          ]);
        });
      }),
    );

  for (const decision of ['approve', 'deny'] as const) {
    program
      .command(decision)
      .description(`${decision === 'approve' ? 'Approve' : 'Deny'} a pending action (POST /v1/approvals/{id}/decision)`)
      .argument('<id>', 'the approval id (the action id, act_…)')
      .option('--reason <text>', 'why; the polling agent sees it')
      .option('--confirmation <phrase>', 'solo mode: ROLLBACK, to approve a destructive action')
      .action(action<DecideOptions>((ctx, [id], opts) => decide(ctx, id, decision, opts)));
  }
}

async function decide(ctx: Context, id: string, decision: 'approve' | 'deny', opts: DecideOptions): Promise<void> {
  const body = await ctx.client().approvals.decide(id, { decision, reason: opts.reason, confirmation: opts.confirmation });
  ctx.output.result(body, () => ctx.output.line(`${id}: ${body.status}`));
}
