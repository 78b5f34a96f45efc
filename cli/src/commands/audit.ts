import type { Command } from 'commander';
import { action } from '../context.js';
import { CheckFailed } from '../exit.js';
import { positiveInt } from './memories.js';

interface AuditEntry {
  entry_id: string;
  seq: number;
  timestamp: string;
  operation: string;
  resource_type?: string | null;
  resource_id?: string | null;
  memory_id?: string | null;
  actor?: string | null;
}

interface AuditVerify {
  valid: boolean;
  checked: { memories: number; audit_entries: number };
  failure_count: number;
  integrity_failures: { type?: string; reason?: string; message?: string }[];
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export function registerAuditCommands(program: Command): void {
  const audit = program.command('audit').description('The hash-chained audit trail (Pro+)');

  audit
    .command('verify')
    .description('Recompute the audit chain and every memory hash (GET /v1/audit/verify); exit 1 when broken')
    .action(
      action(async (ctx) => {
        const body = (await ctx.client().audit.verify()) as AuditVerify;
        ctx.output.result(body, () => {
          const { memories, audit_entries } = body.checked;
          const summary = `${audit_entries} audit entries and ${memories} memories checked`;
          if (body.valid) ctx.output.line(`${ctx.output.out.green('valid')}: ${summary}`);
          else ctx.output.line(`${ctx.output.out.red('BROKEN')}: ${summary}, ${body.failure_count} failures`);
        });
        if (!body.valid) throw new CheckFailed(`audit chain broken: ${body.failure_count} failures`);
      }),
    );

  audit
    .command('tail')
    .description('Show the newest audit entries, then follow new ones as they are written (GET /v1/audit)')
    .option('--limit <n>', 'how many to show first', positiveInt, 10)
    .option('--interval <seconds>', 'how often to look for new entries', positiveInt, 2)
    .option('--no-follow', 'show the newest entries and stop')
    .addHelpText('after', '\nWith --json, each entry is printed as one JSON line, as GET /v1/audit gives it.')
    .action(
      action<{ limit: number; interval: number; follow: boolean }>(async (ctx, _args, opts) => {
        const client = ctx.client();
        const seen = new Set<string>();
        let since: string | undefined;
        const show = (entries: AuditEntry[]) => {
          // The route lists newest first; a tail reads oldest first.
          for (const entry of [...entries].reverse()) {
            if (seen.has(entry.entry_id)) continue;
            seen.add(entry.entry_id);
            since = entry.timestamp;
            if (ctx.output.json) process.stdout.write(`${JSON.stringify(entry)}\n`);
            else ctx.output.line(`${ctx.output.out.dim(entry.timestamp)}  #${entry.seq}  ${ctx.output.out.bold(entry.operation)}  ${describe(entry)}`);
          }
        };
        show((await client.audit.list({ limit: opts.limit }).page()).entries);
        while (opts.follow) {
          await sleep(opts.interval * 1000);
          // `since` is inclusive, so the last entry shown comes back; `seen` drops it.
          show((await client.audit.list({ since, limit: 100 }).page()).entries);
        }
      }),
    );
}

function describe(entry: AuditEntry): string {
  const resource = entry.resource_type ? `${entry.resource_type} ${entry.resource_id ?? ''}` : (entry.memory_id ?? '');
  return `${resource.trim()}${entry.actor ? `  by ${entry.actor}` : ''}`;
}
