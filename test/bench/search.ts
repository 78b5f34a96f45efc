/**
 * Memory store and search benchmark through the real HTTP API of the Node server (in-process).
 *
 *   npx tsx test/bench/search.ts [--sizes 1000,10000,100000] [--postgres [--keep]] [--force] [--parts store,search]
 *                                [--maintenance-work-mem 1GB] [--search-embedder use|hash]
 *
 * 1. Store throughput: N=500 POST /v1/memories, one stream and 16 concurrent streams (one tenant,
 *    then 16 tenants), on the default embedder (`use`, the offline Universal Sentence Encoder) and
 *    on `hash`; then read-your-writes: 50 stores, each followed at once by a search for its exact
 *    text, which must rank it first.
 * 2. Search latency at each size, one tenant: rows bulk-loaded with SQL (random unit 512-d vectors,
 *    short pseudo-word texts) with the HNSW index dropped, then the index rebuilt with its exact
 *    definition from the migrations (timed). Per size: 200 semantic, 100 keyword and 100 hybrid
 *    searches over HTTP one at a time; the embedder alone on the same queries; the semantic search's
 *    SQL alone (as semanticCandidates runs it) with the queries' vectors; the search's other SQL
 *    (grants read, recall bookkeeping; the one statement of a plain semantic search, which does
 *    both with its candidates) and the authenticated floor (GET /v1/usage); one EXPLAIN
 *    ANALYZE, and how many of the searches' recall updates were HOT.
 *
 * `--postgres` uses DATABASE_URL (and REDIS_URL if set); it must point at a database with no
 * memories, because the bench drops and rebuilds memories_embedding_idx. Without it, PGlite in a
 * temp dir. On PGlite a size whose load + index build is estimated (from the previous size) at more
 * than 10 minutes is skipped unless --force. The index is built with the server's
 * maintenance_work_mem unless --maintenance-work-mem sets it for the bench's own session; once the
 * graph outgrows it pgvector builds on disk, several times slower.
 *
 * Prints markdown tables; exits 1 only if it fails or a read-your-writes search misses.
 */
