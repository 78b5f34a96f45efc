import type { MaintenanceTask } from '../../shared/jobs/maintenance';
import { batchStore } from '../../shared/memory/store-port';
import type { TenantCtx } from '../../shared/platform/contract/context';
import { type AppError, notFound } from '../../shared/platform/contract/errors';
import { newId } from '../../shared/platform/contract/ids';
import type { PageInput } from '../../shared/platform/data/pagination';
import { requireFeature } from '../../shared/platform/contract/tiers';
import { HOUR } from '../../shared/platform/contract/time';
import { write } from '../../shared/platform/data/unit-of-work';
import { type ImportFormat, LineErrors, noneSkipped, parseBody, type Record_, type Skipped } from './parse';
import { advance, finish, queueImport } from './process';
import { refusalOf, type RestoredKind, verbRefusals } from './restore';
import { ImportPaging } from './schemas';
import * as st from './staging';

/** The most a POST /v1/import body may hold; the app's 1 MiB limit does not apply to it. */
export const MAX_IMPORT_BYTES = 100 * 1024 * 1024;
/**
 * A small import is stored while the request waits, with a job queued this late behind it: should
 * the process end mid-import, the job finishes what is left.
 */
const FALLBACK_DELAY_MS = 5 * 60_000;

type Staged = Exclude<Record_, { kind: 'webhook' }>;

/**
 * Why the caller may not restore this record at all: the scope and tier feature of the route that
 * creates its kind (docs/portability.md#what-an-import-checks). The verb checks the rest (an
 * agent-scoped policy's feature among them) when the record is stored.
 */
function refusal(ctx: TenantCtx, r: Record_): AppError | null {
  if (r.kind === 'webhook') return null;
  const refused = refusalOf(ctx, r.kind);
  if (refused || r.kind !== 'policy' || !r.data.agent_id) return refused;
  try {
    requireFeature(ctx.tier, 'agent_scoped_policies');
    return null;
  } catch (err) {
    return err as AppError;
  }
}

/** What the parse made of the body: lines, valid records, webhooks skipped, and the refused lines. */
interface Tally {
  lines: number;
  valid: number;
  webhooks: number;
  errors: LineErrors;
  skipped: Skipped;
}

const newTally = (): Tally => ({ lines: 0, valid: 0, webhooks: 0, errors: new LineErrors(), skipped: noneSkipped() });

/** A mem0 graph relation for a tier without the knowledge graph: left out and counted, not an error (docs/portability.md#mem0). */
const graphless = (r: Record_, refused: AppError) => r.kind === 'triple' && r.source.startsWith('mem0-relation:') && refused.code !== 'FORBIDDEN';

/** Checks a batch of parsed records as the store would; answers the ones to restore. */
function checked(ctx: TenantCtx, records: Record_[], tally: Tally): Staged[] {
  const port = batchStore();
  const out: Staged[] = [];
  for (const r of records) {
    const refused = refusal(ctx, r);
    const why = r.kind === 'memory' ? port.invalid(r.body) : null;
    if (refused && graphless(r, refused)) tally.skipped.relation += 1;
    else if (refused) tally.errors.add({ line: r.line, code: refused.code, message: refused.message });
    else if (why) tally.errors.add({ line: r.line, code: 'INVALID_RECORD', message: why });
    else {
      tally.valid += 1;
      if (r.kind === 'webhook') tally.webhooks += 1;
      else out.push(r);
    }
  }
  return out;
}

/** The answer of POST /v1/import and GET /v1/imports/{id}. */
export function toImport(row: st.ImportRow, dryRun = false) {
  const iso = (v: string | Date | null) => (v === null ? null : new Date(v).toISOString());
  return {
    id: dryRun ? null : row.id,
    status: row.status as 'queued' | 'running' | 'completed',
    format: row.format,
    dry_run: dryRun,
    lines: row.lines,
    valid: row.valid,
    invalid: row.errors_total,
    staged: row.staged,
    processed: row.processed,
    stored: { ...st.zeroCounts(), ...row.stored },
    already_imported: row.already_imported,
    duplicates: row.duplicates,
    skipped: { ...noneSkipped(), ...row.skipped, webhook: row.skipped_webhooks },
    failed: row.failed,
    erased: row.erased,
    errors: row.errors,
    errors_total: row.errors_total,
    created_at: iso(row.created_at),
    completed_at: iso(row.completed_at),
  };
}

/**
 * The most spaces, packs, agents, policies and triples a dry run restores (and rolls back) to hear
 * what their verbs refuse: all of a file that is stored while the request waits; beyond, the rest
 * are checked as lines only.
 */
const MAX_DRY_RUN_RESTORES = 10_000;

/**
 * POST /v1/import (`portability.import`), dry run: every line parsed and checked, the source ids
 * looked up, and the new spaces, packs, agents, policies and triples restored through their verbs
 * in a transaction that is rolled back (`verbRefusals`): their refusals are the answer's errors
 * (and `failed`), as a real import would list them; nothing is written.
 */
