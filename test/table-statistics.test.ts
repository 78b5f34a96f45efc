import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { NodeRunner } from '../shared/node/runner';
import { rows } from '../shared/platform/data/db';
import { createEngine, storageName, type TestEngine } from './harness';

/**
 * PGlite has no autovacuum: on the embedded default, maintenance analyzes the tables that changed
 * enough since their last analyze (shared/jobs/maintenance.ts), so the planner has statistics.
 */
let engine: TestEngine;
beforeAll(async () => {
  engine = await createEngine();
});
afterAll(() => engine.close());

const memoriesStats = async () =>
  (
    await rows<{ last_analyze: string | null; reltuples: number; live: number }>(
      engine.node.services.db,
      sql`SELECT s.last_analyze::text, c.reltuples::float8 AS reltuples, (SELECT count(*)::int FROM memories) AS live
          FROM pg_stat_user_tables s JOIN pg_class c ON c.oid = s.relid WHERE s.relname = 'memories'`,
    )
  )[0];

describe('table statistics', () => {
  it.runIf(storageName === 'embedded')('maintenance analyzes a table once enough of it changed, and not again until more does', async () => {
    const t = await engine.newTenant();
    const memories = Array.from({ length: 80 }, (_, i) => ({ observation: `statistics note ${i} about shelf ${i % 9}`, auto_link: false }));
    const res = await engine.request('POST', '/v1/memories/batch', { key: t.key, body: { memories } });
    expect(res.body.stored, res.text).toBe(80);

    const first = await engine.node.runner.maintain();
    expect(first.embedded_statistics).toBeGreaterThanOrEqual(1);
    const analyzed = await memoriesStats();
    expect(analyzed.last_analyze).not.toBeNull();
    expect(analyzed.reltuples).toBe(analyzed.live); // a table this small is read whole

    const second = await engine.node.runner.maintain();
    expect((await memoriesStats()).last_analyze).toBe(analyzed.last_analyze);
    expect(second.embedded_statistics).toBeLessThan(first.embedded_statistics);
  });

  it.runIf(storageName === 'embedded')('the running server analyzes between maintenance runs, as autovacuum would', async () => {
    const own = await createEngine();
    const runner = new NodeRunner(own.node.services, {}, { pollMs: 3_600_000, maintenanceMs: 3_600_000, statisticsMs: 50 });
    try {
      const t = await own.newTenant();
      runner.start();
      const memories = Array.from({ length: 100 }, (_, i) => ({ observation: `fresh statistics note ${i}`, auto_link: false }));
      expect((await own.request('POST', '/v1/memories/batch', { key: t.key, body: { memories } })).body.stored).toBe(100);
      const analyzedRows = async () =>
        (await rows<{ reltuples: number }>(own.node.services.db, sql`SELECT reltuples::float8 AS reltuples FROM pg_class WHERE relname = 'memories'`))[0]
          .reltuples;
      for (let i = 0; i < 100 && (await analyzedRows()) < 100; i++) await new Promise((r) => setTimeout(r, 50));
      expect(await analyzedRows()).toBe(100);
    } finally {
      await runner.stop();
      await own.close();
    }
  });

  it.runIf(storageName === 'postgres')('is left to autovacuum on Postgres', async () => {
    expect((await engine.node.runner.maintain()).embedded_statistics).toBe(0);
  });
});