import { createHash } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { availableParallelism, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { serve, type ServerType } from '@hono/node-server';
import type { PGlite } from '@electric-sql/pglite';
import { sql } from 'drizzle-orm';
import pg from 'pg';
import { v7 as uuidv7 } from 'uuid';
import { buildApp } from '../../functions/app';
import * as q from '../../functions/memories/queries';
import { jobHandlers, maintenanceTasks } from '../../functions/registry';
import { parseConfig } from '../../shared/platform/contract/config';
import { rows } from '../../shared/platform/data/db';
import { toStoredVector } from '../../shared/memory/embeddings';
import { createLogger } from '../../shared/platform/data/log';
import { activeGrants } from '../../shared/memory/access';
import { openPglite } from '../../shared/node/database';
import { createNodeServices, type NodeServices } from '../../shared/node/services';
import { periodOf } from '../../shared/platform/contract/time';
import { nearestMemories, vectorSearchSettings } from '../../shared/memory/vector-search';
import { f1, f2, indexDefinition, pct, pool, rng, SMOKE, table, timed } from './lib';

const { values: args } = parseArgs({
  options: {
    sizes: { type: 'string', default: '1000,10000,100000' },
    postgres: { type: 'boolean', default: false },
    force: { type: 'boolean', default: false },
    // Keep part 2's tenant and its memories (Postgres): prints its key, for A/B runs against one store.
    keep: { type: 'boolean', default: false },
    parts: { type: 'string', default: 'store,search' },
    'maintenance-work-mem': { type: 'string' }, // for the bench's index builds only; default: the server's
    // Part 2's query embedder: `hash` takes the model out, so the HTTP rows are the search beyond the embedding.
    'search-embedder': { type: 'string', default: 'use' },
  },
});
const PARTS = new Set(args.parts.split(','));
const SIZES = args.sizes.split(',').map(Number);
if (SIZES.some((n) => !(n > 0)) || SIZES.some((n, i) => i > 0 && n <= SIZES[i - 1])) throw new Error('--sizes must be increasing positive numbers');
if (args.postgres && !process.env.DATABASE_URL) throw new Error('--postgres needs DATABASE_URL');

const STORES = SMOKE ? 20 : 500;
const STREAMS = 16;
const RYW = SMOKE ? 5 : 50;
const SEMANTIC_SEARCHES = SMOKE ? 10 : 200;
const OTHER_SEARCHES = SMOKE ? 5 : 100; // keyword and hybrid each
const LIMIT = 10;
const BATCH = 500; // rows per INSERT in the bulk load
const PGLITE_BUDGET_S = 600;
const ADMIN_TOKEN = `bench-admin-${crypto.randomUUID()}`;
const INDEX = 'memories_embedding_idx';

// ---------- small helpers ----------

const rand = rng(42);
const pick = <T>(xs: T[]) => xs[Math.floor(rand() * xs.length)];

/** 2,000 pseudo-words of 2-3 syllables; texts draw words uniformly (each word in ~0.5% of texts). */
const VOCAB = (() => {
  const syllables = [...'bdfgklmnprstvz'].flatMap((c) => [...'aeiou'].map((v) => c + v));
  const words = new Set<string>();
  while (words.size < 2000) words.add(Array.from({ length: 2 + Math.floor(rand() * 2) }, () => pick(syllables)).join(''));
  return [...words];
})();
const sentence = (min: number, max: number) => Array.from({ length: min + Math.floor(rand() * (max - min + 1)) }, () => pick(VOCAB)).join(' ');

/** A random unit vector, uniform on the sphere (Gaussian components, Box-Muller). */
function randomUnitVector(): string {
  const v = new Array<number>(512);
  for (let i = 0; i < 512; i += 2) {
    const r = Math.sqrt(-2 * Math.log(1 - rand()));
    const a = 2 * Math.PI * rand();
    v[i] = r * Math.cos(a);
    v[i + 1] = r * Math.sin(a);
  }
  const norm = Math.hypot(...v);
  return `[${v.map((x) => (x / norm).toFixed(6)).join(',')}]`;
}

const mb = (bytes: number) => (bytes / 2 ** 20).toFixed(0);
const rssMb = () => Math.round(process.memoryUsage().rss / 2 ** 20);
const peakRssMb = () => Math.round(process.resourceUsage().maxRSS / 1024);

// ---------- the server ----------

/** The connection the bench loads data and builds the index on; it collects server notices. */
interface Bulk {
  query<T = Record<string, unknown>>(text: string, params?: unknown[]): Promise<T[]>;
  notices: string[];
  close(): Promise<void>;
}

interface Engram {
  node: NodeServices;
  url: string;
  bulk: Bulk;
  close(): Promise<void>;
}

const dataDir = args.postgres ? null : await mkdtemp(join(tmpdir(), 'engram-bench-search-'));

/** Wired as functions/node.ts does (job handlers, maintenance, runner), on 127.0.0.1:<free port>. */
async function startEngram(provider: 'use' | 'hash'): Promise<Engram> {
  const config = parseConfig({
    PORT: '0',
    DATA_DIR: dataDir ?? undefined,
    DATABASE_URL: args.postgres ? process.env.DATABASE_URL : undefined,
    REDIS_URL: args.postgres ? process.env.REDIS_URL : undefined,
    ADMIN_TOKEN,
    EMBEDDING_PROVIDER: provider,
    LOG_LEVEL: 'silent',
    RATE_LIMIT_SCALE: '1000',
  });
  const log = createLogger('silent');
  // On PGlite the bench needs the client itself (one process owns the database); on Postgres a
  // connection of its own beside the server's pool.
  const pglite = dataDir ? await openPglite({ dataDir }) : null;
  const node = await createNodeServices(config, {
    database: pglite ?? undefined,
    log,
    jobHandlers: jobHandlers(config, log),
    maintenance: maintenanceTasks,
  });
  node.runner.start();
  const app = buildApp(() => node.services);
  const { server, url } = await new Promise<{ server: ServerType; url: string }>((resolve, reject) => {
    const s = serve({ fetch: app.fetch, port: 0, hostname: '127.0.0.1' }, (info) => resolve({ server: s, url: `http://127.0.0.1:${info.port}` }));
    s.once('error', reject);
  });
  const bulk = pglite ? pgliteBulk(pglite.client) : await postgresBulk(process.env.DATABASE_URL!);
  return {
    node,
    url,
    bulk,
    async close() {
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        (server as { closeAllConnections?: () => void }).closeAllConnections?.();
      });
      await bulk.close();
      await node.close();
    },
  };
}

function pgliteBulk(client: PGlite): Bulk {
  const notices: string[] = [];
  return {
    notices,
    query: async (text, params) => (await client.query<any>(text, params, { onNotice: (n) => notices.push(n.message ?? String(n)) })).rows,
    close: async () => {}, // the server's database; node.close() closes it
  };
}