async function dryRun(ctx: TenantCtx, format: ImportFormat, body: ReadableStream<Uint8Array> | null) {
  const tally = newTally();
  const seen = new Set<string>();
  let alreadyImported = 0;
  let duplicates = 0;
  let erased = 0;
  const fresh: { line: number; kind: RestoredKind; data: Record<string, unknown> }[] = [];
  const parsed = await parseBody(
    body,
    format,
    MAX_IMPORT_BYTES,
    tally.errors,
    async (records) => {
      const candidates = checked(ctx, records, tally);
      const known = await st.knownSources(
        ctx.db,
        ctx.tenantId,
        candidates.map((r) => r.source),
      );
      const gone = await st.erasedSources(
        ctx.db,
        ctx.tenantId,
        candidates.filter((r) => r.kind === 'memory').map((r) => r.source),
        known,
      );
      for (const r of candidates) {
        if (gone.has(r.source)) erased += 1;
        else if (known.has(r.source)) alreadyImported += 1;
        else if (seen.has(r.source)) duplicates += 1;
        else if (r.kind !== 'memory' && fresh.length < MAX_DRY_RUN_RESTORES) fresh.push({ line: r.line, kind: r.kind, data: r.data });
        seen.add(r.source);
      }
    },
    { now: ctx.now, skipped: tally.skipped },
  );
  const refused = await verbRefusals(ctx, fresh);
  for (const e of refused) tally.errors.add(e);
  const now = ctx.now.toISOString();
  const row: st.ImportRow = {
    id: '',
    tenant_id: ctx.tenantId,
    format,
    status: 'completed',
    lines: parsed.lines,
    valid: tally.valid,
    staged: tally.valid - tally.webhooks - alreadyImported - duplicates - erased,
    processed: 0,
    stored: {},
    already_imported: alreadyImported,
    duplicates,
    skipped_webhooks: tally.webhooks,
    skipped: tally.skipped,
    failed: refused.length,
    erased,
    errors: tally.errors.list(),
    errors_total: tally.errors.total,
    created_at: now,
    updated_at: now,
    completed_at: now,
  };
  return toImport(row, true);
}

/**
 * POST /v1/import (`portability.import`): the body is read as it arrives and its valid records
 * staged (docs/portability.md#large-imports); a bundle whose trailer does not match is refused
 * there, its staged lines dropped before any reached the tenant. Then the import runs: spaces,
 * agents, packs, policies and triples, then memories through the batch store path, a chunk a
 * transaction, each with the source ids it stored. A file of at most IMPORT_INLINE_MAX_LINES lines is
 * stored while the request waits (200); a larger one by a job (202), followed with GET
 * /v1/imports/{id} and the `import.progress` / `import.completed` events.
 */
export async function runImport(ctx: TenantCtx, input: { format: ImportFormat; dryRun: boolean; body: ReadableStream<Uint8Array> | null }) {
  if (input.dryRun) return { status: 200 as const, body: await dryRun(ctx, input.format, input.body) };
  const importId = newId('import');
  await st.createImport(ctx.db, { id: importId, tenantId: ctx.tenantId, format: input.format, now: ctx.now });
  const tally = newTally();
  let staged = 0;
  let parsed: { lines: number };
  try {
    parsed = await parseBody(
      input.body,
      input.format,
      MAX_IMPORT_BYTES,
      tally.errors,
      async (records) => {
        staged += await st.stage(ctx.db, ctx.tenantId, importId, checked(ctx, records, tally), ctx.services.clock.now());
      },
      { now: ctx.now, skipped: tally.skipped },
    );
  } catch (err) {
    await st.discard(ctx.db, importId);
    throw err;
  }
  const inline = parsed.lines <= ctx.services.config.IMPORT_INLINE_MAX_LINES;
  await write(ctx, async (work) => {
    await st.received(
      work.tx,
      importId,
      {
        lines: parsed.lines,
        valid: tally.valid,
        staged,
        duplicates: tally.valid - tally.webhooks - staged,
        skippedWebhooks: tally.webhooks,
        skipped: tally.skipped,
        errors: tally.errors.list(),
        errorsTotal: tally.errors.total,
      },
      ctx.now,
    );
    await queueImport(work, importId, inline ? new Date(ctx.now.getTime() + FALLBACK_DELAY_MS) : undefined);
  });
  if (inline) {
    await advance(ctx, importId, null);
    await finish(ctx, importId);
  }
  const row = await st.importOf(ctx.db, ctx.tenantId, importId);
  if (!row) throw notFound('Import');
  return inline ? { status: 200 as const, body: toImport(row) } : { status: 202 as const, body: toImport(row) };
}

export async function getImport(ctx: TenantCtx, importId: string) {
  const row = await st.importOf(ctx.db, ctx.tenantId, importId);
  if (!row || row.status === 'receiving') throw notFound('Import');
  return toImport(row);
}

export async function listImports(ctx: TenantCtx, page: PageInput) {
  const found = await st.listImports(ctx.db, ctx.tenantId, page);
  return { imports: found.page.map((r) => toImport(r)), ...ImportPaging.meta(found.total, page, found.page.length) };
}

/** Maintenance: imports whose body stopped arriving an hour ago (the process ended mid-upload) go, staged lines and all. */
export const dropAbandonedImports: MaintenanceTask = ({ db, now }) => st.dropAbandoned(db, new Date(now.getTime() - HOUR));
