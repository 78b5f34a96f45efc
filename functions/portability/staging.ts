import { sql } from 'drizzle-orm';
import { type DbOrTx, pgArray, rows } from '../../shared/platform/data/db';
import type { PageInput } from '../../shared/platform/data/pagination';
import { type ImportFormat, type LineError, MAX_ERRORS, type Record_, type Skipped } from './parse';

export type Kind = Record_['kind'];
/** Restored records by kind, and `held`: memory lines a memory policy held for review (docs/governed-memories.md). */
export type Counts = Record<Kind | 'held', number>;
export const zeroCounts = (): Counts => ({ memory: 0, space: 0, triple: 0, policy: 0, agent: 0, pack: 0, webhook: 0, held: 0 });

/** An `imports` row as read (docs/portability.md#large-imports). */
export interface ImportRow {
  id: string;
  tenant_id: string;
  format: ImportFormat;
  /** receiving, queued, running, completed */
  status: string;
  lines: number;
  valid: number;
  staged: number;
  processed: number;
  stored: Partial<Counts>;
  already_imported: number;
  duplicates: number;
  skipped_webhooks: number;
  /** What a mem0 file left out on purpose (parse.ts Skipped). */
  skipped: Partial<Skipped>;
  failed: number;
  erased: number;
  errors: LineError[];
  errors_total: number;
  created_at: string | Date;
  updated_at: string | Date;
  completed_at: string | Date | null;
}

/** A staged line as a chunk reads it: what `parse` made of it, without the kind's own fields. */
export interface StagedLine {
  line: number;
  kind: Exclude<Kind, 'webhook'>;
  source: string;
  /** `ref`: where the memory came from, as the file said (the source's `ref` once the line is stored). */
  record: { body?: Record<string, unknown>; spaceSource?: string | null; ref?: string | null; data?: Record<string, unknown> };
}

const COLUMNS = sql.raw(
  'id, tenant_id, format, status, lines, valid, staged, processed, stored, already_imported, duplicates, skipped_webhooks, skipped, failed, erased, errors, errors_total, created_at, updated_at, completed_at',
);

export async function createImport(db: DbOrTx, input: { id: string; tenantId: string; format: ImportFormat; now: Date }) {
  const at = input.now.toISOString();
  await db.execute(sql`INSERT INTO imports (id, tenant_id, format, status, created_at, updated_at)
    VALUES (${input.id}, ${input.tenantId}, ${input.format}, 'receiving', ${at}, ${at})`);
}

/** Stages the valid records a batch of the body held; answers how many (a source id already staged is a duplicate). */
export async function stage(db: DbOrTx, tenantId: string, importId: string, records: Exclude<Record_, { kind: 'webhook' }>[], now: Date): Promise<number> {
  if (!records.length) return 0;
  const payload = records.map(({ line, kind, source, ...record }) => ({ line, kind, source, record }));
  const [{ n }] = await rows<{ n: number | string }>(
    db,
    sql`WITH s AS (
          INSERT INTO import_lines (tenant_id, import_id, line, kind, source, record)
          SELECT ${tenantId}, ${importId}, r.line, r.kind, r.source, r.record
          FROM jsonb_to_recordset(${JSON.stringify(payload)}::jsonb) AS r(line int, kind text, source text, record jsonb)
          ON CONFLICT DO NOTHING RETURNING 1)
        SELECT count(*) AS n FROM s`,
  );
  await db.execute(sql`UPDATE imports SET updated_at = ${now.toISOString()} WHERE id = ${importId}`);
  return Number(n);
}

/**
 * Error messages may quote what the file said (a key, a type name); jsonb takes neither a NUL nor a
 * lone surrogate, so those are replaced rather than failing the whole import.
 */
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g;
const storable = (text: string) => text.replaceAll('\u0000', '\uFFFD').replace(LONE_SURROGATE, '\uFFFD');
const errorsJson = (errors: LineError[]) => JSON.stringify(errors, (_key, value: unknown) => (typeof value === 'string' ? storable(value) : value));

