/**
 * How far one PostgreSQL carries engram: search latency as one tenant grows, and beside 1,000 small
 * tenants; store and batch throughput, export, disk and server memory at the largest size.
 *
 *   DATABASE_URL=postgres://.../engram_scale REDIS_URL=redis://.../5 npm run bench:scale --
 *     [--sizes 10000,100000,250000] [--tenants 1000] [--searches 200] [--maintenance-work-mem 2GB]
 *     [--no-throughput] [--no-fold]
 *
 * `--tenants 0` skips part 2 and `--no-throughput` part 3 (searches of one big tenant only).
 * `--no-fold`: the big tenants' keyword statistics are not folded after a load (as before the
 * maintenance first runs: a keyword search counts every posting of its words).
 *
 * DATABASE_URL must be a database of its own with no memories (the bench drops and rebuilds
 * memories_embedding_idx and leaves its rows behind: drop the database afterwards). The server is
 * `functions/node.ts` in a child process (hash embedder, so its RSS is its own), reached over HTTP.
 *
 * 1. One tenant at each size: rows bulk-loaded with SQL (memories and their `create` events; the
 *    postings and corpus statistics come from the triggers), with the vectors the server's hash
 *    embedder computes for the same texts; the HNSW index dropped during the load and rebuilt after
 *    it with its definition from the migrations (timed), and the maintenance's fold of the keyword
 *    statistics run (timed). Then semantic, keyword and hybrid searches
 *    over HTTP, and beside them in the same run the plain SQL a pgvector / full-text user would
 *    write for the same query (nearest 10 of the tenant; `@@` any of the words ranked by ts_rank;
 *    hybrid: both). Keyword and hybrid three times: queries of common words (a name is in about one
 *    memory in eight), of rare ones (order numbers, in one memory each), and the common words with
 *    an order number. Then the disk of the keyword tables and their indexes.
 * 2. At the largest size, `--tenants` more tenants holding as many memories again between them,
 *    the index rebuilt, and the same searches for a random small tenant and for the big one.
 * 3. Store (POST /v1/memories) and batch (100 a request) throughput into that table, the disk every
 *    table grew by per stored memory, a JSON export of the big tenant, disk per table, server RSS.
 * Rollback of 10,000 memories, audit verify and the bundle export at scale have benches of their own
 * (test/bench/changecontrol.ts, test/bench/audit-verify.ts, test/bench/scale-export.ts).
 */
import { parseArgs } from 'node:util';
import pg from 'pg';
import { f0, f1, indexDefinition, pct, rng, table, timed } from './lib';
import {
  bulkLoad,
  call,
  countLoaded,
  createTenant,
  denseVector,
  foldKeywordStatistics,
  load,
  queries,
  mixedQueries,
  rareQueries,
  startServer,
} from './scale-lib';
import { throughputAndDisk } from './scale-throughput';

const { values: args } = parseArgs({
  options: {
    sizes: { type: 'string', default: '10000,100000,250000' },
    tenants: { type: 'string', default: '1000' },
    searches: { type: 'string', default: '200' },
    'maintenance-work-mem': { type: 'string', default: '2GB' },
    'no-throughput': { type: 'boolean', default: false },
    'no-fold': { type: 'boolean', default: false },
  },
});
const SIZES = args.sizes.split(',').map(Number);
if (SIZES.some((n, i) => !(n > 0) || (i > 0 && n <= SIZES[i - 1]))) throw new Error('--sizes must be increasing positive numbers');
const TENANTS = Number(args.tenants);
const SEARCHES = Number(args.searches);
const DATABASE_URL = process.env.DATABASE_URL;
if (!DATABASE_URL) throw new Error('DATABASE_URL: a database of its own for this bench');
const INDEX = 'memories_embedding_idx';
/** Dropped during a load with the HNSW index and rebuilt after it: a GIN insert per row costs more than the row. */
const LOAD_INDEXES = ['memories_tsv_idx', 'memories_tags_idx'];
const LIMIT = 10;

const db = new pg.Client({ connectionString: DATABASE_URL });
const q = async <T = Record<string, any>>(text: string, params?: unknown[]) => (await db.query(text, params)).rows as T[];
const ms = (xs: number[]) => `${f1(pct(xs, 50))} / ${f1(pct(xs, 95))} / ${f1(pct(xs, 99))}`;
const random = rng(42);

