import { readFile } from 'node:fs/promises';
import type { Command } from 'commander';
import { verifyTraceCertificate } from 'engram-sdk';
import { action } from '../context.js';
import { CheckFailed, UsageError } from '../exit.js';

export function registerTraceCommands(program: Command): void {
  const trace = program.command('trace').description('Signed reasoning traces (Pro+)');
  trace
    .command('verify')
    .description('Check a trace certificate offline: the key, the chain, both signatures, and each step rehashed from its content when it carries it')
    .argument('<certificate.json>', 'the body of GET /v1/traces/{trace_id}/certificate (optionally ?include_content=true), saved to a file')
    .option('--public-key <pem-file>', 'also require this signing key (GET /v1/traces/public-key, kept from a source you trust)')
    .addHelpText('after', '\nNeeds no key and no server. Exit 0 when valid, 1 when not (with the reason), 2 when a file is unreadable or not JSON.')
    .action(
      action<{ publicKey?: string }>(async (ctx, [file], opts) => {
        let certificate: unknown;
        try {
          certificate = JSON.parse(await readText(file));
        } catch (err) {
          if (err instanceof UsageError) throw err;
          throw new UsageError(`${file} is not JSON, so not a trace certificate`);
        }
        const publicKey = opts.publicKey ? await readText(opts.publicKey) : undefined;
        // The verifier answers what is not a certificate as invalid, with the reason; should anything
        // still throw (a key that is not PEM), that reason is printed, never a stack.
        const result = await verifyTraceCertificate(certificate, { publicKey }).catch((err: unknown) => ({
          valid: false as const,
          problems: [`not a trace certificate: ${err instanceof Error ? err.message : String(err)}`],
        }));
        ctx.output.result(result, () => {
          if (result.valid) ctx.output.line(`${ctx.output.out.green('valid')}: ${describe(certificate)}`);
        });
        if (!result.valid) throw new CheckFailed(`invalid: ${result.problems.join('; ')}`);
      }),
    );
}

async function readText(file: string): Promise<string> {
  try {
    return await readFile(file, 'utf8');
  } catch (err) {
    throw new UsageError(`${file}: ${(err as Error).message}`);
  }
}

function describe(certificate: unknown): string {
  const c = (certificate ?? {}) as { trace_id?: string; steps?: unknown[]; step_count?: number };
  const steps = c.step_count ?? (Array.isArray(c.steps) ? c.steps.length : undefined);
  return `trace ${c.trace_id ?? '(no id)'}${steps === undefined ? '' : `, ${steps} steps`}`;
}
