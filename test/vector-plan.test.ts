import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { whereReadable } from '../functions/memories/queries';
import { type Database, openPostgres } from '../shared/node/database';
import { nearestInTenant, nearestMemories } from '../shared/memory/vector-search';
import { compile, rows, sqlLiteral } from '../shared/platform/data/db';
import { integration, ownPostgresDatabase } from './harness';

/**
 * migrations/0028 and random_page_cost 1.1 (shared/memory/vector-search.ts): PostgreSQL is told what
 * a cosine distance on a stored embedding costs, and that index pages are not spinning-disk reads, so it
 * reads the HNSW index for a tenant of thousands of memories (an exact scan there detoasts and
 * compares every row, far slower than the index), or of hundreds holding a large share of the
 * table, and
 * keeps the exact scan for a small tenant, where the graph walk would mostly visit other tenants'
 * rows. Plans, not timings: the same planner decides on every machine. A database of its own, so
 * no other suite's tenants move the decision; PGlite costs its index scans differently and already
 * chose the index at these sizes, so this is for Postgres.
 */
describe.skipIf(!integration.databaseUrl)('vector search plans on Postgres (needs TEST_DATABASE_URL)', () => {
  let database: Database;
  let own: Awaited<ReturnType<typeof ownPostgresDatabase>> | undefined;

  /**
   * A tenant with `n` memories of random vectors and texts as long as a typical memory's (the table's
   * width is part of what the planner weighs), written in one statement: 3,000 stores through the API
   * would take minutes.
   */
  const tenantWith = async (n: number) => {
    const tenantId = `ten_plan${crypto.randomUUID().slice(0, 8)}`;
    await database.db.execute(
      sql`INSERT INTO tenants (id, email, tier, created_at, updated_at) VALUES (${tenantId}, ${`${tenantId}@example.com`}, 'pro', now(), now())`,
    );
    await database.db.execute(sql`
      INSERT INTO memories (id, tenant_id, observation, tags, content_hash, embedding, created_at, updated_at)
      SELECT gen_random_uuid(), ${tenantId}, 'Memory ' || g || ': ' || repeat('the user said something about the weather and their plans. ', 3),
             ARRAY['conversation', 'session-' || (g % 10)], md5(${tenantId} || g), (
        SELECT ('[' || string_agg((random() - 0.5 + 0 * d + 0 * g)::text, ',') || ']')::vector FROM generate_series(1, 512) d), now(), now()
      FROM generate_series(1, ${n}) g`);
    // The live count every store keeps (nearestInTenant reads it).
    await database.db.execute(sql`INSERT INTO usage_counters (tenant_id, metric, bucket, value) VALUES (${tenantId}, 'memories_live', 'all', ${n})`);
    return tenantId;
  };

  /** The plan of a semantic search's nearest-rows query (top 10) over the tenant's own store. */
  const planOf = async (tenantId: string) => {
    const vector = `[${Array.from({ length: 512 }, (_, i) => (i % 7) / 7 - 0.4).join(',')}]`;
    const query = nearestMemories(sql`m.id`, whereReadable(tenantId, [], 'own', new Date(), { includeSuperseded: false }), vector, { limit: 10 });
    return (await rows<{ 'QUERY PLAN': string }>(database.db, sql`EXPLAIN ${query}`)).map((r) => r['QUERY PLAN']).join('\n');
  };

  let large: string;
  let small: string;
  let mid: string;
  beforeAll(async () => {
    own = await ownPostgresDatabase(integration.databaseUrl!);
    database = openPostgres(own.url, 2);
    await database.migrate();
    large = await tenantWith(3000);
    small = await tenantWith(30);
    mid = await tenantWith(600);
    await database.db.execute(sql`ANALYZE memories`);
  }, 120_000);
  afterAll(async () => {
    await database?.close();
    await own?.drop();
  });

  it('a tenant of 3,000 memories is searched through the HNSW index', async () => {
    expect(await planOf(large)).toContain('memories_embedding_idx');
  });

  it('so is a tenant of 600 memories holding a sixth of the table (at the default random_page_cost it was scanned exactly, far slower)', async () => {
    expect(await planOf(mid)).toContain('memories_embedding_idx');
  });

  it('a tenant of 30 memories beside them is scanned exactly', async () => {
    const plan = await planOf(small);
    expect(plan).not.toContain('memories_embedding_idx');
    expect(plan).toMatch(/Sort/);
  });

  /**
   * nearestInTenant as a kept plan runs it: prepared, planned once without the tenant's values
   * (force_generic_plan), then executed for `tenantId` (EXPLAIN ANALYZE tells which branches ran).
   */
  const keptPlanRun = async (tenantId: string, tags?: string[]) => {
    const vector = `[${Array.from({ length: 512 }, (_, i) => ((i * 7) % 11) / 11 - 0.45).join(',')}]`;
    const where = whereReadable(tenantId, [], 'own', new Date(), { tags, includeSuperseded: false });
    const query = compile(database.db, nearestInTenant(sql.raw('m.id, m.tags'), where, vector, { limit: 10 }, tenantId));
    const name = `kept_${crypto.randomUUID().slice(0, 8)}`;
    return database.db.transaction(async (tx) => {
      await tx.execute(sql.raw(`SET LOCAL plan_cache_mode = force_generic_plan`));
      await tx.execute(sql.raw(`PREPARE ${name} AS ${query.sql}`));
      const args = query.params.map(sqlLiteral).join(', ');
      const plan = (await rows<{ 'QUERY PLAN': string }>(tx, sql.raw(`EXPLAIN (ANALYZE, COSTS OFF) EXECUTE ${name}(${args})`)))
        .map((r) => r['QUERY PLAN'])
        .join('\n');
      const found = await rows<{ id: string; tags: string[] }>(tx, sql.raw(`EXECUTE ${name}(${args})`));
      await tx.execute(sql.raw(`DEALLOCATE ${name}`));
      return { plan, found };
    });
  };
  /** Whether the plan's HNSW scan (the walk) ran, and whether its exact scan did. */
  const ran = (plan: string) => ({
    walk: /Index Scan using memories_embedding_idx[^\n]*\(actual/.test(plan),
    exact: !/CTE Scan on exact[^\n]*\(never executed\)/.test(plan),
  });

  it('a pooled connection plans without JIT, even for a statement priced past any threshold', async () => {
    // The first reads of a big tenant on each new connection (custom plans) each compiled for
    // 47 to 82 ms, where the read takes a few (vector-search.ts, JIT_OFF).
    const [{ jit }] = await rows<{ jit: string }>(database.db, sql`SELECT current_setting('jit') AS jit`);
    expect(jit).toBe('off');
    const plan = await database.db.transaction(async (tx) => {
      await tx.execute(sql.raw('SET LOCAL jit_above_cost = 0'));
      const vector = `[${Array.from({ length: 512 }, (_, i) => (i % 5) / 5 - 0.4).join(',')}]`;
      const query = nearestInTenant(sql`m.id`, whereReadable(large, [], 'own', new Date(), { includeSuperseded: false }), vector, { limit: 10 }, large);
      return (await rows<{ 'QUERY PLAN': string }>(tx, sql`EXPLAIN (ANALYZE) ${query}`)).map((r) => r['QUERY PLAN']).join('\n');
    });
    expect(plan).not.toContain('JIT:');
  });

  it('a kept plan walks the graph for the tenant of 3,000 memories, and never starts the exact scan', async () => {
    const { plan, found } = await keptPlanRun(large);
    expect(ran(plan)).toEqual({ walk: true, exact: false });
    expect(found).toHaveLength(10);
  });

  it('the same kept plan walks for the tenant of 600 holding a sixth of the table', async () => {
    expect(ran((await keptPlanRun(mid)).plan)).toEqual({ walk: true, exact: false });
  });

  it('and scans the tenant of 30 exactly, without walking the graph', async () => {
    const { plan, found } = await keptPlanRun(small);
    expect(ran(plan)).toEqual({ walk: false, exact: true });
    expect(found).toHaveLength(10);
  });

  it('a walk that comes back short is answered by the exact scan: every row the tenant has', async () => {
    // Three of the large tenant's memories carry a tag of their own: a filter the walk's cap cannot
    // find 10 rows for, so the exact scan answers, and all three are found.
    const tagged = await rows<{ id: string }>(database.db, sql`SELECT id FROM memories WHERE tenant_id = ${large} ORDER BY id LIMIT 3`);
    await database.db.execute(sql`UPDATE memories SET tags = ARRAY['rare-one'] WHERE id = ANY(${`{${tagged.map((t) => t.id).join(',')}}`}::uuid[])`);
    const { plan, found } = await keptPlanRun(large, ['rare-one']);
    expect(ran(plan)).toEqual({ walk: true, exact: true });
    expect(found.map((f) => f.id).sort()).toEqual(tagged.map((t) => t.id).sort());
  });
});