const dropIndexes = () => q(`DROP INDEX IF EXISTS ${[INDEX, ...LOAD_INDEXES].join(', ')}`);

async function rebuildIndex() {
  await q(`SET maintenance_work_mem = '${args['maintenance-work-mem'].replace(/'/g, '')}'`);
  for (const name of LOAD_INDEXES) await q(await indexDefinition(name));
  await q('VACUUM ANALYZE memories, memory_postings, memory_events');
  const definition = await indexDefinition(INDEX);
  const [, buildMs] = await timed(() => q(definition));
  const [{ bytes }] = await q<{ bytes: string }>(`SELECT pg_relation_size('${INDEX}') AS bytes`);
  const foldS = args['no-fold'] ? 0 : await foldKeywordStatistics(DATABASE_URL as string);
  return { buildS: buildMs / 1000, indexMb: Number(bytes) / 2 ** 20, foldS };
}

/** Query classes: common words, rare ones (order numbers), and the common words with a rare one. */
type Queries = { common: string[]; rare: string[]; mixed: string[] };
const MODES = ['semantic', 'keyword', 'hybrid', 'keyword-rare', 'hybrid-rare', 'keyword-mixed', 'hybrid-mixed'] as const;
type Mode = (typeof MODES)[number];
const CLASSES = { common: '', rare: '-rare', mixed: '-mixed' } as const;
const LABELS: Record<string, string> = { '-rare': ' (rare words)', '-mixed': ' (common words and a rare one)' };
const labelOf = (mode: Mode) => mode.replace(/-(rare|mixed)$/, (suffix) => LABELS[suffix]);

const RAW_SEMANTIC = {
  name: 'raw-semantic',
  text: `SELECT id, 1 - (embedding <=> $2::halfvec) AS similarity FROM memories WHERE tenant_id = $1 AND NOT index_pending ORDER BY embedding <=> $2::halfvec LIMIT ${LIMIT}`,
};
const RAW_KEYWORD = {
  name: 'raw-keyword',
  text: `SELECT id, ts_rank(search_tsv, k) AS rank FROM memories, CAST(replace(plainto_tsquery('english', $2)::text, '&', '|') AS tsquery) k
         WHERE tenant_id = $1 AND search_tsv @@ k ORDER BY rank DESC LIMIT ${LIMIT}`,
};

/**
 * The searches of one query of a class, over HTTP and as the plain SQL a pgvector / full-text user
 * would write (on the bench's own session with the server's vector settings; its hybrid is its
 * semantic and keyword statements one after the other). Each side goes first every other query:
 * the second reads what the first brought into the cache.
 */
async function searchBothWays(kind: keyof Queries, text: string, [tenant, key]: [string, string], first: 'http' | 'sql', http: Timings, raw: Timings) {
  const suffix = CLASSES[kind];
  const viaHttp = async () => {
    for (const mode of MODES.filter((m) => m.endsWith(suffix) && (suffix || !m.includes('-')))) {
      const url = `${server.url}/v1/memories/search?${new URLSearchParams({ q: text, limit: String(LIMIT), mode: mode.replace(suffix, '') })}`;
      const [res, t] = await timed(() => call('GET', url, key));
      http[mode].push(t);
      if (mode === 'semantic' && res.memories.length < LIMIT) http.short++;
    }
  };
  const viaSql = async () => {
    const vector = await denseVector(text);
    const [, s] = await timed(() => db.query({ ...RAW_SEMANTIC, values: [tenant, vector] }));
    const [, k] = await timed(() => db.query({ ...RAW_KEYWORD, values: [tenant, text] }));
    if (!suffix) raw.semantic.push(s);
    raw[`keyword${suffix}` as Mode].push(k);
    raw[`hybrid${suffix}` as Mode].push(s + k);
  };
  if (first === 'http') await viaHttp().then(viaSql);
  else await viaSql().then(viaHttp);
}

type Timings = Record<Mode, number[]> & { short: number };
const timings = (): Timings => Object.assign(Object.fromEntries(MODES.map((m) => [m, [] as number[]])) as Record<Mode, number[]>, { short: 0 });

const queriesOf = (count: number, loaded: number, seed?: number): Queries => ({
  common: queries(count, seed),
  rare: rareQueries(count, loaded, seed),
  mixed: mixedQueries(count, loaded, seed),
});

