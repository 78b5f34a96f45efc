/** @jsxImportSource hono/jsx */
import { ctxOf } from '../../shared/platform/context';
import { health } from '../system/service';
import { milestones, usageReport } from '../usage/service';
import type { ConsoleContext } from './http';
import { OverviewPage } from './views/overview';

export async function overviewPage(c: ConsoleContext) {
  const ctx = ctxOf(c as never);
  const [usage, reached, checked] = await Promise.all([usageReport(ctx, c.get('counted')), milestones(ctx), health(ctx)]);
  const viewer = { email: ctx.auth.email, tier: ctx.auth.tier, csrfToken: c.get('session').csrfToken };
  return c.html(<OverviewPage viewer={viewer} usage={usage} milestones={reached} health={checked} />);
}
