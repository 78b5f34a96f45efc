import { once } from 'node:events';
import { createReadStream, createWriteStream, openAsBlob } from 'node:fs';
import { createInterface } from 'node:readline';
import type { Command } from 'commander';
import { Option } from 'commander';
import type { BodyOf } from '../../index.js';
import { action } from '../context.js';
import { UsageError } from '../exit.js';
import { formatBytes, Progress } from '../progress.js';
import { tagList } from './memories.js';

type ExportFormat = 'json' | 'csv' | 'md';

/** Whether line `index` starts a record, in each export format (functions/memories/export.ts). */
const recordStart: Record<ExportFormat, (line: string, index: number) => boolean> = {
  json: (line) => line.startsWith('{'),
  csv: (line, index) => index > 0 && line.length > 0,
  md: (line) => line.startsWith('## '),
};

/** The fields a store request takes; an export row carries more (ids, hashes, counters) that the batch route refuses. */
const STORE_FIELDS = ['observation', 'tags', 'importance', 'context', 'agent_id', 'space_id', 'ttl_seconds'] as const;
const BATCH = 100;
/** How often a followed import is asked for its progress. */
const WAIT_MS = 1000;

function storeRequest(record: Record<string, unknown>): Record<string, unknown> {
  const request: Record<string, unknown> = {};
  for (const field of STORE_FIELDS) if (record[field] !== undefined && record[field] !== null) request[field] = record[field];
  return request;
}

