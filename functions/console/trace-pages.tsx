/** @jsxImportSource hono/jsx */
import { certificateVerb, getTraceVerb, listTracesVerb } from '../traces/verbs';
import type { ConsoleContext } from './http';
import { tenantOf, viewerOf } from './viewer';
import { TracePage, TracesPage } from './views/traces';

export async function tracesPage(c: ConsoleContext) {
  const listed = await listTracesVerb(tenantOf(c), { limit: 50 });
  return c.html(<TracesPage viewer={viewerOf(c)} listed={listed} />);
}

/** A trace and its steps; a sealed one also with its certificate, for the browser to check. */
export async function tracePage(c: ConsoleContext) {
  const ctx = tenantOf(c);
  const traceId = c.req.param('trace_id');
  const shown = await getTraceVerb(ctx, { trace_id: traceId, steps_limit: 200 });
  const cert = shown.trace.signature ? await certificateVerb(ctx, { trace_id: traceId }) : null;
  return c.html(<TracePage viewer={viewerOf(c)} shown={shown} cert={cert} />);
}