async function postgresBulk(url: string): Promise<Bulk> {
  const client = new pg.Client({ connectionString: url });
  const notices: string[] = [];
  client.on('notice', (n) => notices.push(n.message ?? String(n)));
  await client.connect();
  return { notices, query: async (text, params) => (await client.query(text, params)).rows, close: () => client.end() };
}

/**
 * A kept-alive socket can be closed by the server's 5 s idle timeout just as the client reuses it;
 * on PGlite this is likely after a load or index build, which blocks the event loop (and both
 * timers) for seconds. Such a request never reached the server, so it is sent once more, and counted.
 */
let connectionResets = 0;
async function call(method: string, url: string, token: string, body?: unknown) {
  const init = {
    method,
    headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  };
  const res = await fetch(url, init).catch((err: { cause?: { code?: string } }) => {
    if (!['ECONNRESET', 'UND_ERR_SOCKET'].includes(err.cause?.code ?? '')) throw err;
    connectionResets++;
    return fetch(url, init);
  });
  const text = await res.text();
  const json = text.startsWith('{') ? JSON.parse(text) : text;
  if (!res.ok) throw new Error(`${method} ${url}: ${res.status} ${text.slice(0, 300)}`);
  return json as any;
}

async function createTenant(e: Engram, label: string) {
  const t = await call('POST', `${e.url}/admin/v1/tenants`, ADMIN_TOKEN, { email: `bench-${label}-${crypto.randomUUID()}@example.com`, tier: 'enterprise' });
  return { key: t.api_key as string, tenantId: t.tenant_id as string };
}

const searchUrl = (e: Engram, text: string, mode = 'semantic', limit = LIMIT) =>
  `${e.url}/v1/memories/search?${new URLSearchParams({ q: text, limit: String(limit), mode })}`;

// ---------- part 1: store throughput and read-your-writes ----------

let observationSeq = 0;
const observation = () => `note ${++observationSeq}: ${sentence(6, 12)}`;

async function storeBench(provider: 'use' | 'hash', tenantsToDrop: string[]) {
  const e = await startEngram(provider);
  try {
    const { key, tenantId } = await createTenant(e, provider);
    tenantsToDrop.push(tenantId);
    const storeAs = (k: string, text: string) => call('POST', `${e.url}/v1/memories`, k, { observation: text });
    const store = (text: string) => storeAs(key, text);
    for (let i = 0; i < 5; i++) await store(observation()); // model load, JIT, caches

    // The third run spreads the 16 streams over 16 tenants: it tells per-tenant serialization
    // (row locks held to commit) from a limit of the whole server.
    const others = [];
    for (let i = 0; i < STREAMS; i++) others.push(await createTenant(e, `${provider}-${i}`));
    tenantsToDrop.push(...others.map((t) => t.tenantId));
    const out: string[][] = [];
    for (const [streams, keys] of [
      [1, [key]],
      [STREAMS, [key]],
      [STREAMS, others.map((t) => t.key)],
    ] as const) {
      const texts = Array.from({ length: STORES }, observation);
      const latencies: number[] = [];
      let links = 0;
      let n = 0;
      const [, ms] = await timed(() =>
        pool(texts, streams, async (text) => {
          const [res, t] = await timed(() => storeAs(keys[n++ % keys.length], text));
          latencies.push(t);
          links += res.auto_links.length;
        }),
      );
      out.push([
        provider,
        String(streams),
        String(keys.length),
        String(STORES),
        f1(ms / 1000),
        (STORES / (ms / 1000)).toFixed(1),
        f1(pct(latencies, 50)),
        f1(pct(latencies, 95)),
        f1(pct(latencies, 99)),
        f2(links / STORES),
      ]);
    }

    let first = 0;
    const storeMs: number[] = [];
    const searchMs: number[] = [];
    const misses: string[] = [];
    for (let i = 0; i < RYW; i++) {
      const text = observation();
      const [stored, ts] = await timed(() => store(text));
      const [found, tq] = await timed(() => call('GET', searchUrl(e, text, 'semantic', 1), key));
      storeMs.push(ts);
      searchMs.push(tq);
      if (found.memories[0]?.uuid === stored.uuid) first++;
      else misses.push(`#${i}: got ${found.memories[0]?.uuid ?? 'nothing'} (similarity ${found.memories[0]?.similarity}) for ${stored.uuid}`);
    }
    const ryw = [provider, String(RYW), `${first}/${RYW}`, f1(pct(storeMs, 50)), f1(pct(searchMs, 50)), f1(pct(searchMs, 99))];
    return { out, ryw, misses };
  } finally {
    await e.close();
  }
}

// ---------- part 2: search latency at each size ----------

