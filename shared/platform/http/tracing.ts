import {
  type Attributes,
  type Context as OtelContext,
  context,
  propagation,
  type Span,
  SpanKind,
  SpanStatusCode,
  type Tracer,
  trace,
} from '@opentelemetry/api';
import type { Context } from 'hono';
import type { AppEnv } from '../contract/context';
import { operationOf } from './metrics';

/**
 * Traces (docs/operations.md#traces): a span per request named by its operationId, with database
 * and embedding spans under it, joined to the caller's W3C `traceparent` and passed on to webhook
 * deliveries. Only the OpenTelemetry API here, which does nothing until the Node server registers
 * an SDK (OTEL_EXPORTER_OTLP_ENDPOINT): no span is started and no context is entered before that.
 * No attribute ever carries stored text, a key, a tenant or an e-mail, nor a query unless the
 * operator opted in (`memorySpan`).
 *
 * Whether spans are made is the app's, not the process's: the services the app serves with carry
 * a `Tracing` when the SDK runs (`services.tracing`), and only then does a request or a delivery
 * start a root span. A child span (a query, an embedding call) is made only under a span that is
 * active, so an app without tracing starts none, whatever another app in the process does.
 */
export interface Tracing {
  /** The tracer of the SDK the Node server started (shared/node/tracing.ts). */
  readonly tracer: Tracer;
}

const headerGetter = {
  keys: (carrier: Context) => Object.keys(carrier.req.header()),
  get: (carrier: Context, key: string) => carrier.req.header(key),
};

/** Runs the rest of the request inside its server span; the span is named after the route that answered. */
export async function traceRequest(c: Context<AppEnv>, next: () => Promise<void>): Promise<void> {
  const tracing = c.get('services').tracing;
  if (!tracing) return next();
  const parent = propagation.extract(context.active(), c, headerGetter);
  const span = tracing.tracer.startSpan(`${c.req.method}`, { kind: SpanKind.SERVER, attributes: { 'http.request.method': c.req.method } }, parent);
  try {
    await context.with(trace.setSpan(parent, span), next);
  } finally {
    const operation = operationOf(c);
    const status = c.res.status;
    span.updateName(operation);
    span.setAttributes({ 'engram.operation': operation, 'http.route': c.req.routePath, 'http.response.status_code': status });
    if (status >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
    span.end();
  }
}

/**
 * A span around `work`: a child of the active span, or of `parent`; with `tracing` it may be a root
 * (a job's). Without any of them, just `work`.
 */
export async function inSpan<T>(
  name: string,
  attributes: Attributes,
  work: (span: Span | null) => Promise<T>,
  opts: { parent?: OtelContext; tracing?: Tracing } = {},
): Promise<T> {
  const base = opts.parent ?? context.active();
  const tracer = opts.tracing?.tracer ?? (trace.getSpan(base) ? trace.getTracer('engram') : null);
  if (!tracer) return work(null);
  const span = tracer.startSpan(name, { kind: SpanKind.INTERNAL, attributes }, base);
  try {
    return await context.with(trace.setSpan(base, span), () => work(span));
  } catch (err) {
    span.setStatus({ code: SpanStatusCode.ERROR });
    throw err;
  } finally {
    span.end();
  }
}

/** The `traceparent` of the current span (none outside a span), to carry into work done later (a webhook delivery). */
export function currentTraceparent(): string | undefined {
  if (!trace.getSpan(context.active())) return undefined;
  const carrier: Record<string, string> = {};
  propagation.inject(context.active(), carrier);
  return carrier.traceparent;
}

/** The context a stored `traceparent` names, to continue its trace. */
export function contextOf(traceparent: string | undefined): OtelContext | undefined {
  if (!traceparent) return undefined;
  return propagation.extract(context.active(), { traceparent });
}

/** The W3C headers of the current span, for an outgoing request. */
export function traceHeaders(): Record<string, string> {
  if (!trace.getSpan(context.active())) return {};
  const carrier: Record<string, string> = {};
  propagation.inject(context.active(), carrier);
  return carrier;
}

/** The GenAI semantic conventions' memory operations this service performs. */
export type MemoryOperation = 'search_memory' | 'create_memory' | 'update_memory' | 'delete_memory';

export interface MemorySpanFacts {
  /** `gen_ai.memory.store.id`: the context space the operation names, as its URN; none for the tenant's whole store. */
  storeId?: string | null;
  /** `gen_ai.memory.record.id`: the memory's URN, when the operation is about one. */
  recordId?: string;
  /** `gen_ai.memory.query.text`, recorded only with OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT. */
  query?: string;
}

/**
 * A memory operation's span (docs/operations.md#traces), named and described as the GenAI
 * semantic conventions' memory spans are: `search_memory` and the like, `gen_ai.operation.name`,
 * `gen_ai.memory.store.id`, `gen_ai.memory.record.id` and `gen_ai.memory.record.count`, with the
 * query text only when the operator opted in. A child of the request's span (or of none: no span).
 * `after` adds what only the result knows (the new record's id, how many were found).
 */
export function memorySpan<T>(
  config: { OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT: boolean },
  operation: MemoryOperation,
  facts: MemorySpanFacts,
  work: () => Promise<T>,
  after?: (result: T) => { recordId?: string; count?: number },
): Promise<T> {
  const attributes: Attributes = { 'gen_ai.operation.name': operation };
  if (facts.storeId) attributes['gen_ai.memory.store.id'] = facts.storeId;
  if (facts.recordId) attributes['gen_ai.memory.record.id'] = facts.recordId;
  if (facts.query !== undefined && config.OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT) attributes['gen_ai.memory.query.text'] = facts.query;
  return inSpan(operation, attributes, async (span) => {
    try {
      const result = await work();
      const learnt = span && after ? after(result) : {};
      if (learnt.recordId) span?.setAttribute('gen_ai.memory.record.id', learnt.recordId);
      if (learnt.count !== undefined) span?.setAttribute('gen_ai.memory.record.count', learnt.count);
      return result;
    } catch (err) {
      // The error's code from the closed table (NOT_FOUND, VALIDATION_ERROR), else its class.
      const code = typeof err === 'object' && err !== null && 'code' in err && typeof err.code === 'string' ? err.code : '_OTHER';
      span?.setAttribute('error.type', code);
      throw err;
    }
  });
}
