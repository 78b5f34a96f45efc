/** @jsxImportSource hono/jsx */
import { ctxOf } from '../../shared/platform/context';
import { requireFeature } from '../../shared/platform/tiers';
import * as traces from '../traces/service';
import type { ConsoleContext } from './http';
import { TracePage, TracesPage } from './views/traces';

const tenantOf = (c: ConsoleContext) => {
  const ctx = ctxOf(c as never);
  // The tier gate of the traces routes (Pro+), by the same rule.
  requireFeature(ctx.tier, 'traces');
  return ctx;
};

const viewerOf = (c: ConsoleContext) => {
  const { auth } = ctxOf(c as never);
  return { email: auth.email, tier: auth.tier, csrfToken: c.get('session').csrfToken };
};

export async function tracesPage(c: ConsoleContext) {
  const listed = await traces.listTraces(tenantOf(c), { limit: 50, offset: 0 });
  return c.html(<TracesPage viewer={viewerOf(c)} listed={listed} />);
}

/** A trace and its steps; a sealed one also with its certificate, for the browser to check. */
export async function tracePage(c: ConsoleContext) {
  const ctx = tenantOf(c);
  const traceId = c.req.param('trace_id') ?? '';
  const shown = await traces.getTrace(ctx, { traceId, steps_offset: 0, steps_limit: 200 });
  const cert = shown.trace.signature ? await traces.certificate(ctx, { traceId }) : null;
  return c.html(<TracePage viewer={viewerOf(c)} shown={shown} cert={cert} />);
}