async function bulkLoad(bulk: Bulk, tenantId: string, count: number) {
  const now = Date.now();
  for (let done = 0; done < count; done += BATCH) {
    const n = Math.min(BATCH, count - done);
    const params: unknown[] = [tenantId];
    const values: string[] = [];
    for (let i = 0; i < n; i++) {
      const text = sentence(6, 14);
      const at = new Date(now - Math.floor(rand() * 30 * 86_400_000)).toISOString();
      const k = params.length;
      params.push(uuidv7(), text, createHash('sha256').update(text).digest('hex'), randomUnitVector(), at);
      values.push(`($${k + 1}::uuid, $1, $${k + 2}, $${k + 3}, $${k + 4}::vector, $${k + 5}::timestamptz, $${k + 5}::timestamptz)`);
    }
    await bulk.query(`INSERT INTO memories (id, tenant_id, observation, content_hash, embedding, created_at, updated_at) VALUES ${values.join(', ')}`, params);
  }
  // The counters the store path keeps: this month's `memories` quota and the live count.
  await bulk.query(
    `INSERT INTO usage_counters (tenant_id, metric, bucket, value) VALUES ($1, 'memories', $2, $3), ($1, 'memories_live', 'all', $3)
     ON CONFLICT (tenant_id, metric, bucket) DO UPDATE SET value = usage_counters.value + EXCLUDED.value`,
    [tenantId, periodOf(new Date()), count],
  );
}

/**
 * The statements semanticCandidates (functions/memories/search.ts) runs for a default search
 * (scope all, no grants, no tags, include_superseded=false, limit 10 -> n 40), from the same
 * building blocks. Times the whole transaction (as the product runs it) and the SELECT alone.
 */
async function semanticSql(node: NodeServices, tenantId: string, vector: string, explain: false | 'analyze' | 'index costs' = false) {
  const now = node.services.clock.now();
  const where = q.whereReadable(tenantId, [], 'all', now, { includeSuperseded: false });
  const n = Math.min(Math.max(LIMIT * 4, 40), 400);
  let selectMs = 0;
  let result: Record<string, unknown>[] = [];
  const [, txMs] = await timed(() =>
    node.services.db.transaction(async (tx) => {
      await vectorSearchSettings(tx, n);
      if (explain === 'index costs') {
        await tx.execute(sql`SET LOCAL enable_seqscan = off`);
        await tx.execute(sql`SET LOCAL enable_bitmapscan = off`);
      }
      const select = nearestMemories(q.COLUMNS, where, vector, { limit: n });
      const t0 = performance.now();
      result = await rows(tx, explain === 'analyze' ? sql`EXPLAIN (ANALYZE, BUFFERS) ${select}` : explain ? sql`EXPLAIN ${select}` : select);
      selectMs = performance.now() - t0;
    }),
  );
  return { txMs, selectMs, result };
}

/**
 * The rest of a search's database work (functions/memories/search.ts): the grants read and the
 * recall bookkeeping of the general path, and the one statement of a plain semantic search that
 * does both with its candidates (limit 10).
 */
async function grantsAndBookkeeping(node: NodeServices, tenantId: string, ids: string[], text: string, vector: string) {
  const now = node.services.clock.now();
  const who = { actor: 'bench', requestId: 'bench', now };
  const detail = { query: text.slice(0, 200), mode: 'semantic' };
  const [, grantsMs] = await timed(() => activeGrants(node.services.db, { tenantId, listedSpaces: false }));
  const own = q.whereReadable(tenantId, [], 'all', now, { includeSuperseded: false });
  const [, bookkeepingMs] = await timed(() => q.recallAndFetch(node.services.db, tenantId, ids, { scope: own, ids: [], vector }, who, detail));
  const [, plainMs] = await timed(() =>
    q.plainSemanticSearch(
      node.services.db,
      node.services.storage,
      tenantId,
      own,
      vector,
      { limit: LIMIT, minScore: 0, checkGrants: { tenantId, listedSpaces: false }, wholeStore: true },
      who,
      detail,
    ),
  );
  return { grantsMs, bookkeepingMs, plainMs };
}

interface SizeResult {
  size: number;
  load: string[];
  latency: string[][];
  target: string[];
  plan: string[];
}

