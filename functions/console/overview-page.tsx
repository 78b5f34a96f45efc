/** @jsxImportSource hono/jsx */
import { health } from '../system/service';
import { milestones, usageReport } from '../usage/service';
import type { ConsoleContext } from './http';
import { tenantOf, viewerOf } from './viewer';
import { OverviewPage } from './views/overview';

export async function overviewPage(c: ConsoleContext) {
  const ctx = tenantOf(c);
  const [usage, reached, checked] = await Promise.all([usageReport(ctx, c.get('counted')), milestones(ctx), health(ctx)]);
  return c.html(<OverviewPage viewer={viewerOf(c)} usage={usage} milestones={reached} health={checked} />);
}
