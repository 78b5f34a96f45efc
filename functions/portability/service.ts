import { sql } from 'drizzle-orm';
import { batchStore } from '../../shared/memory/store-port';
import type { TenantCtx } from '../../shared/platform/context';
import { type DbOrTx, pgArray, rows } from '../../shared/platform/db';
import { errorFields } from '../../shared/platform/error-fields';
import { hasFeature, tiers } from '../../shared/platform/tiers';
import { write } from '../../shared/platform/unit-of-work';
import { type ImportFormat, type LineError, parseBody, type Record_ } from './parse';
import { restore } from './restore';

/** The most a POST /v1/import body may hold; the app's 1 MiB limit does not apply to it. */
export const MAX_IMPORT_BYTES = 100 * 1024 * 1024;
/** The most per-line errors an answer lists; `errors_total` counts them all. */
const MAX_ERRORS = 1000;
/** Memories a transaction stores, as a batch request does. */
const CHUNK = 100;

type Kind = Record_['kind'];
const zero = (): Record<Kind, number> => ({ memory: 0, space: 0, triple: 0, policy: 0, agent: 0, pack: 0, webhook: 0 });

export interface ImportSummary {
  format: ImportFormat;
  dry_run: boolean;
  lines: number;
  valid: number;
  invalid: number;
  stored: Record<Kind, number>;
  already_imported: number;
  duplicates: number;
  skipped: { webhook: number };
  failed: number;
  errors: LineError[];
  errors_total: number;
}

