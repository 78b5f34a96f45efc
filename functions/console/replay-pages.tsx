/** @jsxImportSource hono/jsx */
import { requireFeature } from '../../shared/platform/tiers';
import { DiffQuery } from '../replay/schemas';
import { diff } from '../replay/service';
import type { ConsoleContext } from './http';
import { issuesOf, messageOf, tenantOf, viewerOf } from './viewer';
import { ReplayPage } from './views/replay';

/** Two moments and what changed between them, as `GET /v1/replay/diff` answers (Pro+, the route's gate). */
export async function replayPage(c: ConsoleContext) {
  const ctx = tenantOf(c);
  requireFeature(ctx.tier, 'replay');
  const from = c.req.query('from') ?? '';
  const to = c.req.query('to') ?? '';
  const viewer = viewerOf(c);
  if (!from && !to) return c.html(<ReplayPage viewer={viewer} from="" to="" />);
  const parsed = DiffQuery.safeParse({ from, to });
  if (!parsed.success) return c.html(<ReplayPage viewer={viewer} from={from} to={to} problem={issuesOf(parsed.error)} />, 400);
  try {
    return c.html(<ReplayPage viewer={viewer} from={from} to={to} diffed={await diff(ctx, parsed.data)} />);
  } catch (err) {
    return c.html(<ReplayPage viewer={viewer} from={from} to={to} problem={messageOf(err)} />, (err as { status: number }).status as 400);
  }
}
