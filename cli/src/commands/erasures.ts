import { readFile } from 'node:fs/promises';
import type { Command } from 'commander';
import { verifyErasureReceipt } from 'engram-sdk';
import { action } from '../context.js';
import { CheckFailed, UsageError } from '../exit.js';

export function registerErasureCommands(program: Command): void {
  const erasure = program.command('erasure').description('Erasure receipts (GDPR Art. 17)');
  erasure
    .command('verify')
    .description('Check an erasure receipt offline: its signature over every field, with the key it names')
    .argument('<receipt.json>', 'a receipt of POST /v1/erasures, GET /v1/erasures/{erasure_id} or DELETE /v1/account, saved to a file')
    .requiredOption('--public-key <pem-file>', 'the signing key (GET /v1/traces/public-key, kept from a source you trust)')
    .addHelpText('after', '\nNeeds no key and no server. Exit 0 when valid, 1 when not (with the reason), 2 when a file is unreadable or not JSON.')
    .action(
      action<{ publicKey: string }>(async (ctx, [file], opts) => {
        let receipt: unknown;
        try {
          receipt = JSON.parse(await readText(file));
        } catch (err) {
          if (err instanceof UsageError) throw err;
          throw new UsageError(`${file} is not JSON, so not an erasure receipt`);
        }
        const publicKey = await readText(opts.publicKey);
        // Invalid, with the reason, for what is not a receipt; a throw (a key that is not PEM) is a reason too, never a stack.
        const result = await verifyErasureReceipt(receipt, { publicKey }).catch((err: unknown) => ({
          valid: false as const,
          problems: [`not an erasure receipt: ${err instanceof Error ? err.message : String(err)}`],
        }));
        ctx.output.result(result, () => {
          if (result.valid) ctx.output.line(`${ctx.output.out.green('valid')}: erasure ${(receipt as { erasure_id: string }).erasure_id}`);
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
