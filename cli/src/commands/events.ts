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
          const { ids, tags } = subjectOf(event.data.data);
          const tagText = tags.length ? `  ${ctx.output.out.dim(`[${tags.join(', ')}]`)}` : '';
          ctx.output.line(
            `${ctx.output.out.dim(`#${event.id}`)}  ${event.data.created_at}  ${ctx.output.out.bold(event.type)}  ${ids.join(' ')}${tagText}`.trimEnd(),
          );
        }
      }),
    );
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * What an event is about, for one line: the ids in its data (`uuid`, `id`, `*_id`, also those of a
 * `memory` or other object it carries, e.g. memory.created's `{memory: {uuid, tags}}`) and its tags.
 * Event types differ in their data; this reads any of them without knowing the type.
 */
function subjectOf(data: Record<string, unknown> | undefined): { ids: string[]; tags: string[] } {
  const ids: string[] = [];
  const tags: string[] = [];
  const visit = (value: Record<string, unknown>, depth: number) => {
    for (const [name, field] of Object.entries(value)) {
      if (typeof field === 'string') {
        if ((name === 'uuid' || name === 'id' || name.endsWith('_id')) && name !== 'tenant_id' && !ids.includes(field)) ids.push(field);
      } else if (name === 'tags' && Array.isArray(field)) {
        for (const tag of field) if (typeof tag === 'string' && !tags.includes(tag)) tags.push(tag);
      } else if (isObject(field) && depth < 1) {
        visit(field, depth + 1);
      }
    }
  };
  if (isObject(data)) visit(data, 0);
  return { ids, tags };
}
