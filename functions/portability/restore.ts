import { sql } from 'drizzle-orm';
import type { TenantCtx } from '../../shared/platform/contract/context';
import { errorFields } from '../../shared/platform/contract/error-fields';
import { AppError } from '../../shared/platform/contract/errors';
import { restorerOf } from '../../shared/platform/http/family';
import { sqlState } from '../../shared/platform/data/pg-errors';
import { mayUse } from '../../shared/platform/contract/scopes';
import { requireFeature } from '../../shared/platform/contract/tiers';
import { type Work, write } from '../../shared/platform/data/unit-of-work';
import type { LineError } from './parse';

export type RestoredKind = 'space' | 'policy' | 'agent' | 'pack' | 'triple';

/**
 * Why the caller may not restore a record of `kind` at all, or null: the scope the key needs for
 * the family that restores it (`<family>:write`, as that family's create route asks) and the
 * feature that route asks of the tier. Checked as the lines arrive, so a dry run says it too.
 */
export function refusalOf(ctx: TenantCtx, kind: RestoredKind | 'memory'): AppError | null {
  const restorer = kind === 'memory' ? { family: 'memories', feature: undefined } : restorerOf(kind);
  if (!restorer) return new AppError('INTERNAL_ERROR', `no family restores ${kind}`);
  const scope = `${restorer.family}:write`;
  if (!mayUse(ctx.auth, scope)) return new AppError('FORBIDDEN', `restoring a ${kind} needs the scope ${scope}, which this restricted key lacks`);
  try {
    if (restorer.feature) requireFeature(ctx.tier, restorer.feature);
  } catch (err) {
    return err as AppError;
  }
  return null;
}

/**
 * Restores one record through the create verb of the family that owns its kind, inside the import
 * chunk's unit of work, behind a savepoint: a record the verb refuses (an AppError, or a statement
 * that failed) is rolled back alone and answered as that line's error; the rest of the chunk goes
 * on. A deadlock or serialization failure aborts the whole transaction, which `write` runs again.
 * Answers the new record's id, null when the tenant already has one of that name (nothing written).
 */
export async function restoreLine(
  work: Work<TenantCtx>,
  line: { line: number; kind: RestoredKind; body: Record<string, unknown> },
): Promise<{ target: string | null } | LineError> {
  const restorer = restorerOf(line.kind);
  if (!restorer) return { line: line.line, code: 'INTERNAL_ERROR', message: `no family restores ${line.kind}` };
  await work.tx.execute(sql`SAVEPOINT import_line`);
  try {
    const target = await restorer.restore(work.ctx, line.body);
    await work.tx.execute(sql`RELEASE SAVEPOINT import_line`);
    return { target };
  } catch (err) {
    const state = sqlState(err);
    if (state === '40P01' || state === '40001') throw err;
    await work.tx.execute(sql`ROLLBACK TO SAVEPOINT import_line`);
    if (err instanceof AppError) return { line: line.line, code: err.code, message: err.message };
    work.ctx.services.log.warn('import line failed', { request_id: work.ctx.requestId, kind: line.kind, ...errorFields(err) });
    return { line: line.line, code: 'INTERNAL_ERROR', message: `the ${line.kind} could not be stored` };
  }
}

/** Packs before the agents that name them, whatever the order of the file; then by line (as staging orders them). */
const RESTORE_RANK: Record<RestoredKind, number> = { space: 0, pack: 1, agent: 2, policy: 3, triple: 4 };

/** The end of a dry run's transaction: thrown so that `write` rolls back everything the verbs did. */
class DryRunDone extends Error {
  constructor(readonly errors: LineError[]) {
    super('dry run rolled back');
  }
}

/**
 * A dry run's refusals that only the verbs make (an invalid pattern, the enabled-policies cap, an
 * agent naming a pack that does not exist): the records restored as an import restores them, in
 * one transaction that is rolled back whatever happens, so nothing is written, audited or
 * announced (a rolled-back `write` wakes nothing) and each line sees the ones before it, as the cap
 * counts them in a real import.
 */
export async function verbRefusals(ctx: TenantCtx, lines: { line: number; kind: RestoredKind; data: Record<string, unknown> }[]): Promise<LineError[]> {
  if (!lines.length) return [];
  const ordered = [...lines].sort((a, b) => RESTORE_RANK[a.kind] - RESTORE_RANK[b.kind] || a.line - b.line);
  try {
    await write(ctx, async (work) => {
      const errors: LineError[] = [];
      for (const l of ordered) {
        const outcome = await restoreLine(work, { line: l.line, kind: l.kind, body: bodyOf(l.kind, l.data) });
        if ('code' in outcome) errors.push(outcome);
      }
      throw new DryRunDone(errors);
    });
  } catch (err) {
    if (err instanceof DryRunDone) return err.errors;
    throw err;
  }
  throw new Error('a dry run committed');
}

/** Drops null fields: a bundle writes null for what the create body leaves out. */
const present = (o: Record<string, unknown>) => Object.fromEntries(Object.entries(o).filter(([, v]) => v !== null && v !== undefined));
const obj = (v: unknown) => (typeof v === 'object' && v !== null ? (v as Record<string, unknown>) : {});

/** A bundle line as the create body of its family's route (what a client restoring by hand would send). */
export function bodyOf(kind: RestoredKind, d: Record<string, unknown>): Record<string, unknown> {
  switch (kind) {
    case 'space':
      return present({ name: d.name, description: d.description, tags: d.tags, allowed_agent_ids: d.allowed_agent_ids });
    case 'policy':
      return present({
        name: d.name,
        agent_id: d.agent_id,
        description: d.description,
        step_types: d.step_types,
        whitelisted_domains: d.whitelisted_domains,
        rules: d.rules,
        enabled: d.enabled,
      });
    case 'agent':
      return present({
        agent_id: d.agent_id,
        name: d.name,
        description: d.description,
        provider: d.provider,
        model: d.model,
        instructions: d.instructions,
        capabilities: d.capabilities,
        status: d.status,
      });
    case 'pack':
      return present({ name: d.name, description: d.description, tools: d.tools, risk_levels: d.risk_levels });
    case 'triple': {
      const [s, o] = [obj(d.subject), obj(d.object)];
      return present({
        subject: s.name,
        subject_type: s.type,
        predicate: d.predicate,
        object: o.name,
        object_type: o.type,
        confidence: d.confidence,
        metadata: d.metadata,
      });
    }
  }
}
