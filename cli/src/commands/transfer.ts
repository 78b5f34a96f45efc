import { once } from 'node:events';
import { createWriteStream, openAsBlob } from 'node:fs';
import { open, readFile, stat } from 'node:fs/promises';
import type { Command } from 'commander';
import { Option } from 'commander';
import { action } from '../context.js';
import { CheckFailed, UsageError } from '../exit.js';
import { formatBytes, Progress } from '../progress.js';
import { tagList } from './memories.js';

type ExportFormat = 'json' | 'csv' | 'md';

/** Whether line `index` starts a record, in each export format (functions/memories/export.ts). */
const recordStart: Record<ExportFormat, (line: string, index: number) => boolean> = {
  json: (line) => line.startsWith('{'),
  csv: (line, index) => index > 0 && line.length > 0,
  md: (line) => line.startsWith('## '),
};

/** How often a followed import is asked for its progress. */
const WAIT_MS = 1000;

export function registerTransferCommands(program: Command): void {
  program
    .command('export')
    .description('Download every live memory you own (GET /v1/memories/export), with progress on stderr')
    .addOption(new Option('--format <format>', 'json, csv or md (markdown)').choices(['json', 'csv', 'md']).default('json'))
    .option('-o, --out <file>', 'write to this file (default: stdout)')
    .option('--tags <a,b>', 'only memories with these tags', tagList)
    .option('--agent <id>', 'only memories of this agent_id')
    .option('--bundle', 'the whole account as one JSONL bundle with a SHA-256 trailer (GET /v1/export/bundle); --format, --tags and --agent do not apply')
    .action(
      action<{ format: ExportFormat; out?: string; tags?: string[]; agent?: string; bundle?: boolean }>(async (ctx, _args, opts) => {
        // The file is opened before the download: a path that cannot be written is an input error (exit 2), not a stack.
        const sink = opts.out ? createWriteStream(opts.out, { mode: 0o600 }) : process.stdout;
        if (opts.out) await once(sink, 'open');
        const stream = opts.bundle
          ? await ctx.client().portability.exportBundle()
          : await ctx.client().memories.exportStream({ format: opts.format, tags: opts.tags?.join(','), agent_id: opts.agent });
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
    .description('Import a file through POST /v1/import: an engram bundle, JSONL memories, a mem0 export or a JSON array export')
    .argument('<file>', 'the file to import (its format is detected unless --format says it)')
    .addOption(new Option('--format <format>', 'skip the detection: bundle, jsonl or mem0').choices(['bundle', 'jsonl', 'mem0']))
    .option('--dry-run', 'check every line and count what would be stored; write nothing')
    .option('--no-wait', 'for a file stored by a job (past 10,000 lines), print its id and return at once')
    .addHelpText(
      'after',
      [
        '',
        'The format is detected from the file: a bundle of `engram export --bundle` (its header line), JSONL',
        '(one {"observation"|"text", "tags"?, "importance"?, "context"?, "agent_id"?, "id"?} a line, or the lines of',
        '`engram export`), a mem0 export ({"results": [...]} or an array of {"memory", ...}), or a JSON array of',
        'memories (`engram export --format json`), sent as JSONL, one item a line. Every import goes through',
        'POST /v1/import (up to 100 MB): a line that is refused is reported on stderr with its number and the',
        'others are stored; importing the same file twice stores nothing the second time. A file of more than',
        '10,000 lines is stored by a job on the server: the command follows it (GET /v1/imports/{import_id}) with',
        'progress on stderr until it completes, unless --no-wait. With --json, the final import body is printed',
        'as one JSON line. Exit 0 when every line was stored (or skipped as already imported), 1 when the API',
        'refused the file or some of its lines, 2 when the file cannot be read or its format cannot be told.',
      ].join('\n'),
    )
    .action(
      action<{ format?: ImportFormat; dryRun?: boolean; wait: boolean }>(async (ctx, [file], opts) => {
        const client = ctx.client();
        const upload = await importBody(file, opts.format);
        if (upload.note) ctx.output.note(upload.note);
        let summary = await client.portability.import(upload.body, { format: upload.format, dry_run: opts.dryRun ? 'true' : 'false' });
        if (summary.status !== 'completed' && summary.id) {
          const id = summary.id;
          if (!opts.wait) {
            if (ctx.output.json) process.stdout.write(`${JSON.stringify(summary)}\n`);
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
        for (const e of summary.errors) ctx.output.note(`${upload.unit} ${e.line}: ${e.code}: ${e.message}`);
        const unlisted = summary.errors_total - summary.errors.length;
        if (unlisted > 0)
          ctx.output.note(
            `… and ${unlisted} more refused ${unlisted === 1 ? upload.unit : `${upload.unit}s`} (the API lists the first ${summary.errors.length})`,
          );
        const stored = Object.entries(summary.stored)
          .filter(([, n]) => n > 0)
          .map(([type, n]) => `${n} ${type}`)
          .join(', ');
        const skipped = [
          `${summary.already_imported} already imported`,
          summary.duplicates ? `${summary.duplicates} duplicates` : '',
          summary.erased ? `${summary.erased} erased before` : '',
          summary.skipped.webhook ? `${summary.skipped.webhook} webhooks skipped` : '',
        ].filter(Boolean);
        // A dry run stores nothing: what it would store is what it staged.
        const outcome = opts.dryRun ? `${summary.staged} ${summary.staged === 1 ? 'record' : 'records'} would be stored` : `stored ${stored || 'nothing'}`;
        ctx.output.line(
          `${opts.dryRun ? 'Dry run: ' : ''}${file} (${summary.format}): ${summary.lines} ${upload.unit}s, ${summary.valid} valid, ${summary.invalid} invalid; ${outcome}; ${skipped.join(', ')}.`,
        );
        const refused = summary.errors_total;
        if (refused > 0)
          throw new CheckFailed(
            `${refused} ${refused === 1 ? upload.unit : `${upload.unit}s`} of ${file} refused${summary.failed ? ` (${summary.failed} by the store)` : ''}; the others ${opts.dryRun ? 'would be' : 'were'} imported`,
          );
      }),
    );
}

type ImportFormat = 'bundle' | 'jsonl' | 'mem0';

/** What POST /v1/import receives for a file: the file itself, or a JSON array turned into JSONL. */
interface Upload {
  format: ImportFormat;
  body: Blob | string;
  /** How the API's `line` numbers read for this file: its lines, or the items of its array. */
  unit: 'line' | 'item';
  /** Said on stderr before the upload: what was detected. */
  note?: string;
}

/** The first bytes read to tell the format: a bundle's header or a JSONL record fits well within. */
const HEAD_BYTES = 1024 * 1024;

/**
 * The body and format for `file`: as it is for a bundle, JSONL or a mem0 export (the API reads those
 * as they arrive), or, for a JSON array of memories (`engram export --format json`, another tool's
 * export), one item a line as JSONL, so every import takes the same idempotent route. A file that
 * cannot be read, or whose format cannot be told, is an input error (exit 2).
 */
async function importBody(file: string, forced: ImportFormat | undefined): Promise<Upload> {
  const info = await stat(file);
  if (!info.isFile()) throw new UsageError(`${file} is not a file`);
  if (forced) return { format: forced, body: await openAsBlob(file), unit: forced === 'mem0' ? 'item' : 'line' };
  const head = await readHead(file);
  const text = head.replace(/^\uFEFF/, '').trimStart();
  if (text === '') throw new UsageError(`${file} is empty`);
  if (text.startsWith('{')) {
    const first = parseOrUndefined(text.split('\n', 1)[0]);
    if (isObject(first)) {
      if (first.type === 'header' && first.format === 'engram-bundle')
        return { format: 'bundle', body: await openAsBlob(file), unit: 'line', note: `${file}: an engram bundle` };
      if (Array.isArray(first.results) || Array.isArray(first.memories))
        return { format: 'mem0', body: await openAsBlob(file), unit: 'item', note: `${file}: a mem0 export` };
      return { format: 'jsonl', body: await openAsBlob(file), unit: 'line', note: `${file}: JSONL` };
    }
    // The first line is not a whole object: one JSON document over several lines, a mem0 export.
    const whole = parseOrUndefined(await readFile(file, 'utf8'));
    if (isObject(whole) && (Array.isArray(whole.results) || Array.isArray(whole.memories)))
      return { format: 'mem0', body: await openAsBlob(file), unit: 'item', note: `${file}: a mem0 export` };
    if (whole === undefined) return { format: 'jsonl', body: await openAsBlob(file), unit: 'line', note: `${file}: JSONL` };
    throw new UsageError(`${file}: one JSON object without a "results" array is not a format engram imports; pass --format to send it anyway`);
  }
  if (text.startsWith('[')) {
    const raw = await readFile(file, 'utf8');
    const items = parseOrUndefined(raw);
    if (Array.isArray(items)) {
      if (items.some((item) => isObject(item) && typeof item.memory === 'string' && item.observation === undefined && item.text === undefined))
        return { format: 'mem0', body: await openAsBlob(file), unit: 'item', note: `${file}: a mem0 export` };
      return { format: 'jsonl', body: jsonLines(items), unit: 'item', note: `${file}: a JSON array of ${items.length} memories, sent as JSONL` };
    }
    // Not one JSON document (a line of it is damaged): an export of one record a line, read line by
    // line so the API refuses only the damaged line and its number is the file's.
    return { format: 'jsonl', body: arrayLines(raw), unit: 'line', note: `${file}: a JSON array export read line by line (it is not valid JSON as a whole)` };
  }
  throw new UsageError(`${file} is not JSON (nor JSONL): engram imports a bundle, JSONL, a mem0 export or a JSON array`);
}

async function readHead(file: string): Promise<string> {
  const handle = await open(file, 'r');
  try {
    const buffer = Buffer.alloc(HEAD_BYTES);
    const { bytesRead } = await handle.read(buffer, 0, HEAD_BYTES, 0);
    return buffer.subarray(0, bytesRead).toString('utf8');
  } finally {
    await handle.close();
  }
}

function parseOrUndefined(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** One item a line; an item that is not an object still gets its line, which the API refuses by number. */
function jsonLines(items: unknown[]): string {
  return items.map((item) => JSON.stringify(item) ?? 'null').join('\n');
}

/** `[`, `{...},` lines, `]` → the same lines without the brackets and commas (blank lines keep the numbering). */
function arrayLines(raw: string): string {
  return raw
    .split(/\r?\n/)
    .map((line) => {
      const t = line.trim();
      return t === '[' || t === ']'
        ? ''
        : t
            .replace(/^\[\s*/, '')
            .replace(/\s*\]$/, '')
            .replace(/^,/, '')
            .replace(/,$/, '');
    })
    .join('\n');
}
