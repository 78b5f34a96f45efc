/** @jsxImportSource hono/jsx */
import { ctxOf } from '../../shared/platform/context';
import { AppError } from '../../shared/platform/errors';
import { IdParams, SearchQuery } from '../memories/schemas';
import { search } from '../memories/search';
import { get, remove } from '../memories/service';
import { lifecycle } from '../replay/lifecycle';
import { hasFeature } from '../../shared/platform/tiers';
import type { ConsoleContext } from './http';
import { MemoriesPage, MemoryPage } from './views/memories';

const viewerOf = (c: ConsoleContext) => {
  const { auth } = ctxOf(c as never);
  return { email: auth.email, tier: auth.tier, csrfToken: c.get('session').csrfToken };
};

/** The memory id of the path, validated as the memories routes validate it (else 404). */
const idOf = (c: ConsoleContext) => {
  const parsed = IdParams.safeParse({ id: c.req.param('id') });
  if (!parsed.success) throw new AppError('NOT_FOUND', 'Memory not found');
  return parsed.data;
};

const notFoundAsNull = (err: unknown) => {
  if (err instanceof AppError && err.status === 404) return null;
  throw err;
};

export async function memoriesPage(c: ConsoleContext) {
  const q = c.req.query('q') ?? '';
  const mode = c.req.query('mode') ?? 'hybrid';
  const notice = c.req.query('forgotten') ? 'The memory is forgotten.' : undefined;
  if (!q) return c.html(<MemoriesPage viewer={viewerOf(c)} q="" mode={mode} notice={notice} />);
  const parsed = SearchQuery.safeParse({ q, mode, limit: 20 });
  if (!parsed.success) {
    const problem = parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ');
    return c.html(<MemoriesPage viewer={viewerOf(c)} q={q} mode={mode} problem={problem} />, 400);
  }
  const found = await search(ctxOf(c as never), parsed.data);
  return c.html(<MemoriesPage viewer={viewerOf(c)} q={q} mode={parsed.data.mode} found={found} />);
}

/**
 * A memory (`GET /v1/memories/{id}`) with its versions and links as `GET /v1/replay/memory/{memory_id}`
 * tells them, where the tier has replay (the route's gate).
 */
export async function memoryPage(c: ConsoleContext) {
  const ctx = ctxOf(c as never);
  const id = idOf(c);
  const memory = await get(ctx, id);
  // A memory shared with this account from another one has no history of this account's: none shown.
  const history = hasFeature(ctx.tier, 'replay') ? await lifecycle(ctx, { memoryId: id.id }).catch(notFoundAsNull) : null;
  return c.html(<MemoryPage viewer={viewerOf(c)} memory={memory} history={history} />);
}

export async function forgetMemory(c: ConsoleContext) {
  await remove(ctxOf(c as never), idOf(c));
  return c.redirect('/console/memories?forgotten=1', 303);
}