async function searchBench(
  e: Engram,
  tenantId: string,
  key: string,
  size: number,
  indexSql: string,
  sizeSeconds: { loadRate?: number; buildS?: number; size?: number; indexBytes?: number },
): Promise<SizeResult | null> {
  const [{ n: have }] = await e.bulk.query<{ n: string }>('SELECT count(*) AS n FROM memories WHERE tenant_id = $1', [tenantId]);
  const toLoad = size - Number(have);

  if (!args.postgres && sizeSeconds.loadRate && sizeSeconds.buildS !== undefined && sizeSeconds.size && sizeSeconds.indexBytes) {
    const ratio = size / sizeSeconds.size;
    // n log n in memory; once the graph outgrows maintenance_work_mem, pgvector inserts on disk,
    // several times slower again: the estimate multiplies by a factor observed on Postgres 15.
    const [{ bytes }] = await e.bulk.query<{ bytes: string }>(`SELECT setting::bigint * 1024 AS bytes FROM pg_settings WHERE name = 'maintenance_work_mem'`);
    const spills = sizeSeconds.indexBytes * ratio > Number(bytes);
    const estimate = toLoad / sizeSeconds.loadRate + sizeSeconds.buildS * ratio * 1.3 * (spills ? 8 : 1);
    if (estimate > PGLITE_BUDGET_S && !args.force) {
      console.error(
        `  size ${size}: skipped on PGlite, load + index build estimated at ${f1(estimate / 60)} min (> ${PGLITE_BUDGET_S / 60} min${spills ? ', the graph would outgrow maintenance_work_mem' : ''}); --force runs it`,
      );
      return null;
    }
    console.error(`  size ${size}: load + build estimated at ${f1(estimate / 60)} min`);
  }

  await e.bulk.query(`DROP INDEX IF EXISTS ${INDEX}`);
  const [, loadMs] = await timed(() => bulkLoad(e.bulk, tenantId, toLoad));
  // What autovacuum does after a bulk insert (insert-triggered since Postgres 13): statistics, and
  // the visibility map that lets keyword search read memory_postings index-only.
  await e.bulk.query('VACUUM ANALYZE memories, memory_postings');
  console.error(`  size ${size}: loaded ${toLoad} rows in ${f1(loadMs / 1000)} s`);
  if (args['maintenance-work-mem']) await e.bulk.query(`SET maintenance_work_mem = '${args['maintenance-work-mem'].replace(/'/g, '')}'`);
  e.bulk.notices.length = 0;
  const [, buildMs] = await timed(() => e.bulk.query(indexSql));
  const buildNotices = [...e.bulk.notices];
  const [mwm] = await e.bulk.query<{ maintenance_work_mem: string }>('SHOW maintenance_work_mem');
  // 512 floats (2 KB) exceed the TOAST threshold: unless the column is STORAGE PLAIN the vectors live in the TOAST table.
  const [sizes] = await e.bulk.query<{ idx: string; heap: string; toast: string }>(
    `SELECT pg_relation_size('${INDEX}') AS idx, pg_relation_size(c.oid) AS heap, pg_total_relation_size(c.reltoastrelid) AS toast FROM pg_class c WHERE c.oid = 'memories'::regclass`,
  );
  console.error(`  size ${size}: HNSW index built in ${f1(buildMs / 1000)} s${buildNotices.length ? ` (${buildNotices.join('; ')})` : ''}`);
  sizeSeconds.loadRate = toLoad / (loadMs / 1000);
  sizeSeconds.buildS = buildMs / 1000;
  sizeSeconds.size = size;
  sizeSeconds.indexBytes = Number(sizes.idx);

  // The same queries at every size: 3-5 vocabulary words.
  const qr = rng(7);
  const queries = Array.from({ length: SEMANTIC_SEARCHES }, () =>
    Array.from({ length: 3 + Math.floor(qr() * 3) }, () => VOCAB[Math.floor(qr() * VOCAB.length)]).join(' '),
  );

  // Searches update recall_count on the rows they return; a non-HOT update re-inserts the row into
  // every index, the HNSW graph included. The counters arrive up to ~1 s late from other sessions.
  const updates = async () => {
    await new Promise((r) => setTimeout(r, 1500));
    const [u] = await e.bulk.query<{ upd: string; hot: string }>(
      `SELECT n_tup_upd AS upd, n_tup_hot_upd AS hot FROM pg_stat_user_tables WHERE relname = 'memories'`,
    );
    return { upd: Number(u?.upd ?? 0), hot: Number(u?.hot ?? 0) };
  };
  const updatesBefore = await updates();
  for (const mode of ['semantic', 'keyword', 'hybrid']) for (let i = 0; i < 10; i++) await call('GET', searchUrl(e, sentence(3, 5), mode), key); // warm-up
  const http: Record<string, number[]> = { semantic: [], keyword: [], hybrid: [] };
  let emptyAnswers = 0;
  for (const [mode, count] of [
    ['semantic', SEMANTIC_SEARCHES],
    ['keyword', OTHER_SEARCHES],
    ['hybrid', OTHER_SEARCHES],
  ] as const) {
    for (const text of queries.slice(0, count)) {
      const [res, ms] = await timed(() => call('GET', searchUrl(e, text, mode), key));
      http[mode].push(ms);
      if (mode === 'semantic' && res.memories.length < LIMIT) emptyAnswers++;
    }
  }

  const embedMs: number[] = [];
  const vectors: string[] = [];
  for (const text of queries) {
    const [[v], ms] = await timed(() => e.node.services.embedder.embed([text]));
    embedMs.push(ms);
    vectors.push(q.vectorLiteral(toStoredVector(v)));
  }

  for (const v of vectors.slice(0, 10)) await semanticSql(e.node, tenantId, v); // warm-up
  const txMs: number[] = [];
  const selectMs: number[] = [];
  const grantsMs: number[] = [];
  const bookkeepingMs: number[] = [];
  const plainMs: number[] = [];
  let fewest = Infinity;
  for (const [i, v] of vectors.entries()) {
    const r = await semanticSql(e.node, tenantId, v);
    txMs.push(r.txMs);
    selectMs.push(r.selectMs);
    fewest = Math.min(fewest, r.result.length);
    const rest = await grantsAndBookkeeping(
      e.node,
      tenantId,
      r.result.slice(0, LIMIT).map((row) => String(row.id)),
      queries[i],
      v,
    );
    grantsMs.push(rest.grantsMs);
    bookkeepingMs.push(rest.bookkeepingMs);
    plainMs.push(rest.plainMs);
  }
  // Keyword candidates alone (as keywordCandidates runs for a default search, n 40): BM25 over the
  // tenant's postings and running totals (a whole-store search) beside statistics counted over the
  // searched rows (what a filtered search does, and what every search did before the postings).
  const kwWhere = q.whereReadable(tenantId, [], 'all', e.node.services.clock.now(), { includeSuperseded: false });
  const kwTotals: number[] = [];
  const kwCounted: number[] = [];
  const kwNeighbours: number[] = [];
  for (const text of queries.slice(0, OTHER_SEARCHES)) {
    const [found, ms] = await timed(() => q.keywordCandidates(e.node.services.db, kwWhere, text, 40, { kind: 'tenant', tenantId }));
    kwTotals.push(ms);
    kwCounted.push((await timed(() => q.keywordCandidates(e.node.services.db, kwWhere, text, 40, { kind: 'scope' })))[1]);
    const top = found.rows.slice(0, 20).map((c) => c.id);
    if (top.length) kwNeighbours.push((await timed(() => q.neighbours(e.node.services.db, e.node.services.storage, kwWhere, top, 2, 30)))[1]);
  }
  // The floor every authenticated request pays (HTTP, auth, rate limit, quota count).
  const usageMs: number[] = [];
  for (let i = 0; i < SEMANTIC_SEARCHES; i++) usageMs.push((await timed(() => call('GET', `${e.url}/v1/usage`, key)))[1]);
  const updatesAfter = await updates();
  const updated = updatesAfter.upd - updatesBefore.upd;
  const hot = updatesAfter.hot - updatesBefore.hot;
  const planOf = async (how: 'analyze' | 'index costs') =>
    (await semanticSql(e.node, tenantId, vectors[0], how)).result.map((r) => String(Object.values(r)[0]));
  const scanOf = (lines: string[]) => (lines.find((l) => /Scan/.test(l)) ?? '(no scan node)').replace(/^\s*->\s*/, '').trim();
  const planLines = await planOf('analyze');
  const usesIndex = planLines.some((l) => l.includes(INDEX));
  const plan = [
    `size ${size}: HNSW index ${usesIndex ? 'USED' : 'NOT USED'}`,
    `  top node: ${planLines[0].trim()}`,
    `  scan:     ${scanOf(planLines)}`,
    ...planLines.filter((l) => /Execution Time|Rows Removed by Filter/.test(l)).map((l) => `            ${l.trim()}`),
  ];
  if (!usesIndex) {
    // What the planner thought an index path would cost: the same query with seq and bitmap scans off.
    const forced = await planOf('index costs');
    plan.push(`  with enable_seqscan and enable_bitmapscan off the planner estimates: ${forced[0].trim()}`, `            ${scanOf(forced)}`);
  }
  plan.push(
    `  recall_count UPDATEs of memories rows during this size's searches: ${updated}, of which HOT ${hot} (${updated ? f1((100 * hot) / updated) : '0'}%)`,
  );

  const row = (name: string, xs: number[]) => [String(size), name, String(xs.length), f2(pct(xs, 50)), f2(pct(xs, 95)), f2(pct(xs, 99))];
  const latency = [
    row('HTTP search semantic (end-to-end)', http.semantic),
    row('HTTP search keyword', http.keyword),
    row('HTTP search hybrid', http.hybrid),
    row(`embedder alone (${e.node.services.embedder.name}, 1 query)`, embedMs),
    row('semantic SQL: txn (BEGIN, 2×SET LOCAL, SELECT, COMMIT)', txMs),
    row('semantic SQL: SELECT alone', selectMs),
    row('keyword SQL: BM25 top 40, whole store: postings + running totals', kwTotals),
    row('keyword SQL: BM25 top 40, counted over the rows (filtered searches; all before)', kwCounted),
    row('hybrid SQL: neighbours of the top 20 (±2)', kwNeighbours),
    row("search's other SQL: activeGrants read", grantsMs),
    row(`search's other SQL: recall bookkeeping txn (UPDATE ${LIMIT} rows, their recall events, milestone)`, bookkeepingMs),
    row(`plain semantic search, one statement: grants check, ${LIMIT} nearest, their bookkeeping`, plainMs),
    row('HTTP GET /v1/usage (auth + rate limit + quota floor)', usageMs),
  ];
  const e2e = pct(http.semantic, 50);
  const emb = pct(embedMs, 50);
  const db = pct(txMs, 50);
  const ratioNet = (e2e - emb) / db;
  const db95 = pct(txMs, 95);
  const target = [
    String(size),
    f2(e2e),
    f2(emb),
    f2(db),
    `${f2(ratioNet)}× ${ratioNet <= 2 ? 'ok' : 'OVER'}`,
    `${f2(e2e / db)}×`,
    `${f2(db95)}${args.postgres && size >= 100_000 ? (db95 <= 15 ? ' ok (≤ 15)' : ' OVER (> 15)') : ''}`,
    `${fewest}/${Math.min(Math.max(LIMIT * 4, 40), 400)}`,
    String(emptyAnswers),
  ];
  const load = [
    String(size),
    String(toLoad),
    f1(loadMs / 1000),
    (toLoad / (loadMs / 1000)).toFixed(0),
    f1(buildMs / 1000),
    mwm.maintenance_work_mem,
    mb(Number(sizes.idx)),
    mb(Number(sizes.heap)),
    mb(Number(sizes.toast)),
    String(rssMb()),
    String(peakRssMb()),
    buildNotices.length ? buildNotices.map((s) => s.replace(/\s+/g, ' ')).join('; ') : '—',
  ];
  return { size, load, latency, target, plan };
}

