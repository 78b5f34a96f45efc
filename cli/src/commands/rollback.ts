import type { Command } from 'commander';
import { action } from '../context.js';
import { CheckFailed, UsageError } from '../exit.js';
import { ask } from '../prompt.js';

interface Preview {
  target_timestamp: string;
  artifacts_modified: number;
  artifacts_deleted: number;
  artifacts_restored: number;
  memories_reverted: number;
  safe_rollback: boolean;
  warnings: string[];
}

/** What a person must type to roll back without --yes (the same phrase solo approvals ask for). */
const CONFIRMATION = 'ROLLBACK';

export function registerRollbackCommand(program: Command): void {
  program
    .command('rollback')
    .description('Roll the memory store back to a point in time (GET /v1/rollback/preview, POST /v1/rollback)')
    .requiredOption('--to <time>', 'ISO 8601 time, or "N minutes|hours|days ago"')
    .option('--preview', 'only show what would change')
    .option('--yes', 'roll back without asking')
    .addHelpText(
      'after',
      `\nWithout --preview or --yes it shows the preview and asks you to type ${CONFIRMATION}; without a terminal\nto ask on, it refuses (exit 2).`,
    )
    .action(
      action<{ to: string; preview?: boolean; yes?: boolean }>(async (ctx, _args, opts) => {
        const { output } = ctx;
        const client = ctx.client();
        if (opts.preview || !opts.yes) {
          if (!opts.preview && !(process.stdin.isTTY && process.stderr.isTTY)) {
            throw new UsageError(`rollback needs --yes, or a terminal to type ${CONFIRMATION} on (or --preview to only look)`);
          }
          const preview = (await client.rollback.preview({ target: opts.to })) as Preview;
          if (opts.preview) {
            output.result(preview, () => showPreview(output.line.bind(output), preview));
            return;
          }
          showPreview(output.note.bind(output), preview);
          const typed = await ask(`Type ${CONFIRMATION} to roll back to ${preview.target_timestamp}: `);
          if (typed !== CONFIRMATION) throw new CheckFailed('Not rolled back.');
        }
        const body = (await client.rollback.run({ target: opts.to })) as { message?: string };
        output.result(body, () => output.line(body.message ?? 'Rolled back.'));
      }),
    );
}

function showPreview(say: (text: string) => void, p: Preview): void {
  say(`Rollback to ${p.target_timestamp}:`);
  say(`  ${p.artifacts_deleted} removed, ${p.artifacts_restored} restored, ${p.artifacts_modified} modified, ${p.memories_reverted} reverted`);
  say(`  ${p.safe_rollback ? 'safe: nothing is removed' : 'not safe: read the warnings'}`);
  for (const warning of p.warnings) say(`  warning: ${warning}`);
}