/** Which of `sources` the tenant imported before. */
async function knownSources(db: DbOrTx, tenantId: string, sources: string[]): Promise<Map<string, string | null>> {
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

async function remember(tx: DbOrTx, tenantId: string, now: Date, done: { source: string; target: string | null }[]) {
  if (!done.length) return;
  await tx.execute(sql`INSERT INTO import_sources (tenant_id, source_id, target_id, imported_at)
    SELECT ${tenantId}, s.source_id, s.target_id, ${now.toISOString()}
    FROM jsonb_to_recordset(${JSON.stringify(done.map((d) => ({ source_id: d.source, target_id: d.target })))}::jsonb) AS s(source_id text, target_id text)
    ON CONFLICT DO NOTHING`);
}

/** A record the tenant's tier may not restore: the feature the family's own route would ask for. */
function gateOf(ctx: TenantCtx, r: Record_): string | null {
  if (r.kind === 'space' && !hasFeature(ctx.tier, 'spaces')) return 'spaces';
  if (r.kind === 'triple' && !hasFeature(ctx.tier, 'knowledge_graph')) return 'knowledge_graph';
  if (r.kind === 'policy' && r.data.agent_id && !hasFeature(ctx.tier, 'agent_scoped_policies')) return 'agent_scoped_policies';
  return null;
}

/**
 * POST /v1/import (`portability.import`): parse and check every line first (a bundle whose trailer
 * does not match is refused here, before anything is written), drop what the tenant imported
 * before, then restore: spaces, agents, packs, policies and triples in one unit of work, memories
 * through the batch store path a chunk a transaction, each chunk with the source ids it stored.
 */
export async function runImport(
  ctx: TenantCtx,
  input: { format: ImportFormat; dryRun: boolean; body: ReadableStream<Uint8Array> | null },
): Promise<ImportSummary> {
  const parsed = await parseBody(input.body, input.format, MAX_IMPORT_BYTES);
  const errors = parsed.errors;
  const summary: ImportSummary = {
    format: input.format,
    dry_run: input.dryRun,
    lines: parsed.lines,
    valid: 0,
    invalid: 0,
    stored: zero(),
    already_imported: 0,
    duplicates: 0,
    skipped: { webhook: 0 },
    failed: 0,
    errors: [],
    errors_total: 0,
  };
  const known = await knownSources(
    ctx.db,
    ctx.tenantId,
    parsed.records.map((r) => r.source),
  );
  const seen = new Set<string>();
  const todo: Record_[] = [];
  const port = batchStore();
  for (const r of parsed.records) {
    const gate = gateOf(ctx, r);
    const why = r.kind === 'memory' ? port.invalid(r.body) : null;
    if (gate)
      errors.push({ line: r.line, code: 'FEATURE_NOT_AVAILABLE', message: `the ${r.kind} needs the ${gate} feature, which the ${ctx.tier} tier lacks` });
    else if (why) errors.push({ line: r.line, code: 'INVALID_RECORD', message: why });
    else {
      summary.valid += 1;
      if (r.kind === 'webhook') summary.skipped.webhook += 1;
      else if (known.has(r.source)) summary.already_imported += 1;
      else if (seen.has(r.source)) summary.duplicates += 1;
      else todo.push(r);
      seen.add(r.source);
    }
  }
  const policyLimit = tiers[ctx.tier].limits.custom_policies;
  if (!input.dryRun && todo.length) await restoreAll(ctx, todo, known, summary, errors, policyLimit);
  errors.sort((a, b) => a.line - b.line);
  summary.invalid = parsed.lines ? new Set(errors.map((e) => e.line)).size : 0;
  summary.errors_total = errors.length;
  summary.errors = errors.slice(0, MAX_ERRORS);
  return summary;
}

async function restoreAll(
  ctx: TenantCtx,
  todo: Record_[],
  known: Map<string, string | null>,
  summary: ImportSummary,
  errors: LineError[],
  policyLimit: number | null,
) {
  const others = todo.filter((r): r is Extract<Record_, { data: unknown }> => r.kind !== 'memory' && r.kind !== 'webhook');
  const spaceOf = new Map<string, string | null>(known);
  if (others.length)
    await write(ctx, async (work) => {
      await work.lock(`import:${ctx.tenantId}`);
      const again = await knownSources(
        work.tx,
        ctx.tenantId,
        others.map((r) => r.source),
      );
      let policies =
        policyLimit === null ? 0 : Number((await rows<{ n: number }>(work.tx, sql`SELECT count(*) AS n FROM policies WHERE tenant_id = ${ctx.tenantId}`))[0].n);
      const done: { source: string; target: string | null }[] = [];
      for (const r of others) {
        if (again.has(r.source)) continue;
        if (r.kind === 'policy' && policyLimit !== null && policies >= policyLimit) {
          errors.push({ line: r.line, code: 'RATE_LIMITED', message: `the ${ctx.tier} tier allows ${policyLimit} custom policies` });
          summary.failed += 1;
          continue;
        }
        const target = await restore(work.tx, ctx.tenantId, ctx.now, r.kind, r.data);
        if (r.kind === 'policy' && target) policies += 1;
        if (target) summary.stored[r.kind] += 1;
        else summary.already_imported += 1;
        spaceOf.set(r.source, target);
        done.push({ source: r.source, target });
      }
      await remember(work.tx, ctx.tenantId, ctx.now, done);
      await work.audit({
        operation: 'import.restored',
        resourceType: 'import',
        metadata: {
          spaces: summary.stored.space,
          agents: summary.stored.agent,
          packs: summary.stored.pack,
          policies: summary.stored.policy,
          triples: summary.stored.triple,
        },
      });
    });
  const memories = todo.filter((r): r is Extract<Record_, { kind: 'memory' }> => r.kind === 'memory');
  const port = batchStore();
  for (let i = 0; i < memories.length; i += CHUNK) {
    const chunk = memories.slice(i, i + CHUNK);
    await write(ctx, async (work) => {
      // Two imports of the same file at once: the second waits, then finds the first one's sources.
      await work.lock(`import:${ctx.tenantId}`);
      const again = await knownSources(
        work.tx,
        ctx.tenantId,
        chunk.map((r) => r.source),
      );
      const fresh = chunk.filter((r) => !again.has(r.source));
      summary.already_imported += chunk.length - fresh.length;
      const bodies = fresh.map((r) => {
        const space = r.spaceSource ? spaceOf.get(r.spaceSource) : undefined;
        return space ? { ...r.body, space_id: space } : r.body;
      });
      const outcomes = bodies.length ? await port.store(work.ctx, bodies) : [];
      const done: { source: string; target: string | null }[] = [];
      outcomes.forEach((o, k) => {
        if (o.ok) {
          summary.stored.memory += 1;
          done.push({ source: fresh[k].source, target: o.result.id });
        } else {
          summary.failed += 1;
          errors.push({ line: fresh[k].line, code: o.error.code, message: o.error.message });
        }
      });
      await remember(work.tx, ctx.tenantId, ctx.now, done);
    }).catch((err: unknown) => {
      // A chunk that fails as a whole (an embedding outage) stores nothing; its lines say so.
      ctx.services.log.warn('import chunk failed', { request_id: ctx.requestId, ...errorFields(err) });
      summary.failed += chunk.length;
      for (const r of chunk)
        errors.push({ line: r.line, code: 'SERVICE_UNAVAILABLE', message: 'this chunk could not be stored; import the file again to retry it' });
    });
  }
}