/** The body is read: the counts of the parse, and the import waits for its chunks. */
export async function received(
  db: DbOrTx,
  importId: string,
  counts: {
    lines: number;
    valid: number;
    staged: number;
    duplicates: number;
    skippedWebhooks: number;
    skipped: Skipped;
    errors: LineError[];
    errorsTotal: number;
  },
  now: Date,
) {
  await db.execute(sql`UPDATE imports SET status = 'running', lines = ${counts.lines}, valid = ${counts.valid}, staged = ${counts.staged},
      duplicates = ${counts.duplicates}, skipped_webhooks = ${counts.skippedWebhooks}, skipped = ${JSON.stringify(counts.skipped)}::jsonb, errors = ${errorsJson(counts.errors)}::jsonb,
      errors_total = ${counts.errorsTotal}, updated_at = ${now.toISOString()}
    WHERE id = ${importId}`);
}

/** An import whose body was refused (413, a bundle that does not verify): it and its staged lines go. */
export async function discard(db: DbOrTx, importId: string) {
  await db.execute(sql`DELETE FROM imports WHERE id = ${importId}`);
}

export async function importOf(db: DbOrTx, tenantId: string, importId: string, opts: { forUpdate?: boolean } = {}): Promise<ImportRow | null> {
  const [found] = await rows<ImportRow>(
    db,
    sql`SELECT ${COLUMNS} FROM imports WHERE tenant_id = ${tenantId} AND id = ${importId} ${opts.forUpdate ? sql`FOR UPDATE` : sql``}`,
  );
  return found ?? null;
}

/** The tenant's imports that wrote, newest first. */
export async function listImports(db: DbOrTx, tenantId: string, page: PageInput): Promise<{ page: ImportRow[]; total: number }> {
  const found = await rows<ImportRow>(
    db,
    sql`SELECT ${COLUMNS} FROM imports WHERE tenant_id = ${tenantId} AND status <> 'receiving'
        ORDER BY created_at DESC, id DESC LIMIT ${page.limit} OFFSET ${page.offset}`,
  );
  const [{ n }] = await rows<{ n: number | string }>(db, sql`SELECT count(*) AS n FROM imports WHERE tenant_id = ${tenantId} AND status <> 'receiving'`);
  return { page: found, total: Number(n) };
}

/** Packs before the agents that name them, whatever the order of the file; then by line. */
const RESTORE_ORDER = sql.raw(`CASE kind WHEN 'space' THEN 0 WHEN 'pack' THEN 1 WHEN 'agent' THEN 2 WHEN 'policy' THEN 3 ELSE 4 END`);

/** The next staged lines of one kind group, in line order: the non-memory records first, then memories. */
export async function nextLines(db: DbOrTx, tenantId: string, importId: string, memories: boolean, limit: number): Promise<StagedLine[]> {
  return rows<StagedLine>(
    db,
    sql`SELECT line, kind, source, record FROM import_lines
        WHERE tenant_id = ${tenantId} AND import_id = ${importId} AND ${memories ? sql`kind = 'memory'` : sql`kind <> 'memory'`}
        ORDER BY ${RESTORE_ORDER}, line LIMIT ${limit}`,
  );
}

export async function unstage(db: DbOrTx, tenantId: string, importId: string, lines: number[]) {
  await db.execute(
    sql`DELETE FROM import_lines WHERE tenant_id = ${tenantId} AND import_id = ${importId} AND line IN (SELECT unnest(${pgArray(lines.map(String))}::int[]))`,
  );
}

/** What one chunk did, added to the import's counts. */
export interface Progress {
  processed: number;
  stored?: Partial<Counts>;
  alreadyImported?: number;
  failed?: number;
  /** Records an erasure removed before (their file's ids, or what an earlier import stored them as): not stored. */
  erased?: number;
  errors?: LineError[];
}

export async function record(db: DbOrTx, row: ImportRow, p: Progress, now: Date) {
  const stored = { ...zeroCounts(), ...row.stored };
  for (const [k, v] of Object.entries(p.stored ?? {})) stored[k as keyof Counts] = (stored[k as keyof Counts] ?? 0) + (v ?? 0);
  const errors = p.errors?.length ? [...row.errors, ...p.errors].sort((a, b) => a.line - b.line).slice(0, MAX_ERRORS) : row.errors;
  await db.execute(sql`UPDATE imports SET processed = processed + ${p.processed}, stored = ${JSON.stringify(stored)}::jsonb,
      already_imported = already_imported + ${p.alreadyImported ?? 0}, failed = failed + ${p.failed ?? 0}, erased = erased + ${p.erased ?? 0},
      errors = ${errorsJson(errors)}::jsonb, errors_total = errors_total + ${p.errors?.length ?? 0}, updated_at = ${now.toISOString()}
    WHERE id = ${row.id}`);
}

