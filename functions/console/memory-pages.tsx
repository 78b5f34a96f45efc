/** @jsxImportSource hono/jsx */
import { AppError } from '../../shared/platform/contract/errors';
import { deleteMemoryVerb, getMemoryVerb, searchVerb } from '../memories/verbs';
import { lifecycleVerb } from '../replay/verbs';
import type { ConsoleContext } from './http';
import { messageOf, tenantOf, viewerOf } from './viewer';
import { MemoriesPage, MemoryPage } from './views/memories';

const notFoundAsNull = (err: unknown) => {
  if (err instanceof AppError && err.status === 404) return null;
  throw err;
};

export async function memoriesPage(c: ConsoleContext) {
  const q = c.req.query('q') ?? '';
  const mode = c.req.query('mode') ?? 'hybrid';
  const notice = c.req.query('forgotten') ? 'The memory is forgotten.' : undefined;
  if (!q) return c.html(<MemoriesPage viewer={viewerOf(c)} q="" mode={mode} notice={notice} />);
  try {
    const found = await searchVerb(tenantOf(c), { q, mode, limit: 20 });
    return c.html(<MemoriesPage viewer={viewerOf(c)} q={q} mode={mode} found={found} />);
  } catch (err) {
    return c.html(<MemoriesPage viewer={viewerOf(c)} q={q} mode={mode} problem={messageOf(err)} />, (err as AppError).status as 400);
  }
}

/**
 * A memory (`GET /v1/memories/{id}`) with its versions and links as `GET /v1/replay/memory/{memory_id}`
 * tells them, where the caller may call that verb.
 */
export async function memoryPage(c: ConsoleContext) {
  const ctx = tenantOf(c);
  const id = c.req.param('id');
  const memory = await getMemoryVerb(ctx, { id });
  // A memory shared with this account from another one has no history of this account's: none shown.
  const history = lifecycleVerb.allows(ctx) ? await lifecycleVerb(ctx, { memory_id: id }).catch(notFoundAsNull) : null;
  return c.html(<MemoryPage viewer={viewerOf(c)} memory={memory} history={history} />);
}

export async function forgetMemory(c: ConsoleContext) {
  await deleteMemoryVerb(tenantOf(c), { id: c.req.param('id') });
  return c.redirect('/console/memories?forgotten=1', 303);
}
