import type { z } from '@hono/zod-openapi';
import { normalizeName } from '../../shared/memory/entities';
import type { TenantCtx } from '../../shared/platform/contract/context';
import { notFound, validationError } from '../../shared/platform/contract/errors';
import { parseUrn } from '../../shared/platform/contract/ids';
import * as q from './queries';
import { MAX_PATHS, type PathsQuery, toRef, toStepDto } from './schemas';

/** One end of a path: an entity id (`urn:uuid:...` or a bare uuid), else a name (an entity is its name). */
async function resolveEnd(ctx: TenantCtx, value: string): Promise<q.EntityRow> {
  const id = parseUrn(value);
  const entity = id ? await q.entityOf(ctx.db, ctx.tenantId, id) : await q.entityNamed(ctx.db, ctx.tenantId, normalizeName(value));
  if (!entity) throw notFound('Entity');
  return entity;
}

/** Up to 10 shortest paths between two entities over triples taken either way (queries.shortestPaths). */
export async function paths(ctx: TenantCtx, query: z.infer<typeof PathsQuery>) {
  const from = await resolveEnd(ctx, query.from);
  const to = await resolveEnd(ctx, query.to);
  if (from.entity_id === to.entity_id) throw validationError('to', 'must be another entity than from');
  const found = await q.shortestPaths(ctx.db, ctx.tenantId, parseUrn(from.entity_id)!, parseUrn(to.entity_id)!, query.max_hops, MAX_PATHS);
  const list = found.map((path) => path.map(toStepDto));
  return { from: toRef(from), to: toRef(to), paths: list, total: list.length };
}