export function registerTransferCommands(program: Command): void {
  program
    .command('export')
    .description('Download every live memory you own (GET /v1/memories/export), with progress on stderr')
    .addOption(new Option('--format <format>', 'json, csv or md (markdown)').choices(['json', 'csv', 'md']).default('json'))
    .option('--out <file>', 'write to this file (default: stdout)')
    .option('--tags <a,b>', 'only memories with these tags', tagList)
    .option('--agent <id>', 'only memories of this agent_id')
    .option('--bundle', 'the whole account as one JSONL bundle with a SHA-256 trailer (GET /v1/export/bundle); --format, --tags and --agent do not apply')
    .action(
      action<{ format: ExportFormat; out?: string; tags?: string[]; agent?: string; bundle?: boolean }>(async (ctx, _args, opts) => {
        const stream = opts.bundle
          ? await ctx.client().portability.exportBundle()
          : await ctx.client().memories.exportStream({ format: opts.format, tags: opts.tags?.join(','), agent_id: opts.agent });
        const sink = opts.out ? createWriteStream(opts.out, { mode: 0o600 }) : process.stdout;
        let bytes = 0;
        let lines = 0;
        let records = 0;
        let partial = '';
        const progress = new Progress(() => `${formatBytes(bytes)}, ${records} ${records === 1 ? 'record' : 'records'}`);
        const decoder = new TextDecoder();
        const isRecord = opts.bundle ? (line: string) => line.startsWith('{') : recordStart[opts.format];
        const reader = stream.getReader();
        for (;;) {
          const { done, value: chunk } = await reader.read();
          if (done) break;
          bytes += chunk.byteLength;
          const text = partial + decoder.decode(chunk, { stream: true });
          const parts = text.split('\n');
          partial = parts.pop() ?? '';
          for (const line of parts) if (isRecord(line, lines++)) records++;
          if (!sink.write(chunk)) await once(sink, 'drain');
          progress.update();
        }
        if (opts.out) {
          sink.end();
          await once(sink, 'finish');
        }
        progress.done(opts.out ? ` written to ${opts.out}` : '');
      }),
    );

  program
    .command('import')
    .description('Store memories from a JSONL file (one store request per line) or a JSON export, 100 at a time')
    .argument('<file>', 'JSONL: one {"observation", "tags"?, "importance"?, "context"?, "agent_id"?, ...} per line')
    .addOption(new Option('--format <format>', 'send the file to POST /v1/import: bundle, jsonl or mem0').choices(['bundle', 'jsonl', 'mem0']))
    .option('--dry-run', 'with --format: check every line and count, write nothing')
    .option('--no-wait', 'with --format: for a file stored by a job (past 10,000 lines), print its id and return at once')
    .addHelpText(
      'after',
      [
        '',
        'With --format the file goes to POST /v1/import as it is (up to 100 MB): a bundle of `engram export --bundle`,',
        'JSONL or a mem0 export; a second import of the same file stores nothing. A file of more than 10,000',
        'lines is stored by a job on the server: the command follows it (GET /v1/imports/{id}) with progress on',
        'stderr until it completes, unless --no-wait. Without --format,',
        'lines go through POST /v1/memories/batch in chunks of 100. Fields a store',
        'request does not take (uuid, hash, counters of an export) are dropped; a line that fails is reported',
        'and the rest go on. The output of `engram export --format json` imports as it is.',
        "With --json, each batch's response body is printed as one JSON line.",
      ].join('\n'),
    )
    .action(
      action<{ format?: 'bundle' | 'jsonl' | 'mem0'; dryRun?: boolean; wait: boolean }>(async (ctx, [file], opts) => {
        const client = ctx.client();
        if (opts.format) {
          let summary = await client.portability.import(await openAsBlob(file), { format: opts.format, dry_run: opts.dryRun ? 'true' : 'false' });
          if (summary.status !== 'completed' && summary.id) {
            const id = summary.id;
            if (!opts.wait) {
              ctx.output.line(`Import ${id} accepted: ${summary.staged} records to store; follow it with GET /v1/imports/${id}.`);
              return;
            }
            const progress = new Progress(() => `${summary.processed} of ${summary.staged} records done`);
            while (summary.status !== 'completed') {
              await new Promise((r) => setTimeout(r, WAIT_MS));
              summary = await client.portability.getImport(id);
              progress.update();
            }
            progress.done();
          }
          if (ctx.output.json) process.stdout.write(`${JSON.stringify(summary)}\n`);
          for (const e of summary.errors) ctx.output.note(`line ${e.line}: ${e.code}: ${e.message}`);
          const stored = Object.entries(summary.stored)
            .filter(([, n]) => n > 0)
            .map(([type, n]) => `${n} ${type}`)
            .join(', ');
          ctx.output.line(
            `${opts.dryRun ? 'Dry run: ' : ''}${summary.lines} lines, ${summary.valid} valid, ${summary.invalid} invalid; stored ${stored || 'nothing'}; ${summary.already_imported} already imported, ${summary.skipped.webhook} webhooks skipped.`,
          );
          return;
        }
        let stored = 0;
        let failed = 0;
        let read = 0;
        const progress = new Progress(() => `${read} read, ${stored} stored, ${failed} failed`);
        const send = async (batch: { line: number; request: Record<string, unknown> }[]) => {
          const body = await client.memories.storeMany(batch.map((b) => b.request as BodyOf<'memories.store'>));
          if (ctx.output.json) process.stdout.write(`${JSON.stringify(body)}\n`);
          stored += body.stored;
          failed += body.failed;
          for (const result of body.results) {
            if (result.status >= 300)
              ctx.output.note(`line ${batch[result.index].line}: ${result.error?.code ?? result.status}: ${result.error?.message ?? ''}`);
          }
          progress.update();
        };
        let batch: { line: number; request: Record<string, unknown> }[] = [];
        for await (const { line, record } of records(file)) {
          read++;
          batch.push({ line, request: storeRequest(record) });
          if (batch.length === BATCH) {
            await send(batch);
            batch = [];
          }
        }
        if (batch.length > 0) await send(batch);
        progress.done();
        ctx.output.line(`Imported ${stored} of ${read} memories from ${file}.`);
      }),
    );
}

/** Records of a JSONL file, or of a JSON export (`[`, one record per line, `]`). */
async function* records(file: string): AsyncGenerator<{ line: number; record: Record<string, unknown> }> {
  const lines = createInterface({ input: createReadStream(file), crlfDelay: Number.POSITIVE_INFINITY });
  let number = 0;
  for await (const raw of lines) {
    number++;
    const text = raw.trim().replace(/^,/, '').replace(/,$/, '');
    if (text === '' || text === '[' || text === ']') continue;
    let record: unknown;
    try {
      record = JSON.parse(text);
    } catch {
      throw new UsageError(`${file}:${number} is not JSON`);
    }
    if (!record || typeof record !== 'object' || Array.isArray(record)) throw new UsageError(`${file}:${number} is not a JSON object`);
    yield { line: number, record: record as Record<string, unknown> };
  }
}
