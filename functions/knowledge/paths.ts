import type { z } from '@hono/zod-openapi';
import { normalizeName } from '../../shared/memory/entities';
import type { TenantCtx } from '../../shared/platform/context';
import { AppError, notFound, validationError } from '../../shared/platform/errors';
import { parseUrn } from '../../shared/platform/ids';
import * as q from './queries';
import { MAX_PATHS, type PathsQuery, toRef, toStepDto } from './schemas';

/**
 * One end of a path: an entity id (`urn:uuid:...` or a bare uuid), else a name. A name several
 * entities share (one per type) is ambiguous: 400 naming their ids, so the caller picks one.
 */
async function resolveEnd(ctx: TenantCtx, field: 'from' | 'to', value: string): Promise<q.EntityRow> {
  const id = parseUrn(value);
  if (id) {
    const entity = await q.entityOf(ctx.db, ctx.tenantId, id);
    if (!entity) throw notFound('Entity');
    return entity;
  }
  const named = await q.entitiesNamed(ctx.db, ctx.tenantId, normalizeName(value));
  if (!named.length) throw notFound('Entity');
  if (named.length > 1) {
    const choices = named.map((e) => `${e.entity_id} (${e.entity_type})`).join(', ');
    throw new AppError('VALIDATION_ERROR', `${field}: the name "${named[0].name}" names ${named.length} entities; pass one of their ids: ${choices}`, {
      details: [{ path: field, message: `ambiguous name; one of ${choices}` }],
    });
  }
  return named[0];
}

/** Up to 10 shortest paths between two entities over triples taken either way (queries.shortestPaths). */
export async function paths(ctx: TenantCtx, query: z.infer<typeof PathsQuery>) {
  const from = await resolveEnd(ctx, 'from', query.from);
  const to = await resolveEnd(ctx, 'to', query.to);
  if (from.entity_id === to.entity_id) throw validationError('to', 'must be another entity than from');
  const found = await q.shortestPaths(ctx.db, ctx.tenantId, parseUrn(from.entity_id)!, parseUrn(to.entity_id)!, query.max_hops, MAX_PATHS);
  const list = found.map((path) => path.map(toStepDto));
  return { from: toRef(from), to: toRef(to), paths: list, total: list.length };
}
