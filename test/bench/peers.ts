/**
 * Store and search speed beside the peers a user would pick instead, on one Postgres, in one run:
 * engram (the HTTP app in process), LangGraph's PostgresStore (@langchain/langgraph-checkpoint-postgres,
 * with its pgvector index) and mem0's OSS TypeScript pgvector store (`PGVector` of `mem0ai/oss`: its
 * vector store alone, no LLM extraction).
 *
 *   DATABASE_URL=postgres://... npm run bench:peers -- [--conversations 26,30,41] [--stores 600] [--queries 300] [--throughput 800] [--warmup 4000] [--search-warmup 2000] [--link-latency 1]
 *
 * BENCH_CPU_PROFILE_DIR=<dir> also writes the profiles behind the phase table (below) as
 * .cpuprofile files, which Chrome DevTools and speedscope open.
 *
 * `--link-latency ms` puts every system behind a relay that delays each direction by `ms`
 * (test/bench/latency-proxy.ts): PostgreSQL across a network link instead of on this machine.
 *
 * The same LoCoMo turns (--data or LOCOMO_DATA) go into each: observation "<speaker>: <text>",
 * grouped by conversation (engram: tags, LangGraph: namespace ["locomo", conversation], mem0: userId), and the same questions
 * search them (top 10, filtered to the conversation). Beside them, the floor any pgvector store stands
 * on: one prepared INSERT a store (autocommit) into a table of id, conversation and vector, with
 * engram's HNSW index (m 16, ef_construction 64) and without a vector index; nothing a store could
 * do on this machine goes faster than the first. Between that floor and engram, the HTTP floor: a
 * bare Hono app on engram's own stack (in process through app.request as engram is, engram's pool,
 * drizzle driver and shortcuts) whose store is one INSERT into an HNSW-indexed table and whose
 * search is one SELECT, so each figure reads as the floor, the HTTP floor, engram. Every vector is
 * computed once before anything is timed (the hash embedder) and replayed to all of them, so only
 * the database path is measured.
 *
 * Between the HTTP floor and engram, engram's own statements replayed raw (test/bench/statement-replay.ts):
 * the same calls once more in a database of their own, every message engram sends recorded, then
 * sent again by plain node-postgres clients, no HTTP and no engram code, to a copy of that database
 * from before the calls. What a store costs PostgreSQL by itself (its transaction with audit entry,
 * events, counters, postings and quota), and so the least engram's store could take on this stack
 * without changing its statements: the bound table puts the floor, the HTTP floor, these statements
 * and engram side by side, and the replayed calls' messages one by one.
 *
 * 1. Latency: after WARMUP stores of variant texts (the same for every system; why so many: see
 *    WARMUP), `--stores` stores one at a time, then (after ANALYZE, as autovacuum would soon run it
 *    and SEARCH_WARMUP warm-up searches) `--queries` semantic searches one at a time, within the
 *    question's conversation and then over the whole store; p50 / p95 / p99 ms and CPU per call. engram with auto_link off (the peers link nothing) and on.
 * 2. Node CPU by phase: after the timed runs, engram and the HTTP floor each store and search once
 *    more under the CPU profiler (test/bench/cpu-phases.ts): this process's CPU per call by phase
 *    (HTTP and validation, authentication and limits, planning, SQL building, hashing,
 *    serialization, the driver, ...) and the ten functions of most self time, with file:line.
 * 3. Throughput: `--throughput` stores from 1, 4 and 16 clients; engram also with 16 clients over
 *    16 tenants (one tenant's writes queue on its audit chain head and counters; 16 tenants' do not).
 * 4. engram's statements raw: the calls of 1. and of 3.'s 16 clients over 16 tenants, recorded in a
 *    pass of their own (recording slows engram; its timings there are dropped), replayed one call
 *    at a time as in 1. and then from a client per tenant (test/bench/statement-replay-clients.ts).
 *
 * Each side starts empty on the server of DATABASE_URL: engram in a fresh database `engram_peers_app`
 * (its migrations), the peers in `engram_peers` (mem0's table would be called `memories` otherwise),
 * the recorded pass in `engram_peers_rec` and its replay in `engram_peers_raw`.
 */
import { readdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { randomUUID } from 'node:crypto';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { PostgresStore } from '@langchain/langgraph-checkpoint-postgres/store';
import { PGVector } from 'mem0ai/oss';
import { Hono } from 'hono';
import { sql } from 'drizzle-orm';
import { openPostgres } from '../../shared/node/database';
import { preparedRows, rows as sqlRows } from '../../shared/platform/data/db';
import { type Embedder, hashEmbedder, toStoredVector } from '../../shared/memory/embeddings';
import { f0, f1, f2, inProcessEngram, pct, postgresCpu, processCpu, SMOKE, table } from './lib';
import { benchLink } from './latency-proxy';
import { breakdown, phaseTable, profiled, topTable } from './cpu-phases';
import { type BoundReplay, boundReport, StatementRecorder, statementReplay } from './statement-replay';
import { replayClients } from './statement-replay-clients';

const { values: args } = parseArgs({
  options: {
    conversations: { type: 'string', default: '26,30,41' },
    stores: { type: 'string', default: '600' },
    queries: { type: 'string', default: '300' },
    throughput: { type: 'string', default: '800' },
    warmup: { type: 'string', default: '4000' },
    'search-warmup': { type: 'string', default: '2000' },
    data: { type: 'string', default: process.env.LOCOMO_DATA ?? '' },
    'link-latency': { type: 'string', default: '0' },
  },
});
if (!args.data) throw new Error('pass the LoCoMo data directory: --data <dir> or LOCOMO_DATA');
const STORES = Number(args.stores);
const QUERIES = Number(args.queries);
const THROUGHPUT = Number(args.throughput);
const CLIENTS = [1, 4, 16];
/**
 * Stores before anything is timed, the same for every system, so each is measured in steady state:
 * in a fresh process V8 keeps optimizing engram's functions for its first two to three thousand
 * stores (a function that runs once a request is optimized after a thousand or more of them,
 * compiled on background threads, whose CPU counts as this process's), and its Node CPU per store
 * falls until then; nothing in engram fills or grows meanwhile (without the optimizing compiler, it
 * stays flat). WARMUP_BLOCK-store blocks of the warm-up print their CPU per store, so a run shows
 * whether the warm-up was long enough (`--warmup`: shorter runs, for a quick look at anything but
 * engram's CPU). Searches run other code: SEARCH_WARMUP searches within a conversation (the
 * questions in turn) warm it before the timed ones, for every system alike.
 */
const WARMUP = SMOKE ? 5 : Number(args.warmup);
const WARMUP_BLOCK = SMOKE ? 5 : 250;
const SEARCH_WARMUP = SMOKE ? 5 : Number(args['search-warmup']);
if (!process.env.DATABASE_URL) throw new Error('set DATABASE_URL (bash .ci/services.sh prints it): the comparison is on Postgres');
const LINK_MS = Number(args['link-latency']);
// Every system reaches PostgreSQL through the same delaying relay, as over a network.
const link = LINK_MS > 0 ? await benchLink(process.env.DATABASE_URL, LINK_MS) : null;
if (link) process.env.DATABASE_URL = link.url;

// ---------- data and replayed vectors ----------
interface Turn {
  conv: string;
  dia: string;
  text: string;
}
const turns: Turn[] = [];
const questions: { conv: string; q: string }[] = [];
for (const f of (await readdir(args.data)).filter((f) => f.endsWith('.json') && args.conversations.split(',').includes(f.replace('.json', ''))).sort()) {
  const raw = JSON.parse(await readFile(join(args.data, f), 'utf8')) as Record<string, any>;
  const conv = `conv-${f.replace('.json', '')}`;
  for (const k of Object.keys(raw).filter((k) => /^session_\d+$/.test(k))) {
    for (const t of raw[k] as { speaker: string; dia_id: string; text: string }[]) turns.push({ conv, dia: t.dia_id, text: `${t.speaker}: ${t.text}` });
  }
  for (const qa of raw.qa as { question: string; category: number }[]) if (qa.category >= 1 && qa.category <= 4) questions.push({ conv, q: qa.question });
}
/** Texts for the throughput runs: distinct from each other and from the latency run's. */
const variant = (t: Turn, run: string) => ({ ...t, text: `${t.text} [${run}]` });
const runs = ['prof', ...CLIENTS.map((c) => `c${c}`), 'c16t16', 'al', 'b1', 'b4'];
/**
 * The warm-up's turns: more than there are turns, so a round number keeps each text distinct; in a
 * conversation of their own, so a search within a conversation finds what it would without them.
 */
const warmTurns = Array.from({ length: WARMUP }, (_, i) => ({
  ...variant(turns[i % turns.length], `warm${Math.floor(i / turns.length)}`),
  conv: 'warm-up',
}));
const allTexts = [
  ...turns.map((t) => t.text),
  ...questions.map((q) => q.q),
  ...warmTurns.map((t) => t.text),
  ...runs.flatMap((r) => turns.slice(0, THROUGHPUT).map((t) => variant(t, r).text)),
];
const hash = hashEmbedder();
const vectors = new Map<string, number[]>();
for (let i = 0; i < allTexts.length; i += 256) {
  const chunk = allTexts.slice(i, i + 256);
  (await hash.embed(chunk)).forEach((v, j) => vectors.set(chunk[j].trim(), toStoredVector(v)));
}
const replay = (text: string) => {
  const v = vectors.get(text.trim()); // engram trims an observation before it embeds it
  if (!v) throw new Error(`no replayed vector for ${text.slice(0, 40)}`);
  return v;
};
const replayEmbedder: Embedder = { name: 'replay', dimension: 512, embed: async (texts) => texts.map(replay) };
console.error(`${turns.length} turns, ${questions.length} questions, ${vectors.size} vectors precomputed`);
if (turns.length < Math.max(STORES, THROUGHPUT)) throw new Error(`only ${turns.length} turns: fewer --stores/--throughput or more --conversations`);

// ---------- the systems behind one interface ----------
interface System {
  name: string;
  store(t: Turn, client: number): Promise<void>;
  /** Top 10 for the question, within its conversation, or (`whole`) over everything stored. */
  search(q: { conv: string; q: string }, whole?: boolean): Promise<number>;
  close(): Promise<void>;
}

/**
 * `record`: engram in a database of its own (REC_DB) for the replay row (test/bench/statement-replay.ts),
 * an untimed pass of its own, since recording slows what it records: once its tenant and key exist,
 * that database is copied to RAW_DB (the copy needs every connection to its template closed, so
 * engram restarts on it), and every message engram sends from then on is recorded.
 */
async function engram(
  autoLink: boolean,
  record = false,
): Promise<System & { tenants: string[]; retarget(n: number): Promise<void>; batch(items: Turn[], client: number): Promise<void> }> {
  const url = record ? databaseUrl(REC_DB) : engramUrl;
  let e = await inProcessEngram({ DATABASE_URL: url }, { embedder: replayEmbedder });
  let keys = [(await e.newTenant('enterprise')).api_key];
  if (record) {
    await e.node.close();
    const admin = new pg.Client({ connectionString: process.env.DATABASE_URL });
    await admin.connect();
    await admin.query(`CREATE DATABASE ${RAW_DB} TEMPLATE ${REC_DB}`);
    await admin.end();
    analyzed.push(databaseUrl(REC_DB), databaseUrl(RAW_DB));
    recorder.start();
    e = await inProcessEngram({ DATABASE_URL: url }, { embedder: replayEmbedder });
  }
  const recorded = record ? recorder.call.bind(recorder) : (_kind: string, fn: () => Promise<number | undefined>) => fn();
  const system = {
    name: `engram${autoLink ? ' (auto_link on)' : ''}`,
    tenants: [] as string[],
    retarget: async (n: number) => {
      const made = await Promise.all(Array.from({ length: n }, () => e.newTenant('enterprise')));
      keys = made.map((m) => m.api_key);
      system.tenants = made.map((m) => m.tenant_id);
    },
    store: async (t: Turn, client: number) => {
      await recorded('store', async () => {
        await e.call('POST', '/v1/memories', keys[client % keys.length], { observation: t.text, tags: [t.conv, t.dia], auto_link: autoLink });
        return undefined;
      });
    },
    batch: async (items: Turn[], client: number) => {
      const res = await e.call('POST', '/v1/memories/batch', keys[client % keys.length], {
        memories: items.map((t) => ({ observation: t.text, tags: [t.conv, t.dia], auto_link: autoLink })),
      });
      if (res.stored !== items.length) throw new Error(`batch stored ${res.stored} of ${items.length}`);
    },
    search: async (q: { conv: string; q: string }, whole = false) =>
      (await recorded('search', async () => {
        const res = await e.call(
          'GET',
          `/v1/memories/search?${new URLSearchParams({ q: q.q, ...(whole ? {} : { tags: q.conv }), limit: '10', mode: 'semantic' })}`,
          keys[0],
        );
        return res.memories.length as number;
      }))!,
    close: () => e.node.close(),
  };
  return system;
}

const databaseUrl = (name: string) => {
  const u = new URL(process.env.DATABASE_URL!);
  u.pathname = `/${name}`;
  return u.toString();
};
const peersUrl = databaseUrl('engram_peers');
const engramUrl = databaseUrl('engram_peers_app');
/** engram's database for the recorded pass, and its copy from before the pass, where the recording is replayed. */
const REC_DB = 'engram_peers_rec';
const RAW_DB = 'engram_peers_raw';
const recorder = new StatementRecorder(REC_DB);
/** The databases ANALYZE runs in (with the replay's copy once it exists). */
const analyzed = [peersUrl, engramUrl];

/** Fresh, empty databases on the same server: every system starts from an empty table and index. */
async function analyzeAll() {
  for (const url of analyzed) {
    const c = new pg.Client({ connectionString: url });
    recorder.ignore(c);
    await c.connect();
    await c.query('ANALYZE');
    await c.end();
  }
}

async function freshDatabases() {
  const admin = new pg.Client({ connectionString: process.env.DATABASE_URL });
  await admin.connect();
  await admin.query(`DROP DATABASE IF EXISTS ${RAW_DB} WITH (FORCE)`);
  for (const name of ['engram_peers', 'engram_peers_app', REC_DB]) {
    await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    await admin.query(`CREATE DATABASE ${name}`);
    const c = new pg.Client({ connectionString: databaseUrl(name) });
    await c.connect();
    await c.query('CREATE EXTENSION IF NOT EXISTS vector');
    await c.end();
  }
  await admin.end();
}

async function langgraph(): Promise<System> {
  const store = PostgresStore.fromConnString(peersUrl, {
    index: { dims: 512, embed: { embedDocuments: async (texts) => texts.map(replay), embedQuery: async (text) => replay(text) }, fields: ['text'] },
  });
  await store.setup();
  return {
    name: 'LangGraph PostgresStore',
    store: async (t) => {
      await store.put(['locomo', t.conv], `${t.dia}-${randomUUID()}`, { text: t.text });
    },
    // Every item under one root (LangGraph refuses an empty namespace prefix), so the whole store is a prefix too.
    search: async (q, whole = false) => (await store.search(whole ? ['locomo'] : ['locomo', q.conv], { query: q.q, limit: 10 })).length,
    close: () => store.stop(),
  };
}

async function mem0(): Promise<System> {
  const store = new PGVector({ collectionName: 'mem0_bench', embeddingModelDims: 512, hnsw: true, connectionString: peersUrl, dbname: 'engram_peers' });
  await store.initialize();
  return {
    name: 'mem0 OSS pgvector store',
    // What mem0's Memory.add hands its vector store for one fact: the embedding, a uuid and the payload.
    store: async (t) => {
      await store.insert([replay(t.text)], [randomUUID()], [{ data: t.text, userId: t.conv, hash: t.dia, createdAt: new Date().toISOString() }]);
    },
    search: async (q, whole = false) => (await store.search(replay(q.q), 10, whole ? {} : { userId: q.conv })).length,
    close: async () => {
      await (store as unknown as { close(): Promise<void> }).close();
    },
  };
}

/**
 * The HTTP floor: a bare Hono app on engram's own stack (app.request, the same JSON in and out,
 * engram's node-postgres pool with its drizzle driver and shortcuts, a named prepared statement),
 * whose store is one INSERT into a table with engram's HNSW index and whose search is one SELECT.
 * What any HTTP memory service on this stack costs before it does anything of its own.
 */
async function httpFloor(): Promise<System> {
  const database = openPostgres(peersUrl, 16);
  const { db } = database;
  await sqlRows(db, sql`CREATE TABLE floor_http (id uuid PRIMARY KEY, conv text NOT NULL, observation text NOT NULL, v vector(512) NOT NULL)`);
  await sqlRows(db, sql`CREATE INDEX ON floor_http USING hnsw (v vector_cosine_ops) WITH (m = 16, ef_construction = 64)`);
  const app = new Hono()
    .post('/floor/memories', async (c) => {
      const body = (await c.req.json()) as { observation: string; tags: string[] };
      const id = randomUUID();
      const v = JSON.stringify(await replayEmbedder.embed([body.observation]).then((vs) => vs[0]));
      await preparedRows(db, sql`INSERT INTO floor_http (id, conv, observation, v) VALUES (${id}, ${body.tags[0]}, ${body.observation}, ${v}::vector)`);
      return c.json({ id }, 201);
    })
    .get('/floor/search', async (c) => {
      const q = c.req.query('q')!;
      const conv = c.req.query('tags');
      const v = JSON.stringify(await replayEmbedder.embed([q]).then((vs) => vs[0]));
      const found = conv
        ? await preparedRows<{ id: string; observation: string }>(
            db,
            sql`SELECT id, observation FROM floor_http WHERE conv = ${conv} ORDER BY v <=> ${v}::vector LIMIT 10`,
          )
        : await preparedRows<{ id: string; observation: string }>(db, sql`SELECT id, observation FROM floor_http ORDER BY v <=> ${v}::vector LIMIT 10`);
      return c.json({ memories: found });
    });
  const call = async (method: string, path: string, body?: unknown) => {
    const res = await app.request(path, {
      method,
      headers: { authorization: 'Bearer floor', 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const json = (await res.json()) as any;
    if (res.status >= 300) throw new Error(`${method} ${path}: ${res.status}`);
    return json;
  };
  return {
    name: 'HTTP floor: bare Hono, engram driver, one INSERT',
    store: async (t) => {
      await call('POST', '/floor/memories', { observation: t.text, tags: [t.conv, t.dia] });
    },
    search: async (q, whole = false) =>
      (await call('GET', `/floor/search?${new URLSearchParams({ q: q.q, ...(whole ? {} : { tags: q.conv }), limit: '10' })}`)).memories.length,
    close: () => database.close(),
  };
}

/** One INSERT a store, nothing else: the floor under every pgvector store (`hnsw`: with engram's index). */
async function rawSql(hnsw: boolean): Promise<System> {
  const table = hnsw ? 'floor_hnsw' : 'floor_plain';
  const pool = new pg.Pool({ connectionString: peersUrl, max: 16 });
  await pool.query(`CREATE TABLE ${table} (id uuid PRIMARY KEY, conv text NOT NULL, v vector(512) NOT NULL)`);
  if (hnsw) await pool.query(`CREATE INDEX ON ${table} USING hnsw (v vector_cosine_ops) WITH (m = 16, ef_construction = 64)`);
  const insert = { name: `${table}_insert`, text: `INSERT INTO ${table} (id, conv, v) VALUES ($1, $2, $3)` };
  return {
    name: hnsw ? 'raw SQL: one INSERT, HNSW-indexed table' : 'raw SQL: one INSERT, no vector index',
    store: async (t) => {
      await pool.query({ ...insert, values: [randomUUID(), t.conv, JSON.stringify(replay(t.text))] });
    },
    search: async (q, whole = false) => {
      const v = JSON.stringify(replay(q.q));
      const res = whole
        ? await pool.query({ name: `${table}_all`, text: `SELECT id FROM ${table} ORDER BY v <=> $1 LIMIT 10`, values: [v] })
        : await pool.query({ name: `${table}_conv`, text: `SELECT id FROM ${table} WHERE conv = $2 ORDER BY v <=> $1 LIMIT 10`, values: [v, q.conv] });
      return res.rowCount ?? 0;
    },
    close: () => pool.end(),
  };
}

// ---------- measurements ----------
async function latency(s: System) {
  const storeMs: number[] = [];
  // JIT, plans and pools warm before anything is timed (see WARMUP).
  const warmup: number[] = [];
  for (let from = 0; from < WARMUP; from += WARMUP_BLOCK) {
    const before = processCpu();
    for (const t of warmTurns.slice(from, from + WARMUP_BLOCK)) await s.store(t, 0);
    warmup.push((processCpu() - before) / Math.min(WARMUP_BLOCK, WARMUP - from));
  }
  const cpu0 = [processCpu(), await pgCpu?.()];
  for (const t of turns.slice(0, STORES)) {
    const t0 = performance.now();
    await s.store(t, 0);
    storeMs.push(performance.now() - t0);
  }
  const cpu1 = [processCpu(), await pgCpu?.()];
  const perCall = (from: (number | undefined)[], to: (number | undefined)[], n: number) =>
    [0, 1].map((i) => (to[i] === undefined ? '–' : f2((to[i]! - from[i]!) / n))).join(' / ');
  // Statistics as autovacuum would have them a minute later (this phase is over in seconds): without
  // them the planner guesses a tenant's or namespace's share of the table, and so its search plan.
  await analyzeAll();
  const searches = questions.slice(0, QUERIES);
  const searchRun = async (whole: boolean) => {
    const times: number[] = [];
    let hits = 0;
    const warming = whole ? 10 : SEARCH_WARMUP;
    for (let i = 0; i < warming; i++) await s.search(questions[i % questions.length], whole);
    const before = [processCpu(), await pgCpu?.()];
    for (const q of searches) {
      const t0 = performance.now();
      hits += await s.search(q, whole);
      times.push(performance.now() - t0);
    }
    return { ms: times, hits, cpu: perCall(before, [processCpu(), await pgCpu?.()], searches.length) };
  };
  const inConversation = await searchRun(false);
  const whole = await searchRun(true);
  return { storeMs, cpu: perCall(cpu0, cpu1, STORES), inConversation, whole, warmup };
}

async function throughput(s: System, clients: number, run: string) {
  const items = turns.slice(0, THROUGHPUT).map((t) => variant(t, run));
  let next = 0;
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: clients }, async (_, client) => {
      while (next < items.length) await s.store(items[next++], client);
    }),
  );
  return items.length / ((performance.now() - t0) / 1000);
}

/** The calls profiled for the phase breakdown: a pass of their own after the timed ones (the profiler slows what it samples). */
const PROFILED = Math.min(STORES, THROUGHPUT, 300);
async function profile(s: System) {
  const store = await profiled(async () => {
    for (const t of turns.slice(0, PROFILED)) await s.store(variant(t, 'prof'), 0);
  });
  const searches = questions.slice(0, QUERIES);
  const search = await profiled(async () => {
    for (const q of searches) await s.search(q);
  });
  if (process.env.BENCH_CPU_PROFILE_DIR) {
    const base = join(process.env.BENCH_CPU_PROFILE_DIR, s.name.split(':')[0].replace(/\W+/g, '-').toLowerCase());
    await writeFile(`${base}-store.cpuprofile`, JSON.stringify(store.profile));
    await writeFile(`${base}-search.cpuprofile`, JSON.stringify(search.profile));
  }
  return { store: breakdown(store.profile, PROFILED), search: breakdown(search.profile, searches.length) };
}
const profiles: Record<string, Awaited<ReturnType<typeof profile>>> = {};
const cpuPerCall: Record<string, { store: string; search: string }> = {};

const ms = (xs: number[]) => `${f1(pct(xs, 50))} / ${f1(pct(xs, 95))} / ${f1(pct(xs, 99))}`;
const rows: string[][] = [];
const latencyRow = (name: string, l: Awaited<ReturnType<typeof latency>>) => [
  name,
  ms(l.storeMs),
  l.cpu,
  ...[l.inConversation, l.whole].flatMap((r) => [ms(r.ms), r.cpu, f1(r.hits / Math.min(QUERIES, questions.length))]),
];
const rates: string[][] = [];
const floorName = () => Object.keys(latencies).find((n) => n.startsWith('HTTP floor'))!;
const latencies: Record<string, Awaited<ReturnType<typeof latency>>> = {};
let rawReplay: (BoundReplay & { name: string }) | undefined;
let rawClients = '';
const batchRates: string[][] = [];
const load = async () => (await readFile('/proc/loadavg', 'utf8')).split(' ').slice(0, 3).join(' ');
const loadAtStart = await load();
// PostgreSQL's CPU, when it runs on this machine: with this process's, what one store costs in all,
// which is what bounds throughput once every core is busy.
const pgCpu = await postgresCpu(process.env.DATABASE_URL!);

await freshDatabases();
for (const make of [() => engram(false), () => langgraph(), () => mem0(), () => httpFloor(), () => rawSql(true), () => rawSql(false)]) {
  const s = await make();
  console.error(`${s.name}: latency`);
  const l = await latency(s);
  latencies[s.name] = l;
  if (s.name === 'engram' || s.name.startsWith('HTTP floor')) {
    console.error(`${s.name}: CPU profile`);
    profiles[s.name] = await profile(s);
    cpuPerCall[s.name] = { store: l.cpu.split(' / ')[0], search: l.inConversation.cpu.split(' / ')[0] };
  }
  const r: string[] = [];
  for (const c of CLIENTS) {
    console.error(`${s.name}: ${c} clients`);
    r.push(f0(await throughput(s, c, `c${c}`)));
  }
  if (s.name === 'engram') {
    await (s as Awaited<ReturnType<typeof engram>>).retarget(16);
    console.error('engram: 16 clients, 16 tenants');
    r.push(f0(await throughput(s, 16, 'c16t16')));
    for (const clients of [1, 4]) {
      console.error(`engram: POST /v1/memories/batch of 100, ${clients} clients`);
      const items = turns.slice(0, THROUGHPUT).map((t) => variant(t, `b${clients}`));
      const chunks = Array.from({ length: Math.ceil(items.length / 100) }, (_, i) => items.slice(i * 100, i * 100 + 100));
      let next = 0;
      const t0 = performance.now();
      await Promise.all(
        Array.from({ length: clients }, async (_, client) => {
          while (next < chunks.length) await (s as Awaited<ReturnType<typeof engram>>).batch(chunks[next++], client);
        }),
      );
      batchRates.push([
        `engram \`POST /v1/memories/batch\` (100 a request, a tenant per client)`,
        `${clients} client${clients > 1 ? 's' : ''}`,
        f0(items.length / ((performance.now() - t0) / 1000)),
      ]);
    }
  } else r.push('–');
  rows.push(latencyRow(s.name, l));
  rates.push([s.name, ...r]);
  await s.close();
  if (s.name === 'engram') {
    // The same calls once more, recorded (their timings discarded), then replayed raw on the copy
    // of engram's database from before them, with nothing else running.
    console.error('engram: the same calls, recorded');
    const recording = await engram(false, true);
    await latency(recording);
    await recording.retarget(16);
    const from = recorder.messages.length;
    await throughput(recording, 16, 'c16t16');
    recorder.stop();
    await recording.close();
    const raw = await statementReplay(recorder, databaseUrl(RAW_DB));
    console.error(`${raw.name}: latency`);
    const rl = await latency(raw);
    console.error(`${raw.name}: 16 clients, 16 tenants`);
    await raw.before(from);
    const rawRate = await replayClients(recorder.messages, from, recording.tenants, THROUGHPUT, databaseUrl(RAW_DB));
    await raw.close();
    rates.push([raw.name, '–', '–', '–', f0(rawRate.rate)]);
    rawClients = `${raw.name}, 16 clients over 16 tenants: a client per tenant sent the ${rawRate.replayed} messages that name its tenant, of the ${rawRate.recorded} sent during those stores (the rest, background, not replayed).`;
    // The timed calls of latency(): after its warm-up stores, and after the warm-up searches.
    const warm = WARMUP;
    const nq = Math.min(QUERIES, questions.length);
    const searchesFrom = warm + STORES + SEARCH_WARMUP;
    rawReplay = { name: raw.name, summary: raw.summary, stores: raw.messages(warm, warm + STORES), searches: raw.messages(searchesFrom, searchesFrom + nq) };
    latencies[raw.name] = rl;
    rows.push(latencyRow(raw.name, rl));
  }
}
{
  const s = await engram(true);
  console.error('engram auto_link on: latency');
  const l = await latency(s);
  latencies[s.name] = l;
  rows.push(latencyRow(s.name, l));
  await s.close();
}

console.log(
  `\n### Store and semantic search on one Postgres, vectors replayed (${STORES} stores, ${Math.min(QUERIES, questions.length)} searches, one client; p50 / p95 / p99 ms)\n`,
);
console.log(
  table(
    [
      'system',
      'store',
      'CPU ms per store: this process / PostgreSQL',
      'semantic search (top 10, one conversation)',
      'CPU ms per search: this process / PostgreSQL',
      'hits per search',
      'semantic search (top 10, whole store)',
      'CPU ms per search',
      'hits per search',
    ],
    rows,
  ),
);
// The bound: the floor, the HTTP floor, engram's own statements with nothing around them, engram.
console.log(
  boundReport(
    ['raw SQL: one INSERT, HNSW-indexed table', floorName(), rawReplay!.name, 'engram'].map((n) => [n, latencies[n]]),
    rawReplay!,
  ),
);
console.log(`\nNode CPU ms per store during the ${WARMUP} warm-up stores, by block of ${WARMUP_BLOCK}, then the timed stores':\n`);
for (const [name, l] of Object.entries(latencies)) console.log(`- ${name}: ${l.warmup.map(f2).join(', ')}; timed ${l.cpu.split(' / ')[0]}`);
console.log(`\n### Stores per second (${THROUGHPUT} stores of distinct turns)\n`);
console.log(table(['system', '1 client', '4 clients', '16 clients', '16 clients, 16 tenants'], rates));
console.log(`\n${rawClients}`);
console.log(`\n### Batch stores (${THROUGHPUT} memories)\n`);
console.log(table(['what', 'clients', 'memories/s'], batchRates));

console.log(
  `\n### Node CPU by phase (CPU profiler, ${PROFILED} stores and ${Math.min(QUERIES, questions.length)} searches within a conversation after the timed runs; self time per call, idle excluded)\n`,
);
console.log(
  phaseTable([
    ['engram store', profiles.engram.store],
    ['HTTP floor store', profiles[floorName()].store],
    ['engram search', profiles.engram.search],
    ['HTTP floor search', profiles[floorName()].search],
  ]),
);
console.log(
  `\nUnprofiled, the timed runs above: Node CPU ms per store ${cpuPerCall.engram.store} (engram) and ${cpuPerCall[floorName()].store} (HTTP floor), per search ${cpuPerCall.engram.search} and ${cpuPerCall[floorName()].search}.`,
);
const others = profiles.engram.store.other.slice(0, 3).concat(profiles.engram.search.other.slice(0, 3));
if (others.length) console.log(`"other" is mostly: ${others.map((o) => `${o.path || '(no file)'} ${f2(o.ms)}`).join(', ')}`);
console.log('\n### engram store: the 10 functions with the most self time\n');
console.log(topTable(profiles.engram.store));
console.log('\n### engram search: the 10 functions with the most self time\n');
console.log(topTable(profiles.engram.search));
console.log(`\nengram ran on PostgreSQL${process.env.REDIS_URL ? ' and Redis (REDIS_URL: the request gate counts calls there)' : ' alone (no REDIS_URL)'}.`);
console.log(`\nload average at start ${loadAtStart}, at end ${await load()}`);
if (link) console.log(`every system reached PostgreSQL through a relay adding ${LINK_MS} ms each way (test/bench/latency-proxy.ts)`);
link?.stop();
process.exit(0);
