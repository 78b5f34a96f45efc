/**
 * Knowledge graph at scale: one tenant with 100,000 triples between 10,000 entities (bulk-loaded
 * through SQL: subjects uniform, objects skewed so a few entities are hubs), then the API verbs
 * through the app in process (key auth, rate limit, quota, tier gate, handler; no HTTP):
 * triple insert, entity neighbourhood, paths at max_hops 2 to 4, entity prefix search, and a
 * memory store that links to entities (against the same store by a tenant without the graph).
 *
 *   npm run bench:knowledge [-- --triples 100000 --entities 10000 --runs 300]
 *
 * Embedded PGlite (durable commits, the default; PGLITE_FSYNC=0 for PGlite's own settings) in a
 * fresh directory, and Postgres too when TEST_DATABASE_URL or DATABASE_URL is set (the tenant's rows
 * are removed afterwards). Targets: insert and neighbourhood p95 ≤ 10 ms.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { sql } from 'drizzle-orm';
import { buildApp } from '../../functions/app';
import { jobHandlers } from '../../functions/registry';
import { openPglite, openPostgres } from '../../shared/node/database';
import { createNodeServices, type NodeServices } from '../../shared/node/services';
import { parseConfig } from '../../shared/platform/contract/config';
import { createLogger } from '../../shared/platform/data/log';
import { f1, pct, rng, table } from './lib';

const { values } = parseArgs({
  options: { triples: { type: 'string', default: '100000' }, entities: { type: 'string', default: '10000' }, runs: { type: 'string', default: '300' } },
});
const TRIPLES = Number(values.triples);
const ENTITIES = Number(values.entities);
const RUNS = Number(values.runs);
const ADMIN = 'bench-admin-token-0123456789';
const postgresUrl = process.env.TEST_DATABASE_URL ?? process.env.DATABASE_URL;

type Call = (method: string, path: string, key: string, body?: unknown) => Promise<{ status: number; body: any }>;

async function open(storage: 'embedded' | 'postgres', dir: string | null) {
  const config = parseConfig({
    ADMIN_TOKEN: ADMIN,
    DATA_DIR: dir ?? undefined,
    DATABASE_URL: storage === 'postgres' ? postgresUrl : undefined,
    PGLITE_FSYNC: process.env.PGLITE_FSYNC,
    EMBEDDING_PROVIDER: 'hash',
    LOG_LEVEL: 'silent',
    RATE_LIMIT_SCALE: '1000',
  });
  const log = createLogger('silent');
  const database = storage === 'postgres' ? openPostgres(postgresUrl!, 5) : await openPglite({ dataDir: dir!, durable: config.PGLITE_FSYNC });
  const node = await createNodeServices(config, { database, log, jobHandlers: jobHandlers(config, log), maintenance: {} });
  const app = buildApp(() => node.services);
  const call: Call = async (method, path, key, body) => {
    const res = await app.request(path, {
      method,
      headers: { authorization: `Bearer ${key}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    return { status: res.status, body: await res.json() };
  };
  return { node, call };
}

const nameOf = (n: number) => `topic ${String(n).padStart(5, '0')}`;

/** Entities `topic 00001`..., then triples: subject uniform, object squared-uniform (hubs at low numbers). */
async function bulkLoad(node: NodeServices, tenantId: string) {
  const db = node.services.db;
  await db.execute(sql`
    INSERT INTO knowledge_entities (id, tenant_id, name, entity_type, metadata, created_at)
    SELECT gen_random_uuid(), ${tenantId}, 'topic ' || lpad(g::text, 5, '0'), 'concept', '{}'::jsonb, now() - interval '1 day' + g * interval '1 ms'
    FROM generate_series(1, ${ENTITIES}) g`);
  // Entities by number, and each triple's two numbers, hash-joined (a join on computed names planned badly on Postgres).
  await db.execute(sql`
    WITH ents AS MATERIALIZED (SELECT id, row_number() OVER (ORDER BY name) AS n FROM knowledge_entities WHERE tenant_id = ${tenantId}),
    picks AS MATERIALIZED (
      SELECT g, 1 + (hashint4(g) & 2147483647) % ${ENTITIES} AS s, 1 + floor(power(((hashint4(g * 7 + 3) & 2147483647) % 1000000) / 1000000.0, 2) * ${ENTITIES})::int AS o
      FROM generate_series(1, ${TRIPLES}) g)
    INSERT INTO knowledge_triples (id, tenant_id, subject_id, predicate, object_id, confidence, metadata, created_at)
    SELECT gen_random_uuid(), ${tenantId}, s.id, 'rel_' || (p.g % 20), o.id, 1, '{}'::jsonb, now() - interval '1 day' + p.g * interval '1 ms'
    FROM picks p JOIN ents s ON s.n = p.s JOIN ents o ON o.n = p.o`);
  await db.execute(sql`VACUUM ANALYZE knowledge_entities`);
  await db.execute(sql`VACUUM ANALYZE knowledge_triples`);
  const [{ n, hub }] = (
    (await db.execute(sql`SELECT count(*)::int AS n, (SELECT max(c)::int FROM (SELECT count(*) AS c FROM knowledge_triples WHERE tenant_id = ${tenantId} GROUP BY object_id) x) AS hub
                          FROM knowledge_triples WHERE tenant_id = ${tenantId}`)) as unknown as { rows: { n: number; hub: number }[] }
  ).rows;
  return { triples: n, hub };
}

