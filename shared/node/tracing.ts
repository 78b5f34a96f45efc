import { context, propagation, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { BatchSpanProcessor, TracerProvider } from '@opentelemetry/sdk-trace';
import type { Tracing } from '../platform/http/tracing';

/**
 * The OpenTelemetry SDK of the Node server when OTEL_EXPORTER_OTLP_ENDPOINT is set: spans batched
 * to `<endpoint>/v1/traces` over OTLP/HTTP (JSON), the W3C trace-context propagator, and an
 * AsyncLocalStorage context so spans nest across awaits. Returns the `Tracing` the server's services
 * carry (an app without it makes no span) and what flushes and stops it.
 */
export function startTracing(endpoint: string, serviceName: string, version: string): { tracing: Tracing; shutdown(): Promise<void> } {
  const provider = new TracerProvider({
    resource: resourceFromAttributes({ 'service.name': serviceName, 'service.version': version }),
    spanProcessors: [
      new BatchSpanProcessor({ exporter: new OTLPTraceExporter({ url: `${endpoint.replace(/\/$/, '')}/v1/traces` }), scheduledDelayMillis: 500 }),
    ],
  });
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  propagation.setGlobalPropagator(new W3CTraceContextPropagator());
  trace.setGlobalTracerProvider(provider);
  return {
    tracing: { tracer: provider.getTracer('engram') },
    async shutdown() {
      await provider.shutdown().catch(() => undefined);
    },
  };
}