async function measure(label: string, loaded: number, tenantOf: () => string, pair: () => [string, string]) {
  await q(`SET hnsw.ef_search = 40; SET hnsw.iterative_scan = relaxed_order; SET random_page_cost = 1.1`);
  const http = timings();
  const raw = timings();
  for (const [count, seed, into] of [
    [20, 99, timings()],
    [SEARCHES, undefined, null],
  ] as const) {
    const texts = queriesOf(count, loaded, seed);
    for (let i = 0; i < count; i++) {
      // Each query draws its tenant once, shared by the HTTP and the SQL searches.
      const tenant = pair();
      for (const kind of Object.keys(CLASSES) as (keyof Queries)[])
        await searchBothWays(kind, texts[kind][i], tenant, i % 2 ? 'sql' : 'http', into ?? http, into ?? raw);
    }
  }
  const [plan] = await q<{ 'QUERY PLAN': string }>(
    `EXPLAIN SELECT id FROM memories WHERE tenant_id = $1 AND NOT index_pending ORDER BY embedding <=> $2::halfvec LIMIT ${LIMIT}`,
    [tenantOf(), await denseVector(queries(1)[0])],
  ).then((r) => r.slice(1));
  const out = MODES.map((mode) => [
    label,
    labelOf(mode),
    ms(http[mode]),
    ms(raw[mode]),
    mode === 'semantic' ? `${http.short} answers < ${LIMIT}; raw plan: ${plan['QUERY PLAN'].replace(/^\s*->\s*/, '').split(' on ')[0]}` : '',
    load(),
  ]);
  // As it goes, so that a run stopped at its deadline still tells what it measured.
  for (const row of out) console.error(`  ${row.slice(0, 4).join(' | ')} | load ${row[5]}`);
  return out;
}

/** Part 2: `each` memories for every small tenant, then the same searches for one of them and for the big one. */
async function loadSmall(big: { key: string; tenantId: string }, small: { key: string; tenantId: string }[], each: number, total: number, have: number) {
  await dropIndexes();
  const [, loadMs] = await timed(() => bulkLoad(q, each * TENANTS, (i) => small[i % TENANTS].tenantId, random));
  await countLoaded(
    q,
    small.map((t) => t.tenantId),
    each,
  );
  const built = await rebuildIndex();
  loadOut.push([
    total.toLocaleString('en'),
    String(TENANTS + 1),
    f0((each * TENANTS) / (loadMs / 1000)),
    f1(built.buildS),
    f0(built.indexMb),
    f1(built.foldS),
    load(),
  ]);
  console.error(`  ${TENANTS} tenants of ${each}: loaded in ${f1(loadMs / 1000)} s, index built in ${f1(built.buildS)} s`);
  const r = rng(3);
  const someSmall = () => small[Math.floor(r() * small.length)];
  rowsOut.push(
    ...(await measure(
      `one of ${TENANTS} tenants of ${each.toLocaleString('en')} (table ${total.toLocaleString('en')})`,
      total,
      () => small[0].tenantId,
      () => {
        const t = someSmall();
        return [t.tenantId, t.key];
      },
    )),
  );
  rowsOut.push(
    ...(await measure(
      `the tenant of ${have.toLocaleString('en')} (table ${total.toLocaleString('en')})`,
      have,
      () => big.tenantId,
      () => [big.tenantId, big.key],
    )),
  );
}

/** The disk of the keyword tables and of each of their indexes. */
async function postingsDisk() {
  const sizes = await q<{ name: string; mb: string }>(
    `SELECT c.relname AS name, round(pg_relation_size(c.oid) / 1048576.0, 1) AS mb FROM pg_class c
     WHERE c.relname IN ('memory_postings', 'memory_lexeme_stats') OR c.oid IN (SELECT indexrelid FROM pg_index WHERE indrelid::regclass::text IN ('memory_postings', 'memory_lexeme_stats'))
     ORDER BY c.relname`,
  );
  diskOut.push(...sizes.map((r) => [r.name, r.mb, load()]));
}