async function timeEach<T>(items: T[], fn: (item: T) => Promise<{ status: number; body: any }>, expect: number, check?: (body: any) => void) {
  const ms: number[] = [];
  for (const item of items) {
    const t0 = performance.now();
    const res = await fn(item);
    ms.push(performance.now() - t0);
    if (res.status !== expect) throw new Error(`expected ${expect}, got ${res.status}: ${JSON.stringify(res.body)}`);
    check?.(res.body);
  }
  return ms;
}

const row = (label: string, ms: number[], note = '') => [label, String(ms.length), f1(pct(ms, 50)), f1(pct(ms, 95)), f1(Math.max(...ms)), note];

async function run(storage: 'embedded' | 'postgres') {
  const dir = storage === 'embedded' ? await mkdtemp(join(tmpdir(), 'engram-bench-knowledge-')) : null;
  const { node, call } = await open(storage, dir);
  const tenants: string[] = [];
  try {
    const newTenant = async (tier: string) => {
      const res = await call('POST', '/admin/v1/tenants', ADMIN, { email: `bench-${crypto.randomUUID()}@example.com`, tier });
      tenants.push(res.body.tenant_id);
      return res.body as { tenant_id: string; api_key: string };
    };
    const pro = await newTenant('enterprise');
    const free = await newTenant('free');
    const t0 = performance.now();
    const loaded = await bulkLoad(node, pro.tenant_id);
    console.error(`${storage}: loaded ${loaded.triples} triples in ${((performance.now() - t0) / 1000).toFixed(1)} s (largest hub: ${loaded.hub} triples)`);
    const random = rng(42);
    const pick = () => 1 + Math.floor(random() * ENTITIES);
    const ids = new Map<number, string>();
    const idOf = async (n: number) => {
      if (!ids.has(n))
        ids.set(n, (await call('GET', `/v1/knowledge/entities?q=${encodeURIComponent(nameOf(n))}&limit=1`, pro.api_key)).body.entities[0].entity_id);
      return ids.get(n)!;
    };
    const warm = async () => {
      for (let i = 0; i < 20; i++) await call('GET', `/v1/knowledge/entities/${await idOf(pick())}`, pro.api_key);
    };
    await warm();
    const rows: string[][] = [];
    rows.push(
      row('GET /v1/usage (any keyed request: the floor)', await timeEach(Array.from({ length: RUNS }), () => call('GET', '/v1/usage', pro.api_key), 200)),
    );

    const inserts = Array.from({ length: RUNS }, (_, i) => ({
      subject: nameOf(pick()),
      predicate: 'bench',
      object: i % 2 ? nameOf(pick()) : `new entity ${i}`,
    }));
    rows.push(
      row(
        'POST /v1/knowledge/triples',
        await timeEach(inserts, (b) => call('POST', '/v1/knowledge/triples', pro.api_key, b), 201),
        'half create their object entity',
      ),
    );

    const uniform = await Promise.all(Array.from({ length: RUNS }, () => idOf(pick())));
    rows.push(
      row(
        'GET /v1/knowledge/entities/{id}',
        await timeEach(uniform, (id) => call('GET', `/v1/knowledge/entities/${id}`, pro.api_key), 200),
        'random entity, limit 50',
      ),
    );
    const hubs = await Promise.all([1, 2, 3, 4, 5].map(idOf));
    const hubMs = await timeEach(
      Array.from({ length: 50 }, (_, i) => hubs[i % hubs.length]),
      (id) => call('GET', `/v1/knowledge/entities/${id}`, pro.api_key),
      200,
    );
    rows.push(row('GET /v1/knowledge/entities/{id} (5 largest hubs)', hubMs, 'newest 50 each way + counts'));
    const prefixes = Array.from({ length: RUNS }, () => nameOf(pick()).slice(0, 9));
    rows.push(
      row(
        'GET /v1/knowledge/entities?q=<prefix>',
        await timeEach(prefixes, (p) => call('GET', `/v1/knowledge/entities?q=${encodeURIComponent(p)}`, pro.api_key), 200),
        'up to 50 with triple_count',
      ),
    );
    const allMs = await timeEach(Array.from({ length: 50 }), () => call('GET', '/v1/knowledge/triples', pro.api_key), 200);
    rows.push(row('GET /v1/knowledge/triples', allMs, 'newest 50 of all, with total'));
    const listMs = await timeEach(
      Array.from({ length: 50 }, () => nameOf(pick())),
      (s) => call('GET', `/v1/knowledge/triples?subject=${encodeURIComponent(s)}`, pro.api_key),
      200,
    );
    rows.push(row('GET /v1/knowledge/triples?subject=<name>', listMs, 'newest 50 with total'));

    for (const hops of [2, 3, 4]) {
      let found = 0;
      const pairs = Array.from({ length: Math.min(RUNS, 100) }, () => [nameOf(pick()), nameOf(pick())]);
      const ms = await timeEach(
        pairs,
        ([from, to]) => call('GET', `/v1/knowledge/paths?from=${encodeURIComponent(from)}&to=${encodeURIComponent(to)}&max_hops=${hops}`, pro.api_key),
        200,
        (b) => {
          if (b.paths.length) found++;
        },
      );
      rows.push(row(`GET /v1/knowledge/paths max_hops=${hops}`, ms, `random pairs; ${found} of ${pairs.length} connected`));
    }

    // Stores that name three entities each, alternating with the same stores by a tenant without the graph.
    const texts = Array.from(
      { length: RUNS },
      (_, i) => `Bench note ${i}: ${nameOf(pick())} was discussed with ${nameOf(pick())}, then ${nameOf(pick())}; ${'lorem ipsum dolor '.repeat(6)}`,
    );
    const linked: number[] = [];
    const unnamed: number[] = [];
    const plain: number[] = [];
    let links = 0;
    for (const text of texts) {
      linked.push(
        ...(await timeEach(
          [text],
          (o) => call('POST', '/v1/memories', pro.api_key, { observation: o, auto_link: false }),
          201,
          (b) => (links += b.entities.length),
        )),
      );
      const none = text.replaceAll('topic', 'subject');
      unnamed.push(
        ...(await timeEach(
          [none],
          (o) => call('POST', '/v1/memories', pro.api_key, { observation: o, auto_link: false }),
          201,
          (b) => b.entities.length && (links = Number.NaN),
        )),
      );
      plain.push(...(await timeEach([text], (o) => call('POST', '/v1/memories', free.api_key, { observation: o, auto_link: false }), 201)));
    }
    rows.push(row('POST /v1/memories, linking entities', linked, `${(links / texts.length).toFixed(1)} links per memory, ${ENTITIES} entities`));
    rows.push(row('POST /v1/memories, naming no entity', unnamed, 'same tenant, same texts but the names'));
    rows.push(row('POST /v1/memories, no graph (free tier)', plain, 'same texts, the three alternating'));
    // The longest observation: its candidate word runs grow with the text, not with the graph.
    const words = Array.from({ length: 2_600 }, (_, i) => (i % 40 === 0 ? nameOf(pick()) : ['the', 'quick', 'report', 'mentions', 'several', 'things'][i % 6]));
    const long = Array.from({ length: 20 }, (_, i) => `${i} ${words.join(' ')}`.slice(0, 16_000));
    rows.push(
      row(
        'POST /v1/memories, 16,000 characters',
        await timeEach(long, (o) => call('POST', '/v1/memories', pro.api_key, { observation: o, auto_link: false }), 201),
        'about 2,600 words, 20 links',
      ),
    );
    rows.push(
      row(
        '  the same, no graph (free tier)',
        await timeEach(long, (o) => call('POST', '/v1/memories', free.api_key, { observation: `${o.slice(0, -1)}x`, auto_link: false }), 201),
      ),
    );
    console.log(
      `\n### ${storage === 'embedded' ? `embedded PGlite${process.env.PGLITE_FSYNC === '0' ? ' (fsync off)' : ' (durable commits)'}` : 'Postgres'}: ${loaded.triples.toLocaleString('en')} triples, ${ENTITIES.toLocaleString('en')} entities, sequential requests in process\n`,
    );
    console.log(table(['request', 'n', 'p50 ms', 'p95 ms', 'max ms', 'notes'], rows));
  } finally {
    if (storage === 'postgres') for (const id of tenants) await node.services.db.execute(sql`DELETE FROM tenants WHERE id = ${id}`);
    await node.close();
    if (dir) await rm(dir, { recursive: true, force: true, maxRetries: 5 });
  }
}

await run('embedded');
if (postgresUrl) await run('postgres');