/** Marks a running import completed; null when it was not running (another slice finished it). */
export async function complete(db: DbOrTx, tenantId: string, importId: string, now: Date): Promise<ImportRow | null> {
  const [done] = await rows<ImportRow>(
    db,
    sql`UPDATE imports SET status = 'completed', completed_at = ${now.toISOString()}, updated_at = ${now.toISOString()}
        WHERE tenant_id = ${tenantId} AND id = ${importId} AND status = 'running' RETURNING ${COLUMNS}`,
  );
  return done ?? null;
}

/** Which of `sources` the tenant imported before, and what each became. */
export async function knownSources(db: DbOrTx, tenantId: string, sources: string[]): Promise<Map<string, string | null>> {
  const known = new Map<string, string | null>();
  for (let i = 0; i < sources.length; i += 1000) {
    const chunk = sources.slice(i, i + 1000);
    for (const r of await rows<{ source_id: string; target_id: string | null }>(
      db,
      sql`SELECT source_id, target_id FROM import_sources WHERE tenant_id = ${tenantId} AND source_id = ANY(${pgArray(chunk)}::text[])`,
    ))
      known.set(r.source_id, r.target_id);
  }
  return known;
}

export async function remember(tx: DbOrTx, tenantId: string, now: Date, done: { source: string; target: string | null }[]) {
  if (!done.length) return;
  await tx.execute(sql`INSERT INTO import_sources (tenant_id, source_id, target_id, imported_at)
    SELECT ${tenantId}, s.source_id, s.target_id, ${now.toISOString()}
    FROM jsonb_to_recordset(${JSON.stringify(done.map((d) => ({ source_id: d.source, target_id: d.target })))}::jsonb) AS s(source_id text, target_id text)
    ON CONFLICT DO NOTHING`);
}

/** Imports whose body stopped arriving (the process ended mid-upload): they and their staged lines go. */
export async function dropAbandoned(db: DbOrTx, before: Date): Promise<number> {
  return (await rows(db, sql`DELETE FROM imports WHERE status = 'receiving' AND updated_at < ${before.toISOString()} RETURNING 1`)).length;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * Which of `ids` (memory ids as a file names them: a bundle's or a JSONL export's own ids, or what
 * an earlier import stored them as) an erasure of the tenant removed. The erasure's tombstones hold
 * ids only, never text: a file exported before an erasure does not bring the memory back.
 */
async function erasedAmong(db: DbOrTx, tenantId: string, ids: string[]): Promise<Set<string>> {
  const wanted = [...new Set(ids.filter((id) => UUID.test(id)).map((id) => id.toLowerCase()))];
  if (!wanted.length) return new Set();
  const found = await rows<{ memory_id: string }>(
    db,
    sql`SELECT memory_id FROM erased_memories WHERE tenant_id = ${tenantId} AND memory_id = ANY(${pgArray(wanted)}::uuid[])`,
  );
  return new Set(found.map((r) => r.memory_id));
}

/** The memory id a source id names, if any: `bundle:<id>` and `jsonl:<id>` carry the file's own id. */
const memoryIdOf = (source: string) => /^(bundle|jsonl):(.+)$/.exec(source)?.[2]?.toLowerCase() ?? null;

/**
 * Which memory `sources` name a memory an erasure removed: the file's own id, or what an earlier
 * import stored the source as (`known`, from knownSources).
 */
export async function erasedSources(db: DbOrTx, tenantId: string, sources: string[], known: Map<string, string | null>): Promise<Set<string>> {
  const idsOf = (source: string) =>
    [
      memoryIdOf(source),
      known
        .get(source)
        ?.replace(/^urn:uuid:/, '')
        .toLowerCase(),
    ].filter((id): id is string => !!id);
  const erased = await erasedAmong(db, tenantId, sources.flatMap(idsOf));
  return new Set(sources.filter((source) => idsOf(source).some((id) => erased.has(id))));
}
