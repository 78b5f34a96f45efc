import { readFile } from 'node:fs/promises';
import type { Command } from 'commander';
import { verifyTraceCertificate } from '../../index.js';
import { action } from '../context.js';
import { CheckFailed, UsageError } from '../exit.js';

export function registerTraceCommands(program: Command): void {
  const trace = program.command('trace').description('Signed reasoning traces (Pro+)');
  trace
    .command('verify')
    .description('Check a trace certificate offline: every step hash, the chain, the root and the signature')
    .argument('<certificate.json>', 'the body of GET /v1/traces/{trace_id}/certificate, saved to a file')
    .addHelpText('after', '\nNeeds no key and no server. Exit 0 when valid, 1 when not (with the reason), 2 when the file is unreadable.')
    .action(
      action(async (ctx, [file]) => {
        let certificate: unknown;
        try {
          certificate = JSON.parse(await readFile(file, 'utf8'));
        } catch (err) {
          throw new UsageError(`${file}: ${(err as Error).message}`);
        }
        const result = await verifyTraceCertificate(certificate as Parameters<typeof verifyTraceCertificate>[0]);
        ctx.output.result(result, () => {
          if (result.valid) ctx.output.line(`${ctx.output.out.green('valid')}: ${describe(certificate)}`);
        });
        if (!result.valid) throw new CheckFailed(`invalid: ${reasonOf(result)}`);
      }),
    );
}

function describe(certificate: unknown): string {
  const c = certificate as { trace_id?: string; steps?: unknown[]; step_count?: number };
  const steps = c.step_count ?? c.steps?.length;
  return `trace ${c.trace_id ?? '(no id)'}${steps === undefined ? '' : `, ${steps} steps`}`;
}

function reasonOf(result: unknown): string {
  const r = result as { reason?: string; errors?: string[]; discrepancies?: unknown };
  return r.reason ?? r.errors?.join('; ') ?? JSON.stringify(r.discrepancies ?? result);
}
