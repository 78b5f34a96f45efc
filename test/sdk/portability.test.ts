import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createEngine, type TestEngine } from '../harness';
import { sdkFor } from './helpers';

/** engram.portability: the bundle as a stream, imported as a file into another account, once. */
let engine: TestEngine;
beforeAll(async () => {
  engine = await createEngine();
});
afterAll(() => engine.close());

describe('engram.portability', () => {
  it('exports a bundle and imports it into another account; a second import stores nothing', async () => {
    const source = sdkFor(engine, (await engine.newTenant('pro')).key);
    const target = sdkFor(engine, (await engine.newTenant('pro')).key);
    await source.memories.store({ observation: 'SDK bundle fact.', tags: ['sdk'], auto_link: false });
    const file = await new Response(await source.portability.exportBundle()).text();
    expect(file.split('\n')[0]).toContain('"engram-bundle"');
    const first = await target.portability.import(file, { format: 'bundle' });
    expect(first.stored.memory).toBe(1);
    const again = await target.portability.import(file, { format: 'bundle', dry_run: 'true' });
    expect(again).toMatchObject({ dry_run: true, already_imported: 1 });
  });
});