/** Part 3: store and batch throughput, disk per stored memory, then the export of the big tenant. */
async function throughputAndExport(big: { key: string; tenantId: string }, small: { key: string; tenantId: string }[], total: number, each: number) {
  await throughputAndDisk({ server, q, big, small, total, each });
  // Export of the big tenant: the whole store, streamed as JSON.
  const [{ live }] = await q<{ live: string }>('SELECT count(*) AS live FROM memories WHERE tenant_id = $1 AND superseded_by IS NULL', [big.tenantId]);
  const before = await server.rss();
  const t0 = performance.now();
  const res = await fetch(`${server.url}/v1/memories/export?format=json`, { headers: { authorization: `Bearer ${big.key}` } });
  let bytes = 0;
  for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) bytes += chunk.length;
  const exportS = (performance.now() - t0) / 1000;
  const after = await server.rss();
  console.log('\n### Export of the big tenant (GET /v1/memories/export?format=json)\n');
  console.log(
    table(
      ['memories', 'seconds', 'memories/s', 'MB', 'server RSS before / after / peak MB', 'load average'],
      [
        [
          Number(live).toLocaleString('en'),
          f1(exportS),
          f0(Number(live) / exportS),
          f0(bytes / 2 ** 20),
          `${before.rss} / ${after.rss} / ${after.peak}`,
          load(),
        ],
      ],
    ),
  );
}

const started = performance.now();
await db.connect();
const server = await startServer({ DATABASE_URL, REDIS_URL: process.env.REDIS_URL });
const rowsOut: string[][] = [];
const loadOut: string[][] = [];
const diskOut: string[][] = [];
try {
  const [{ n }] = await q<{ n: string }>('SELECT count(*) AS n FROM memories');
  if (Number(n) > 0) throw new Error(`refusing to run: memories holds ${n} rows; the bench drops ${INDEX}. Use a database of its own.`);
  console.log(`engram scale bench: sizes ${SIZES.join(', ')}, ${TENANTS} small tenants, ${SEARCHES} searches per mode; load average ${load()} at start`);
  const big = await createTenant(server.url, 'big');
  let have = 0;
  for (const size of SIZES) {
    await dropIndexes();
    const [, loadMs] = await timed(() => bulkLoad(q, size - have, () => big.tenantId, random));
    await countLoaded(q, [big.tenantId], size - have);
    const built = await rebuildIndex();
    loadOut.push([size.toLocaleString('en'), '1', f0((size - have) / (loadMs / 1000)), f1(built.buildS), f0(built.indexMb), f1(built.foldS), load()]);
    console.error(`  ${size}: loaded ${size - have} in ${f1(loadMs / 1000)} s, index built in ${f1(built.buildS)} s (load ${load()})`);
    have = size;
    rowsOut.push(
      ...(await measure(
        `one tenant of ${size.toLocaleString('en')}`,
        size,
        () => big.tenantId,
        () => [big.tenantId, big.key],
      )),
    );
  }

  // Part 2: as many memories again, over TENANTS tenants.
  const small: { key: string; tenantId: string }[] = [];
  let total = have;
  let each = 0;
  if (TENANTS > 0) {
    for (let i = 0; i < TENANTS; i++) small.push(await createTenant(server.url, `small-${i}`));
    each = Math.max(1, Math.floor(have / TENANTS));
    total = have + each * TENANTS;
    await loadSmall(big, small, each, total, have);
  }
  await postingsDisk();

  console.log('\n### Bulk load and HNSW build\n');
  console.log(
    table(
      [
        'memories in the table',
        'tenants',
        'rows/s loaded (with create events)',
        'HNSW build s',
        'HNSW index MB',
        'keyword statistics folded s',
        'load average',
      ],
      loadOut,
    ),
  );
  console.log(`\n### Search, limit ${LIMIT}, sequential, p50 / p95 / p99 ms (HTTP end to end; the plain SQL on the same queries, same run)\n`);
  console.log(table(['store', 'mode', 'HTTP', 'plain SQL', 'notes', 'load average'], rowsOut));

  console.log('\n### Keyword tables and indexes at the end of the loads\n');
  console.log(table(['relation', 'MB', 'load average'], diskOut));
  if (!args['no-throughput'] && TENANTS > 0) await throughputAndExport(big, small, total, each);
  console.log(`\ntotal ${f1((performance.now() - started) / 60_000)} min; load average at the end ${load()}`);
} finally {
  for (const name of [INDEX, ...LOAD_INDEXES])
    await q(`CREATE INDEX IF NOT EXISTS ${(await indexDefinition(name)).replace(/^CREATE INDEX /, '')}`).catch((err) => console.error('index:', err));
  await server.stop();
  await db.end();
}
process.exit(0);
