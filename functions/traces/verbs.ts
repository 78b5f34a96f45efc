import { defineVerb } from '../../shared/platform/http/verb';
import * as s from './schemas';
import { certificate, getTrace, listTraces } from './service';

/** The traces verbs the routes and the console share (docs/architecture.md#verbs). */
const feature = 'traces' as const;

export const listTracesVerb = defineVerb({
  name: 'traces.list',
  method: 'get',
  feature,
  confinable: true,
  input: { query: s.ListQuery },
  run: (ctx, input) => listTraces(ctx, input),
});

export const getTraceVerb = defineVerb({
  name: 'traces.get',
  method: 'get',
  feature,
  confinable: true,
  input: { params: s.TraceParams, query: s.GetQuery },
  run: (ctx, { trace_id, ...page }) => getTrace(ctx, { traceId: trace_id, ...page }),
});

export const certificateVerb = defineVerb({
  name: 'traces.certificate',
  method: 'get',
  feature,
  confinable: true,
  input: { params: s.TraceParams, query: s.CertificateQuery },
  run: (ctx, { trace_id, ...query }) => certificate(ctx, { traceId: trace_id, ...query }),
});
