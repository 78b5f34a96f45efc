import { InMemorySpanExporter, SimpleSpanProcessor, TracerProvider } from '@opentelemetry/sdk-trace';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../functions/app';
import { createEngine, type TestEngine } from './harness';

/**
 * The registries of an app's routes (operationIds for metrics and spans, scope families for
 * restricted keys) and its tracing belong to the app buildApp builds and the services it serves
 * with, not to the process (docs/architecture.md#verbs).
 */
let engine: TestEngine;
beforeAll(async () => {
  engine = await createEngine();
});
afterAll(async () => {
  await engine?.close();
});

const mint = (app: ReturnType<typeof buildApp>, key: string, scopes: string[]) =>
  app.request('/v1/keys/restricted', {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ name: 'probe', scopes }),
  });

describe('two apps in one process', () => {
  it('each has its own registry, filled from its own routes', () => {
    const one = buildApp(() => engine.node.services);
    const two = buildApp(() => engine.node.services);
    expect(one.registry).not.toBe(two.registry);
    expect(one.registry.operations).not.toBe(two.registry.operations);
    expect([...one.registry.scopeFamilies].sort()).toEqual([...two.registry.scopeFamilies].sort());
    expect(one.registry.operations.get('POST /v1/memories')).toBe('memories.store');
  });

  it("a scope family registered in one app is not a scope in the other, and one app's operations do not label the other's requests", async () => {
    const one = buildApp(() => engine.node.services);
    const two = buildApp(() => engine.node.services);
    one.registry.scopeFamilies.add('probe');
    const tenant = await engine.newTenant('pro');
    expect((await mint(one, tenant.key, ['probe:read'])).status).toBe(201);
    const refused = await mint(two, tenant.key, ['probe:read']);
    expect(refused.status).toBe(400);
    expect(await refused.text()).toContain('unknown scope probe:read');

    one.registry.operations.clear();
    expect(two.registry.operations.size).toBeGreaterThan(0);
  });
});

describe('tracing is the app’s', () => {
  it('an app whose services carry a tracer makes spans; another app in the same process makes none', async () => {
    const exporter = new InMemorySpanExporter();
    const provider = new TracerProvider({ spanProcessors: [new SimpleSpanProcessor({ exporter })] });
    const traced = buildApp(() => ({ ...engine.node.services, tracing: { tracer: provider.getTracer('engram') } }));
    const plain = buildApp(() => engine.node.services);
    expect((await plain.request('/healthz')).status).toBe(200);
    await provider.forceFlush();
    expect(exporter.getFinishedSpans()).toEqual([]);
    expect((await traced.request('/healthz')).status).toBe(200);
    await provider.forceFlush();
    expect(exporter.getFinishedSpans().map((s) => s.name)).toEqual(['system.liveness']);
    await provider.shutdown();
  });
});
