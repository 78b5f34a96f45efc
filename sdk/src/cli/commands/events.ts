import type { Command } from 'commander';
import { action } from '../context.js';
import { tagList } from './memories.js';

export function registerEventCommands(program: Command): void {
  const events = program.command('events').description('The live event stream (Server-Sent Events, Pro+)');
  events
    .command('tail')
    .description('Print events as they commit (GET /v1/events/stream); reconnects and resumes after the last event seen')
    .option('--types <a,b>', 'only these event types, e.g. memory.created,rollback.completed', tagList)
    .option('--after <id>', 'first send every stored event after this number (0: all stored)')
    .addHelpText('after', "\nWith --json, each event's data is printed as one JSON line (the body a raw webhook receives).")
    .action(
      action<{ types?: string[]; after?: string }>(async (ctx, _args, opts) => {
        const stream = ctx.client().events.stream({ types: opts.types?.join(','), lastEventId: opts.after });
        for await (const event of stream) {
          if (ctx.output.json) {
            process.stdout.write(`${JSON.stringify(event.data)}\n`);
            continue;
          }
          ctx.output.line(`${ctx.output.out.dim(`#${event.id}`)}  ${event.data.created_at}  ${ctx.output.out.bold(event.type)}`);
        }
      }),
    );
}