// ---------- main ----------

let failed = false;
let main: Engram | null = null;
const started = performance.now();
try {
  const indexSql = await indexDefinition(INDEX, args.postgres ? 'postgres' : 'embedded');
  const tenantsToDrop: string[] = [];

  // The guard: never drop the HNSW index of a database that holds someone's memories.
  {
    const probe = await startEngram('hash');
    const [{ n }] = await probe.bulk.query<{ n: string }>('SELECT count(*) AS n FROM memories');
    await probe.close();
    if (Number(n) > 0) throw new Error(`refusing to run: memories already holds ${n} rows; the bench drops ${INDEX}. Use an empty database.`);
  }

  console.log(
    `engram search bench: node ${process.version}, ${availableParallelism()} cores (load average ${loadavg()[0].toFixed(1)} at start), storage ${args.postgres ? `postgres${process.env.REDIS_URL ? ' + redis' : ''}` : 'embedded PGlite (temp dir)'}, sizes ${SIZES.join(', ')}`,
  );

  console.error('part 1: store throughput and read-your-writes');
  const storeRows: string[][] = [];
  const rywRows: string[][] = [];
  const allMisses: string[] = [];
  for (const provider of PARTS.has('store') ? (['use', 'hash'] as const) : []) {
    const { out, ryw, misses } = await storeBench(provider, tenantsToDrop);
    storeRows.push(...out);
    rywRows.push(ryw);
    allMisses.push(...misses.map((m) => `${provider} ${m}`));
    console.error(`  ${provider}: done`);
  }
  if (PARTS.has('store')) {
    console.log('\n### Store throughput (POST /v1/memories, defaults: auto_link on, on_conflict lww)\n');
    console.log(table(['embedder', 'streams', 'tenants', 'stores', 'seconds', 'memories/s', 'p50 ms', 'p95 ms', 'p99 ms', 'auto-links per store'], storeRows));
    console.log('\n### Read-your-writes (store, then at once GET /v1/memories/search?q=<exact text>&limit=1)\n');
    console.log(table(['embedder', 'stores', 'ranked first', 'store p50 ms', 'search p50 ms', 'search p99 ms'], rywRows));
    for (const m of allMisses) console.log(`  miss: ${m}`);
    if (allMisses.length) failed = true;
  }

  console.error('part 2: search latency');
  main = await startEngram(args['search-embedder'] === 'hash' ? 'hash' : 'use');
  // Part 1's memories would sit in the HNSW graph of the one-tenant measurement: drop them.
  if (tenantsToDrop.length) await main.bulk.query('DELETE FROM tenants WHERE id = ANY($1)', [tenantsToDrop]);
  const { key, tenantId } = await createTenant(main, 'search');
  tenantsToDrop.push(tenantId);
  const results: SizeResult[] = [];
  const skipped: number[] = [];
  const estimateFrom = {};
  for (const size of PARTS.has('search') ? SIZES : []) {
    const r = await searchBench(main, tenantId, key, size, indexSql, estimateFrom);
    if (r) results.push(r);
    else skipped.push(size);
  }

  console.log(
    `\n### Bulk load and HNSW build (${args.postgres ? 'Postgres' : 'PGlite'}; rows added to reach each size, index dropped during the load, rebuilt from scratch)\n`,
  );
  console.log(
    table(
      [
        'size',
        'rows inserted',
        'load s',
        'rows/s',
        'HNSW build s',
        'maintenance_work_mem',
        'index MB',
        'heap MB',
        'TOAST MB',
        'RSS MB',
        'peak RSS MB',
        'build notices',
      ],
      results.map((r) => r.load),
    ),
  );
  if (skipped.length) console.log(`\nskipped on PGlite (estimated > ${PGLITE_BUDGET_S / 60} min to load and index; --force runs them): ${skipped.join(', ')}`);
  console.log(
    `\n### Search latency (sequential requests, limit ${LIMIT}; queries of 3-5 words; stored vectors are random, so the query vectors are unrelated to them)\n`,
  );
  console.log(
    table(
      ['size', 'measurement', 'n', 'p50 ms', 'p95 ms', 'p99 ms'],
      results.flatMap((r) => r.latency),
    ),
  );
  console.log('\n### Targets\n');
  console.log(
    table(
      [
        'size',
        'HTTP semantic p50',
        'embed p50',
        'SQL txn p50',
        '(HTTP − embed) / SQL, target ≤ 2×',
        'HTTP / SQL (plain)',
        `SQL txn p95${args.postgres ? ' (target ≤ 15 ms at 100k)' : ''}`,
        'fewest rows returned (of n)',
        'HTTP answers < limit',
      ],
      results.map((r) => r.target),
    ),
  );
  console.log('\nThe 2× check uses (HTTP p50 − embedding p50) / SQL txn p50; the plain HTTP p50 / SQL p50 is shown beside it.');
  console.log('\n### EXPLAIN (ANALYZE, BUFFERS) of the semantic SELECT once per size, and the recall updates the searches made\n');
  console.log(results.flatMap((r) => r.plan).join('\n'));

  if (args.postgres && args.keep) console.log(`\nkept: tenant ${tenantId} with ${SIZES.at(-1)} memories, key ${key}`);
  if (args.postgres) await main.bulk.query('DELETE FROM tenants WHERE id = ANY($1)', [args.keep ? tenantsToDrop.filter((t) => t !== tenantId) : tenantsToDrop]);
  console.log(`\nconnection resets retried (stale keep-alive sockets, see call()): ${connectionResets}`);
  console.log(
    `RSS ${rssMb()} MB at the end, peak ${peakRssMb()} MB (one process: server, ${args.postgres ? 'pg pool' : 'PGlite'}, USE model, the HTTP client); total ${f1((performance.now() - started) / 60_000)} min; load average at the end ${loadavg()
      .map((x) => x.toFixed(1))
      .join(' / ')} (1/5/15 min)`,
  );
} catch (err) {
  console.error(err);
  failed = true;
} finally {
  // Leave the database as the migrations define it, even after a failure mid-load.
  await main?.bulk
    .query((await indexDefinition(INDEX, args.postgres ? 'postgres' : 'embedded')).replace('CREATE INDEX', 'CREATE INDEX IF NOT EXISTS'))
    .catch((err) => console.error('could not restore the index:', err));
  await main?.close();
  if (dataDir) await rm(dataDir, { recursive: true, force: true, maxRetries: 5 });
}
process.exit(failed ? 1 : 0);
