import type { z } from '@hono/zod-openapi';
import { normalizeName } from '../../shared/memory/entities';
import type { TenantCtx } from '../../shared/platform/context';
import { AppError, notFound, validationError } from '../../shared/platform/errors';
import { parseUrn } from '../../shared/platform/ids';
import * as q from './queries';
import { MAX_PATHS, type PathsQuery } from './schemas';

const bare = (urn: string) => urn.replace(/^urn:uuid:/, '');

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

const ref = (e: q.EntityRow) => ({ entity_id: e.entity_id, name: e.name, entity_type: e.entity_type });

/** Up to 10 shortest paths between two entities over triples taken either way (queries.shortestPaths). */
export async function paths(ctx: TenantCtx, query: z.infer<typeof PathsQuery>) {
  const from = await resolveEnd(ctx, 'from', query.from);
  const to = await resolveEnd(ctx, 'to', query.to);
  if (from.entity_id === to.entity_id) throw validationError('to', 'must be another entity than from');
  const found = await q.shortestPaths(ctx.db, ctx.tenantId, bare(from.entity_id), bare(to.entity_id), query.max_hops, MAX_PATHS);
  const list = found.map((p) =>
    (typeof p.steps === 'string' ? (JSON.parse(p.steps) as Exclude<q.PathRow['steps'], string>) : p.steps).map((s) => ({
      triple_id: s.triple_id,
      subject: { entity_id: s.s_id, name: s.s_name, entity_type: s.s_type },
      predicate: s.predicate,
      object: { entity_id: s.o_id, name: s.o_name, entity_type: s.o_type },
    })),
  );
  return { from: ref(from), to: ref(to), paths: list, total: list.length };
}
