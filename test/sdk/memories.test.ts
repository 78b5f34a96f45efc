import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EngramError } from '../../sdk/src/index';
import { createEngine, type Tenant, type TestEngine } from '../harness';
import { sdkFor } from './helpers';

/** The SDK against the real app in process: memories, spaces, shares, graph, pagination, errors. */
let engine: TestEngine;
let tenant: Tenant;
beforeAll(async () => {
  engine = await createEngine();
  tenant = await engine.newTenant('pro');
});
afterAll(async () => engine?.close());

describe('engram-sdk memories', () => {
  it('stores, searches, gets, updates, exports and deletes', async () => {
    const engram = sdkFor(engine, tenant.key);
    const stored = await engram.memories.store({ observation: 'The SDK tenant prefers dark roast coffee', tags: ['coffee'] });
    expect(stored.id).toMatch(/./);
    const found = await engram.memories.search({ q: 'dark roast coffee', limit: 5 });
    expect(found.memories.map((m) => m.uuid)).toContain(stored.id);
    expect((await engram.memories.get(stored.id)).observation).toContain('dark roast');
    const updated = await engram.memories.update(stored.id, { tags: ['coffee', 'morning'] });
    expect(updated.memory.tags).toContain('morning');
    const exported = await engram.memories.export({ format: 'json' });
    expect(exported).toContain(stored.id);
    expect(await engram.memories.contextNow()).toBeTruthy();
    const batch = await engram.memories.storeMany([{ observation: 'batch one about tea' }, { observation: 'batch two about tea' }]);
    expect(batch.results).toHaveLength(2);
    await engram.memories.delete(stored.id);
    const gone = await engram.memories.get(stored.id).catch((e: unknown) => e);
    expect(gone).toBeInstanceOf(EngramError);
    expect(gone).toMatchObject({ status: 404, code: 'NOT_FOUND' });
    expect((gone as EngramError).requestId).toMatch(/./);
  });

  it('iterates a list to its end across pages, and gives one page on request', async () => {
    const engram = sdkFor(engine, (await engine.newTenant('free')).key);
    const ids = new Set<string>();
    for (let i = 0; i < 7; i++) ids.add((await engram.memories.store({ observation: `paged memory number ${i} ${'x'.repeat(i)}` })).id);
    const seen: string[] = [];
    for await (const m of engram.memories.list({ limit: 3 })) seen.push(m.uuid);
    expect(seen).toHaveLength(7);
    expect(new Set(seen)).toEqual(ids);
    const pages = [];
    for await (const page of engram.memories.list({ limit: 3 }).pages()) pages.push(page.memories.length);
    expect(pages).toEqual([3, 3, 1]);
    const one = await engram.memories.list({ limit: 2, offset: 2 }).page();
    expect(one.memories).toHaveLength(2);
    expect(one.offset).toBe(2);
  });

  it('maps a validation error to EngramError with its details', async () => {
    const engram = sdkFor(engine, tenant.key);
    const err = (await engram.memories.store({ observation: '' }).catch((e: unknown) => e)) as EngramError;
    expect(err).toBeInstanceOf(EngramError);
    expect(err).toMatchObject({ status: 400, code: 'VALIDATION_ERROR' });
    expect(err.details).toBeTruthy();
    const bad = sdkFor(engine, 'sk_not_a_real_key');
    await expect(bad.memories.search({ q: 'x' })).rejects.toMatchObject({ status: 401, code: 'UNAUTHORIZED' });
  });
});
