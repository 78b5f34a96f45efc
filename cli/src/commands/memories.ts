import { type Command, InvalidArgumentError, Option } from 'commander';
import { action } from '../context.js';

/** `a,b` → `['a', 'b']`, for --tags. */
export function tagList(value: string): string[] {
  return value
    .split(',')
    .map((t) => t.trim())
    .filter(Boolean);
}

export function positiveInt(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1) throw new InvalidArgumentError('expected a whole number of 1 or more');
  return n;
}

interface MemoryRow {
  uuid: string;
  observation: string;
  tags: string[];
  importance?: number;
  score?: number;
  agent_id?: string | null;
  created_at?: string;
}

export function registerMemoryCommands(program: Command): void {
  program
    .command('remember')
    .description('Store a memory (POST /v1/memories)')
    .argument('<text>', 'the observation')
    .option('--tags <a,b>', 'comma-separated tags', tagList)
    .option('--importance <1-10>', 'importance, 1 to 10 (default 5)', positiveInt)
    .option('--agent <id>', 'agent_id to store it under')
    .option('--space <id>', 'context space id (Pro+)')
    .action(
      action<{ tags?: string[]; importance?: number; agent?: string; space?: string }>(async (ctx, [text], opts) => {
        const body = await ctx
          .client()
          .memories.storeOrHold({ observation: text, tags: opts.tags, importance: opts.importance, agent_id: opts.agent, space_id: opts.space });
        ctx.output.result(body, () => ctx.output.line('approval_id' in body ? `Held for review: ${body.approval_id}` : `Stored ${body.id}`));
      }),
    );

  program
    .command('search')
    .description('Search memories by meaning, words or both (GET /v1/memories/search)')
    .argument('<query>', 'what to look for')
    .addOption(new Option('--mode <mode>', 'semantic, keyword or hybrid').choices(['semantic', 'keyword', 'hybrid']))
    .option('--limit <n>', 'at most this many results', positiveInt)
    .option('--tags <a,b>', 'only memories with these tags', tagList)
    .option('--agent <id>', 'only memories of this agent_id')
    .action(
      action<{ mode?: 'semantic' | 'keyword' | 'hybrid'; limit?: number; tags?: string[]; agent?: string }>(async (ctx, [query], opts) => {
        const body = await ctx.client().memories.search({ q: query, mode: opts.mode, limit: opts.limit, tags: opts.tags?.join(','), agent_id: opts.agent });
        ctx.output.result(body, () => {
          const rows = body.memories as MemoryRow[];
          if (rows.length === 0) return ctx.output.line('No memories match.');
          ctx.output.table(rows, [
            { header: 'SCORE', value: (m) => m.score?.toFixed(3) },
            { header: 'ID', value: (m) => m.uuid },
            { header: 'TAGS', value: (m) => m.tags.join(','), max: 24 },
            { header: 'OBSERVATION', value: (m) => m.observation, max: 80 },
          ]);
        });
      }),
    );

  program
    .command('list')
    .description('List memories, newest first (GET /v1/memories)')
    .option('--limit <n>', 'at most this many (1 to 100, default 20)', positiveInt)
    .option('--offset <n>', 'skip this many', Number)
    .option('--tags <a,b>', 'only memories with these tags', tagList)
    .option('--agent <id>', 'only memories of this agent_id')
    .option('--space <id>', 'only memories of this context space')
    .action(
      action<{ limit?: number; offset?: number; tags?: string[]; agent?: string; space?: string }>(async (ctx, _args, opts) => {
        const body = await ctx
          .client()
          .memories.list({ limit: opts.limit, offset: opts.offset, tags: opts.tags?.join(','), agent_id: opts.agent, space_id: opts.space })
          .page();
        ctx.output.result(body, () => {
          const rows = body.memories as MemoryRow[];
          if (rows.length === 0) return ctx.output.line('No memories.');
          ctx.output.table(rows, [
            { header: 'CREATED', value: (m) => m.created_at },
            { header: 'ID', value: (m) => m.uuid },
            { header: 'TAGS', value: (m) => m.tags.join(','), max: 24 },
            { header: 'OBSERVATION', value: (m) => m.observation, max: 80 },
          ]);
          if (body.has_more) ctx.output.note(ctx.output.err.dim(`${body.total} in all; --offset ${body.offset + rows.length} for more`));
        });
      }),
    );

  program
    .command('forget')
    .description('Delete a memory for good (DELETE /v1/memories/{id}); a rollback can bring it back')
    .argument('<id>', 'the memory id (urn:uuid:… or the bare uuid)')
    .action(
      action(async (ctx, [id]) => {
        const body = await ctx.client().memories.delete(id);
        ctx.output.result(body, () => ctx.output.line(`Deleted ${id}`));
      }),
    );
}
