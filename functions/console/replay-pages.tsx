/** @jsxImportSource hono/jsx */
import { diffVerb } from '../replay/verbs';
import type { ConsoleContext } from './http';
import { messageOf, tenantOf, viewerOf } from './viewer';
import { ReplayPage } from './views/replay';

/** Two moments and what changed between them, as `GET /v1/replay/diff` answers; a tier without it is refused the page. */
export async function replayPage(c: ConsoleContext) {
  const ctx = tenantOf(c);
  diffVerb.admit(ctx);
  const from = c.req.query('from') ?? '';
  const to = c.req.query('to') ?? '';
  const viewer = viewerOf(c);
  if (!from && !to) return c.html(<ReplayPage viewer={viewer} from="" to="" />);
  try {
    return c.html(<ReplayPage viewer={viewer} from={from} to={to} diffed={await diffVerb(ctx, { from, to })} />);
  } catch (err) {
    return c.html(<ReplayPage viewer={viewer} from={from} to={to} problem={messageOf(err)} />, (err as { status: number }).status as 400);
  }
}
