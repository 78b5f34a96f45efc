/**
 * Change-control benchmark on real Postgres: rollback, its preview, replay snapshot pages and audit
 * verify for one large tenant, through the HTTP API of the Node server (in-process).
 *
 *   DATABASE_URL=postgres://... npx tsx test/bench/changecontrol.ts [--memories 100000] [--events 500000]
 *     [--changed 10000] [--audit 200000] [--audit-first 50000] [--via sql|http] [--calls 20]
 *     [--maintenance-work-mem 1GB] [--keep]
 *
 * DATABASE_URL must be a migrated database with no memories (the bench drops and rebuilds
 * memories_embedding_idx), best a throwaway one:
 *   out=$(bash .ci/services.sh) && eval "$out"
 *   psql "${DATABASE_URL%/*}/postgres" -c 'CREATE DATABASE engram_cc_bench'
 *   DATABASE_URL=${DATABASE_URL%/*}/engram_cc_bench npx tsx functions/node.ts migrate
 * Its tenant is deleted at the end unless --keep; then drop the database.
 *
 * 1. History, bulk-loaded with SQL (HNSW index dropped, rebuilt afterwards with its exact
 *    definition from the migrations, timed): `--memories` memories created over 30 days before
 *    H = start − 2 h, and `--events` memory_events in all: a `create` per memory, then updates
 *    (half change the observation, with a new embedding; the rest importance or tags) and recalls
 *    at random times up to H. Snapshots are built by toMemoryDto (shared/memory/rows.ts) from the
 *    row as it was, updates carry before/after and the row's embedding as PATCH records them, and
 *    the live row is the last state event's `after` (recall_count / last_recalled_at included).
 *    Random unit 512-d vectors are made in SQL; rows are staged, then appended in time order.
 * 2. `--changed` distinct memories get a new observation (and embedding) after T: `--via sql`
 *    (default) mimics functions/memories/service.ts patch (row update + `update` event with
 *    snapshots and embedding + `memory.update` audit entry) at times in (T, T + 1 h], T = H; then as
 *    many recalls (search bookkeeping) follow. `--via http` sends the PATCHes (8 streams) and
 *    `--changed`/10 hybrid searches through the API, with T = the moment before the first PATCH.
 * 3. GET /v1/rollback/preview and POST /v1/rollback to T: time, counts, RSS sampled every 50 ms,
 *    every SQL statement timed (pg's Client.query is wrapped in this process only), the live rows
 *    checked against their state at T; GET /v1/replay/snapshot at three moments and three offsets,
 *    `--calls` each; audit chain appended with SQL (hashes as shared/platform/data/audit.ts computes them) to
 *    `--audit-first`, GET /v1/audit/verify, then to `--audit` and verify again (time, RSS, heap).
 *    EXPLAIN (ANALYZE, BUFFERS) of the slowest rollback statement and of the slowest snapshot (each
 *    re-run with the SET LOCALs its own transaction made); the slowest rollback statement, if it
 *    writes memories, once more with the HNSW index dropped inside a transaction that is rolled back.
 * `--maintenance-work-mem` is set in the bench's own session for the HNSW build only (default: the
 * server's setting); the index statement itself is the migration's.
 */
import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { availableParallelism, loadavg } from 'node:os';
import { parseArgs } from 'node:util';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { serve, type ServerType } from '@hono/node-server';
import pg from 'pg';
import { v7 as uuidv7 } from 'uuid';
import { buildApp } from '../../functions/app';
import { jobHandlers, maintenanceTasks } from '../../functions/registry';
import { auditHashInput } from '../../shared/platform/data/audit';
import { parseConfig } from '../../shared/platform/contract/config';
import { newId } from '../../shared/platform/contract/ids';
import { createLogger } from '../../shared/platform/data/log';
import { rebuildReplayIntervals } from '../../shared/memory/intervals';
import { type MemoryRow, toMemoryDto } from '../../shared/memory/rows';
import { createNodeServices, type NodeServices } from '../../shared/node/services';
import { periodOf } from '../../shared/platform/contract/time';
import { rng, pct, f0, f1, f2, table, timed, pool, indexDefinition } from './lib';

const { values: args } = parseArgs({
  options: {
    memories: { type: 'string', default: '100000' },
    events: { type: 'string', default: '500000' },
    changed: { type: 'string', default: '10000' },
    audit: { type: 'string', default: '200000' },
    'audit-first': { type: 'string', default: '50000' },
    via: { type: 'string', default: 'sql' },
    calls: { type: 'string', default: '20' },
    'maintenance-work-mem': { type: 'string' },
    keep: { type: 'boolean', default: false },
  },
});
const MEMORIES = Number(args.memories);
const EVENTS = Number(args.events);
const CHANGED = Number(args.changed);
const AUDIT = Number(args.audit);
const AUDIT_FIRST = Number(args['audit-first']);
const CALLS = Number(args.calls);
const VIA = args.via as 'sql' | 'http';
if (!process.env.DATABASE_URL) throw new Error('DATABASE_URL is required (a migrated, empty Postgres database)');
if (!(MEMORIES > 0) || !(EVENTS >= MEMORIES) || !(CHANGED > 0 && CHANGED <= MEMORIES))
  throw new Error('need memories > 0, events >= memories, 0 < changed <= memories');
if (!(AUDIT_FIRST > 0 && AUDIT > AUDIT_FIRST)) throw new Error('need 0 < audit-first < audit');
if (VIA !== 'sql' && VIA !== 'http') throw new Error('--via is sql or http');

const MIN = 60_000;
const HOUR = 60 * MIN;
const DAY = 24 * HOUR;
const START = Date.now();
const H = START - 2 * HOUR; // end of the bulk history
/** Of the events beyond one create per memory, this share are updates, the rest recalls. */
const UPDATE_SHARE = 0.375;
const BATCH = 1_000; // memories generated per staging statement
const AUDIT_BATCH = 2_000;
const SAMPLE_MS = 50;
const ADMIN_TOKEN = `bench-admin-${crypto.randomUUID()}`;
const INDEX = 'memories_embedding_idx';
const ROLLBACK_TARGET_S = 5;
const SNAPSHOT_TARGET_MS = 200;

// ---------- small helpers ----------

const rand = rng(42);
const int = (n: number) => Math.floor(rand() * n);
const VOCAB = (() => {
  const syllables = [...'bdfgklmnprstvz'].flatMap((c) => [...'aeiou'].map((v) => c + v));
  const words = new Set<string>();
  while (words.size < 2000) words.add(Array.from({ length: 2 + int(2) }, () => syllables[int(syllables.length)]).join(''));
  return [...words];
})();
const sentence = (min: number, max: number) => Array.from({ length: min + int(max - min + 1) }, () => VOCAB[int(VOCAB.length)]).join(' ');
const TAGS = ['work', 'personal', 'billing', 'infra', 'research', 'travel', 'health', 'family', 'ops', 'sales'];
const someTags = () => [...new Set(Array.from({ length: int(4) }, () => TAGS[int(TAGS.length)]))];
const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');

const MB = (bytes: number) => bytes / 2 ** 20;
const n0 = (x: number) => x.toLocaleString('en-US');

// A full collection before each memory baseline, so garbage of earlier steps does not count.
setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

/** Peak RSS and heap while `fn` runs, sampled every 50 ms (the process holds server, pg pool and client). */
async function withMemorySampling<T>(fn: () => Promise<T>) {
  gc();
  const base = process.memoryUsage();
  const peak = { rss: base.rss, heap: base.heapUsed };
  const sample = () => {
    const m = process.memoryUsage();
    peak.rss = Math.max(peak.rss, m.rss);
    peak.heap = Math.max(peak.heap, m.heapUsed);
  };
  const timer = setInterval(sample, SAMPLE_MS);
  try {
    const [out, ms] = await timed(fn);
    sample();
    return { out, ms, baseRss: MB(base.rss), peakRss: MB(peak.rss), baseHeap: MB(base.heapUsed), peakHeap: MB(peak.heap) };
  } finally {
    clearInterval(timer);
  }
}

// ---------- every SQL statement of a request, timed ----------

interface Traced {
  text: string;
  values: unknown[];
  ms: number;
}
let traceSink: Traced[] | null = null;
/** Times pg Client.query calls (promise and callback forms) while traceSink is set. Bench process only. */
{
  const proto = pg.Client.prototype as unknown as { query: (...a: unknown[]) => unknown };
  const original = proto.query;
  proto.query = function (this: unknown, ...a: unknown[]) {
    const sink = traceSink;
    if (!sink) return original.apply(this, a);
    const config = a[0] as string | { text?: string; values?: unknown[] };
    const text = typeof config === 'string' ? config : (config?.text ?? '');
    const values = Array.isArray(a[1]) ? a[1] : typeof config === 'object' ? (config?.values ?? []) : [];
    const t0 = performance.now();
    const done = () => sink.push({ text, values, ms: performance.now() - t0 });
    const cb = a.findIndex((x) => typeof x === 'function');
    if (cb >= 0) {
      const inner = a[cb] as (err: unknown, res: unknown) => void;
      a[cb] = (err: unknown, res: unknown) => {
        done();
        inner(err, res);
      };
      return original.apply(this, a);
    }
    const out = original.apply(this, a) as Promise<unknown> | undefined;
    return out && typeof out.then === 'function'
      ? out.then(
          (r) => (done(), r),
          (err: unknown) => (done(), Promise.reject(err)),
        )
      : out;
  };
}
async function traced<T>(fn: () => Promise<T>): Promise<[T, Traced[]]> {
  const sink: Traced[] = [];
  traceSink = sink;
  try {
    return [await fn(), sink];
  } finally {
    traceSink = null;
  }
}
const oneLine = (text: string) => text.replace(/\s+/g, ' ').trim();
const label = (text: string, n = 110) => {
  const s = oneLine(text);
  return s.length > n ? `${s.slice(0, n)}…` : s;
};
const isControl = (text: string) => /^(begin|commit|rollback|set |select pg_advisory)/i.test(oneLine(text));

// ---------- the server and the bulk connection ----------

interface Bulk {
  query<T = Record<string, unknown>>(text: string, params?: unknown[]): Promise<T[]>;
  notices: string[];
  close(): Promise<void>;
}
async function bulkClient(): Promise<Bulk> {
  const client = new pg.Client({ connectionString: process.env.DATABASE_URL });
  const notices: string[] = [];
  client.on('notice', (n) => notices.push(n.message ?? String(n)));
  await client.connect();
  return { notices, query: async (text, params) => (await client.query(text, params)).rows, close: () => client.end() };
}

interface Engram {
  node: NodeServices;
  url: string;
  close(): Promise<void>;
}
/** Wired as functions/node.ts does (job handlers, maintenance, runner), on 127.0.0.1:<free port>. */
async function startEngram(): Promise<Engram> {
  const config = parseConfig({
    PORT: '0',
    DATABASE_URL: process.env.DATABASE_URL,
    REDIS_URL: process.env.REDIS_URL,
    ADMIN_TOKEN,
    EMBEDDING_PROVIDER: 'hash',
    LOG_LEVEL: 'silent',
    RATE_LIMIT_SCALE: '1000',
  });
  const log = createLogger('silent');
  const node = await createNodeServices(config, { log, jobHandlers: jobHandlers(config, log), maintenance: maintenanceTasks });
  node.runner.start();
  const app = buildApp(() => node.services);
  const { server, url } = await new Promise<{ server: ServerType; url: string }>((resolve, reject) => {
    const s = serve({ fetch: app.fetch, port: 0, hostname: '127.0.0.1' }, (info) => resolve({ server: s, url: `http://127.0.0.1:${info.port}` }));
    s.once('error', reject);
  });
  return {
    node,
    url,
    async close() {
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        (server as { closeAllConnections?: () => void }).closeAllConnections?.();
      });
      await node.close();
    },
  };
}

/** A kept-alive socket may be closed by the server's idle timeout just as it is reused (after a long load): resent once. */
async function call(method: string, url: string, token: string, body?: unknown) {
  const init = {
    method,
    headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  };
  const res = await fetch(url, init).catch((err: { cause?: { code?: string } }) => {
    if (!['ECONNRESET', 'UND_ERR_SOCKET'].includes(err.cause?.code ?? '')) throw err;
    return fetch(url, init);
  });
  const text = await res.text();
  if (!res.ok) throw new Error(`${method} ${url}: ${res.status} ${text.slice(0, 300)}`);
  return (text.startsWith('{') ? JSON.parse(text) : text) as any;
}

// ---------- 1. the history ----------

interface StagedEvent {
  ord: number;
  memory_id: string;
  kind: string;
  at: string;
  before: unknown;
  after: unknown;
  vec: number | null;
  metadata: unknown;
}

/**
 * Generates the tenant's history memory by memory (creation order) into two unlogged staging
 * tables; vectors are referenced by number and made afterwards. Returns the ids and the next vector number.
 */
async function stageHistory(bulk: Bulk, tenantId: string) {
  const updates = Math.round((EVENTS - MEMORIES) * UPDATE_SHARE);
  const recalls = EVENTS - MEMORIES - updates;
  const updCount = new Int32Array(MEMORIES);
  const recCount = new Int32Array(MEMORIES);
  for (let i = 0; i < updates; i++) updCount[int(MEMORIES)]++;
  for (let i = 0; i < recalls; i++) recCount[int(MEMORIES)]++;
  await bulk.query(
    `CREATE UNLOGGED TABLE bench_cc_events (ord int, memory_id uuid, kind text, at timestamptz, before jsonb, after jsonb, vec int, metadata jsonb)`,
  );
  await bulk.query(`CREATE UNLOGGED TABLE bench_cc_memories (id uuid, observation text, tags text[], importance smallint, recall_count int,
    last_recalled_at timestamptz, context text, agent_id text, content_hash text, vec int, version int, created_at timestamptz, updated_at timestamptz)`);
  const ids: string[] = new Array(MEMORIES);
  const periods = new Map<string, number>();
  let vec = 1;
  let ord = 0;
  const span = 30 * DAY - MIN;
  for (let from = 0; from < MEMORIES; from += BATCH) {
    const events: StagedEvent[] = [];
    const finals: Record<string, unknown>[] = [];
    for (let i = from; i < Math.min(MEMORIES, from + BATCH); i++) {
      const created = Math.floor(H - 30 * DAY + ((i + rand()) * span) / MEMORIES);
      const id = uuidv7({ msecs: created });
      ids[i] = id;
      periods.set(periodOf(new Date(created)), (periods.get(periodOf(new Date(created))) ?? 0) + 1);
      const observation = sentence(6, 14);
      let row: MemoryRow = {
        id,
        tenant_id: tenantId,
        observation,
        tags: someTags(),
        importance: 1 + int(10),
        confidence: 1,
        recall_count: 0,
        last_recalled_at: null,
        superseded_by: null,
        context: rand() < 0.3 ? `session ${int(500)}` : null,
        agent_id: rand() < 0.8 ? `agent-${1 + int(8)}` : null,
        space_id: null,
        content_hash: sha256(observation),
        expires_at: null,
        source_kind: 'user',
        source_via: 'api',
        source_key_id: null,
        source_ref: null,
        trust: 'verified',
        occurred_at: null,
        version: 1,
        created_at: new Date(created),
        updated_at: new Date(created),
      };
      let rowVec = vec++;
      events.push({
        ord: ord++,
        memory_id: id,
        kind: 'create',
        at: new Date(created).toISOString(),
        before: null,
        after: toMemoryDto(row),
        vec: rowVec,
        metadata: {},
      });
      const later = (kind: 'update' | 'recall') => ({ kind, at: created + 1 + Math.floor(rand() * Math.max(1, H - created - 2)) });
      const steps = [...Array.from({ length: updCount[i] }, () => later('update')), ...Array.from({ length: recCount[i] }, () => later('recall'))].sort(
        (a, b) => a.at - b.at,
      );
      for (const s of steps) {
        const at = new Date(s.at);
        if (s.kind === 'recall') {
          row = { ...row, recall_count: row.recall_count + 1, last_recalled_at: at };
          events.push({
            ord: ord++,
            memory_id: id,
            kind: 'recall',
            at: at.toISOString(),
            before: null,
            after: null,
            vec: null,
            metadata: { query: sentence(3, 5), mode: 'hybrid' },
          });
          continue;
        }
        const before = toMemoryDto(row);
        const r = rand();
        if (r < 0.5) {
          const text = sentence(6, 14);
          row = { ...row, observation: text, content_hash: sha256(text) };
          rowVec = vec++;
        } else if (r < 0.75) row = { ...row, importance: 1 + ((row.importance + int(9)) % 10) };
        else row = { ...row, tags: someTags() };
        row = { ...row, version: row.version + 1, updated_at: at };
        events.push({ ord: ord++, memory_id: id, kind: 'update', at: at.toISOString(), before, after: toMemoryDto(row), vec: rowVec, metadata: {} });
      }
      finals.push({
        id,
        observation: row.observation,
        tags: row.tags,
        importance: row.importance,
        recall_count: row.recall_count,
        last_recalled_at: row.last_recalled_at ? new Date(row.last_recalled_at).toISOString() : null,
        context: row.context,
        agent_id: row.agent_id,
        content_hash: row.content_hash,
        vec: rowVec,
        version: row.version,
        created_at: new Date(row.created_at).toISOString(),
        updated_at: new Date(row.updated_at).toISOString(),
      });
    }
    await bulk.query(
      `INSERT INTO bench_cc_events SELECT r.ord, r.memory_id, r.kind, r.at, r.before, r.after, r.vec, r.metadata
       FROM jsonb_to_recordset($1::jsonb) AS r(ord int, memory_id uuid, kind text, at timestamptz, before jsonb, after jsonb, vec int, metadata jsonb)`,
      [JSON.stringify(events)],
    );
    await bulk.query(
      `INSERT INTO bench_cc_memories SELECT * FROM jsonb_to_recordset($1::jsonb) AS r(id uuid, observation text, tags text[], importance smallint,
         recall_count int, last_recalled_at timestamptz, context text, agent_id text, content_hash text, vec int, version int, created_at timestamptz, updated_at timestamptz)`,
      [JSON.stringify(finals)],
    );
  }
  return { ids, vectorsUsed: vec - 1, periods, updates, recalls };
}

/** Random unit 512-d vectors (Gaussian components, Box-Muller), numbered from 1, made in SQL on two connections. */
async function makeVectors(count: number) {
  const bulk = await bulkClient();
  await bulk.query('CREATE UNLOGGED TABLE bench_cc_vectors (id int PRIMARY KEY, v vector(512) NOT NULL)');
  await bulk.close();
  const parts = 2;
  await Promise.all(
    Array.from({ length: parts }, async (_, p) => {
      const c = await bulkClient();
      const lo = 1 + Math.floor((p * count) / parts);
      const hi = Math.floor(((p + 1) * count) / parts);
      // `+ 0 * g` makes the inner query depend on the row, so each row gets its own vector.
      await c.query(
        `INSERT INTO bench_cc_vectors (id, v)
       SELECT g, l2_normalize(ARRAY(SELECT sqrt(-2 * ln(1 - random())) * cos(2 * pi() * random()) + 0 * g FROM generate_series(1, 512))::vector(512))
       FROM generate_series($1::int, $2::int) g`,
        [lo, hi],
      );
      await c.close();
    }),
  );
}

/** Appends `count` entries to the tenant's chain in one transaction, hashed exactly as shared/platform/data/audit.ts appendAudit does. */
async function appendAuditChain(
  bulk: Bulk,
  tenantId: string,
  count: number,
  entry: (i: number) => {
    at: Date;
    operation: string;
    resource_type: string;
    resource_id: string | null;
    actor: string | null;
    metadata: Record<string, unknown>;
  },
) {
  await bulk.query('BEGIN');
  try {
    await bulk.query('INSERT INTO audit_heads (tenant_id) VALUES ($1) ON CONFLICT DO NOTHING', [tenantId]);
    const [head] = await bulk.query<{ seq: string; hash: string }>('SELECT seq, hash FROM audit_heads WHERE tenant_id = $1 FOR UPDATE', [tenantId]);
    let seq = Number(head.seq);
    let prev = head.hash;
    for (let done = 0; done < count; done += AUDIT_BATCH) {
      const batch: Record<string, unknown>[] = [];
      for (let i = done; i < Math.min(count, done + AUDIT_BATCH); i++) {
        const e = entry(i);
        seq += 1;
        const fields = {
          id: newId('audit'),
          tenant_id: tenantId,
          seq,
          created_at: e.at.toISOString(),
          operation: e.operation,
          resource_type: e.resource_type,
          resource_id: e.resource_id,
          actor: e.actor,
          metadata: e.metadata,
        };
        const hash = sha256(prev + auditHashInput(fields));
        batch.push({ ...fields, request_id: null, prev_hash: prev, entry_hash: hash });
        prev = hash;
      }
      await bulk.query(
        `INSERT INTO audit_log (tenant_id, seq, id, created_at, operation, resource_type, resource_id, actor, request_id, metadata, prev_hash, entry_hash)
         SELECT r.tenant_id, r.seq, r.id, r.created_at, r.operation, r.resource_type, r.resource_id, r.actor, r.request_id, r.metadata, r.prev_hash, r.entry_hash
         FROM jsonb_to_recordset($1::jsonb) AS r(tenant_id text, seq bigint, id text, created_at timestamptz, operation text, resource_type text,
           resource_id text, actor text, request_id text, metadata jsonb, prev_hash text, entry_hash text)`,
        [JSON.stringify(batch)],
      );
    }
    await bulk.query('UPDATE audit_heads SET seq = $2, hash = $3 WHERE tenant_id = $1', [tenantId, seq, prev]);
    await bulk.query('COMMIT');
    return seq;
  } catch (err) {
    await bulk.query('ROLLBACK');
    throw err;
  }
}

const MEMORY_SELECT = `SELECT id, tenant_id, observation, tags, importance, confidence, recall_count, last_recalled_at, superseded_by, context,
  agent_id, space_id, content_hash, expires_at, version, created_at, updated_at FROM memories`;

/** Step 2 as functions/memories/service.ts patch writes it (row, `update` event, audit entry), then search recall bookkeeping. */
async function changeViaSql(bulk: Bulk, tenantId: string, actor: string, ids: string[], T: number, firstVec: number) {
  const order = ids.map((id, i) => ({ id, at: T + 1 + Math.floor(rand() * (HOUR - 2)), vec: firstVec + i })).sort((a, b) => a.at - b.at);
  const audits: { at: Date; id: string; hash: string; agent: string | null }[] = [];
  for (let from = 0; from < order.length; from += BATCH) {
    const chunk = order.slice(from, from + BATCH);
    const current = new Map(
      (await bulk.query<MemoryRow>(`${MEMORY_SELECT} WHERE tenant_id = $1 AND id = ANY($2::uuid[])`, [tenantId, chunk.map((c) => c.id)])).map((r) => [r.id, r]),
    );
    const changes = chunk.map((c, k) => {
      const row = current.get(c.id)!;
      const text = sentence(6, 14);
      const after = toMemoryDto({ ...row, observation: text, content_hash: sha256(text), version: Number(row.version) + 1, updated_at: new Date(c.at) });
      audits.push({ at: new Date(c.at), id: after.uuid, hash: after.hash, agent: after.agent_id });
      return {
        ord: from + k,
        id: c.id,
        observation: text,
        content_hash: after.hash,
        vec: c.vec,
        at: new Date(c.at).toISOString(),
        before: toMemoryDto(row),
        after,
      };
    });
    await bulk.query('BEGIN');
    await bulk.query(
      `UPDATE memories m SET observation = r.observation, content_hash = r.content_hash, embedding = v.v, version = m.version + 1, updated_at = r.at
       FROM jsonb_to_recordset($2::jsonb) AS r(id uuid, observation text, content_hash text, vec int, at timestamptz)
       JOIN bench_cc_vectors v ON v.id = r.vec
       WHERE m.tenant_id = $1 AND m.id = r.id`,
      [tenantId, JSON.stringify(changes)],
    );
    await bulk.query(
      `INSERT INTO memory_events (tenant_id, memory_id, kind, at, actor, request_id, before, after, embedding)
       SELECT $1, r.id, 'update', r.at, $3, 'bench-change', r.before, r.after, v.v
       FROM jsonb_to_recordset($2::jsonb) AS r(ord int, id uuid, at timestamptz, before jsonb, after jsonb, vec int)
       JOIN bench_cc_vectors v ON v.id = r.vec ORDER BY r.at, r.ord`,
      [tenantId, JSON.stringify(changes), actor],
    );
    await bulk.query('COMMIT');
  }
  await appendAuditChain(bulk, tenantId, audits.length, (i) => ({
    at: audits[i].at,
    operation: 'memory.update',
    resource_type: 'memory',
    resource_id: audits[i].id,
    actor,
    metadata: { changed: ['observation'], hash: audits[i].hash, agent_id: audits[i].agent },
  }));
  // Recalls after the changes (events that rollback must skip), as search's bookkeeping writes them.
  const recalls = Array.from({ length: ids.length }, (_, i) => ({ ord: i, id: ids[int(ids.length)], at: T + HOUR + Math.floor(rand() * (HOUR / 2)) })).sort(
    (a, b) => a.at - b.at,
  );
  const per = new Map<string, { n: number; last: number }>();
  for (const r of recalls) per.set(r.id, { n: (per.get(r.id)?.n ?? 0) + 1, last: r.at });
  await bulk.query('BEGIN');
  await bulk.query(
    `UPDATE memories m SET recall_count = m.recall_count + r.n, last_recalled_at = r.last
     FROM jsonb_to_recordset($2::jsonb) AS r(id uuid, n int, last timestamptz) WHERE m.tenant_id = $1 AND m.id = r.id`,
    [tenantId, JSON.stringify([...per].map(([id, p]) => ({ id, n: p.n, last: new Date(p.last).toISOString() })))],
  );
  await bulk.query(
    `INSERT INTO memory_events (tenant_id, memory_id, kind, at, actor, request_id, metadata)
     SELECT $1, r.id, 'recall', r.at, $3, 'bench-recall', jsonb_build_object('query', 'bench', 'mode', 'hybrid')
     FROM jsonb_to_recordset($2::jsonb) AS r(ord int, id uuid, at timestamptz) ORDER BY r.at, r.ord`,
    [tenantId, JSON.stringify(recalls.map((r) => ({ ...r, at: new Date(r.at).toISOString() }))), actor],
  );
  await bulk.query('COMMIT');
}

/** EXPLAIN (ANALYZE, BUFFERS) of a traced statement with its own parameters; writes run inside a transaction that is rolled back. */
async function explain(bulk: Bulk, t: Traced, trace: Traced[]) {
  const settings = trace.filter((x) => /^set /i.test(oneLine(x.text)));
  await bulk.query('BEGIN');
  try {
    for (const x of settings) await bulk.query(x.text, x.values);
    const plan = await bulk.query<{ 'QUERY PLAN': string }>(`EXPLAIN (ANALYZE, BUFFERS) ${t.text}`, t.values);
    return { plan: plan.map((r) => r['QUERY PLAN']), settings: settings.map((x) => oneLine(x.text)) };
  } finally {
    await bulk.query('ROLLBACK');
  }
}
/** The same statement with the HNSW index dropped inside a transaction that is rolled back: what the index costs it. */
async function withoutHnsw(bulk: Bulk, t: Traced) {
  await bulk.query('BEGIN');
  try {
    await bulk.query(`DROP INDEX ${INDEX}`);
    return (await timed(() => bulk.query(t.text, t.values)))[1];
  } finally {
    await bulk.query('ROLLBACK');
  }
}
const clip = (line: string, n = 240) => (line.length > n ? `${line.slice(0, n)}…` : line);
const planSummary = (lines: string[], top = 22) => [
  ...lines.slice(0, top).map((l) => clip(l)),
  ...(lines.length > top ? [`  … (${lines.length - top} more plan lines)`] : []),
  ...lines.slice(top).filter((l) => /^(Planning|Execution) Time/.test(l)),
];

function breakdown(trace: Traced[], top = 8) {
  const statements = trace.filter((t) => !isControl(t.text));
  const control = trace.filter((t) => isControl(t.text));
  const rowsOut = [...statements]
    .sort((a, b) => b.ms - a.ms)
    .slice(0, top)
    .map((t) => [f1(t.ms), `\`${label(t.text)}\``]);
  const sum = (xs: Traced[]) => xs.reduce((n, t) => n + t.ms, 0);
  rowsOut.push([f1(sum(statements)), `all ${statements.length} statements (${control.length} BEGIN/COMMIT/SET/advisory lock: ${f1(sum(control))} ms)`]);
  return table(['ms', 'statement'], rowsOut);
}

// ---------- main ----------

let failed = false;
let engram: Engram | null = null;
let bulk: Bulk | null = null;
let tenantId: string | null = null;
const out: string[] = [];
const say = (s = '') => out.push(s);
const progress = (s: string) => console.error(`[${f0(performance.now() / 1000)} s] ${s}`);
try {
  bulk = await bulkClient();
  const indexSql = await indexDefinition(INDEX);
  const [{ n: existing }] = await bulk.query<{ n: string }>('SELECT count(*) AS n FROM memories');
  if (Number(existing) > 0) throw new Error(`refusing to run: memories already holds ${existing} rows; the bench drops ${INDEX}. Use an empty database.`);
  await bulk.query('DROP TABLE IF EXISTS bench_cc_events, bench_cc_memories, bench_cc_vectors');

  engram = await startEngram();
  const url = engram.url;
  const tenant = await call('POST', `${url}/admin/v1/tenants`, ADMIN_TOKEN, { email: `bench-cc-${crypto.randomUUID()}@example.com`, tier: 'enterprise' });
  const key = tenant.api_key as string;
  const keyId = tenant.key_id as string;
  tenantId = tenant.tenant_id as string;
  const tid = tenantId;
  const settings = Object.fromEntries(
    (
      await bulk.query<{ name: string; setting: string }>(
        `SELECT name, current_setting(name) AS setting FROM pg_settings WHERE name IN ('shared_buffers', 'work_mem', 'maintenance_work_mem', 'max_parallel_maintenance_workers', 'server_version')`,
      )
    ).map((r) => [r.name, r.setting]),
  );
  console.log(
    `engram change-control bench: node ${process.version}, ${availableParallelism()} cores (load ${loadavg()[0].toFixed(1)}), Postgres ${settings.server_version}${process.env.REDIS_URL ? ' + redis' : ''}; shared_buffers ${settings.shared_buffers}, work_mem ${settings.work_mem}, maintenance_work_mem ${settings.maintenance_work_mem}, max_parallel_maintenance_workers ${settings.max_parallel_maintenance_workers}`,
  );
  // The code measured, as it is in the work tree now (replay was being written while this bench was).
  const versions = await Promise.all(
    [
      'functions/rollback/service.ts',
      'functions/rollback/queries.ts',
      'shared/memory/history.ts',
      'functions/replay/queries.ts',
      'functions/audit/verify.ts',
    ].map(async (f) => `${f} ${sha256(await readFile(new URL(`../../${f}`, import.meta.url), 'utf8')).slice(0, 10)}`),
  );
  console.log(`code (sha256 of the file, first 10 hex): ${versions.join(', ')}`);
  console.log(
    `memories ${n0(MEMORIES)}, bulk events ${n0(EVENTS)}, changed ${n0(CHANGED)} via ${VIA}, audit chain ${n0(AUDIT_FIRST)} then ${n0(AUDIT)}, ${CALLS} calls per snapshot cell`,
  );

  // ---- 1. history ----
  const load: string[][] = [];
  progress('staging the history');
  await bulk.query(`DROP INDEX IF EXISTS ${INDEX}`);
  const [staged, stageMs] = await timed(() => stageHistory(bulk!, tid));
  load.push([
    'generate snapshots in Node + stage (unlogged)',
    `${n0(EVENTS)} events, ${n0(MEMORIES)} rows`,
    f1(stageMs / 1000),
    f0(EVENTS / (stageMs / 1000)),
    `${n0(staged.updates)} updates, ${n0(staged.recalls)} recalls`,
  ]);
  const vectorCount = staged.vectorsUsed + (VIA === 'sql' ? CHANGED : 0);
  progress(`making ${vectorCount} vectors`);
  const [, vecMs] = await timed(() => makeVectors(vectorCount));
  load.push(['random unit vectors in SQL (2 connections)', n0(vectorCount), f1(vecMs / 1000), f0(vectorCount / (vecMs / 1000)), '']);
  progress('inserting memories');
  const [, memMs] = await timed(() =>
    bulk!.query(
      `INSERT INTO memories (id, tenant_id, observation, tags, importance, confidence, recall_count, last_recalled_at, context, agent_id, content_hash, embedding, version, created_at, updated_at)
     SELECT s.id, $1, s.observation, s.tags, s.importance, 1, s.recall_count, s.last_recalled_at, s.context, s.agent_id, s.content_hash, v.v, s.version, s.created_at, s.updated_at
     FROM bench_cc_memories s JOIN bench_cc_vectors v ON v.id = s.vec ORDER BY s.created_at`,
      [tid],
    ),
  );
  load.push(['INSERT memories (HNSW dropped)', n0(MEMORIES), f1(memMs / 1000), f0(MEMORIES / (memMs / 1000)), 'in creation order']);
  progress('inserting memory_events');
  await bulk.query(`SET work_mem = '1GB'`); // this session only: the time-order sort of the staged events
  const [, evMs] = await timed(() =>
    bulk!.query(
      `INSERT INTO memory_events (tenant_id, memory_id, kind, at, actor, request_id, before, after, embedding, metadata)
     SELECT $1, s.memory_id, s.kind, s.at, $2, 'bench-load', s.before, s.after, v.v, s.metadata
     FROM bench_cc_events s LEFT JOIN bench_cc_vectors v ON v.id = s.vec ORDER BY s.at, s.ord`,
      [tid, keyId],
    ),
  );
  await bulk.query('RESET work_mem');
  load.push(['INSERT memory_events (time order, both btree indexes)', n0(EVENTS), f1(evMs / 1000), f0(EVENTS / (evMs / 1000)), '']);
  await bulk.query(
    `INSERT INTO usage_counters (tenant_id, metric, bucket, value) SELECT $1, 'memories', p.key, p.value::bigint FROM jsonb_each_text($2::jsonb) p
     ON CONFLICT (tenant_id, metric, bucket) DO UPDATE SET value = usage_counters.value + EXCLUDED.value`,
    [tid, JSON.stringify(Object.fromEntries(staged.periods))],
  );
  await bulk.query(
    `INSERT INTO usage_counters (tenant_id, metric, bucket, value) VALUES ($1, 'memories_live', 'all', $2)
     ON CONFLICT (tenant_id, metric, bucket) DO UPDATE SET value = usage_counters.value + EXCLUDED.value`,
    [tid, MEMORIES],
  );
  await bulk.query('DROP TABLE bench_cc_events, bench_cc_memories');
  await bulk.query('ANALYZE memories');
  await bulk.query('ANALYZE memory_events');
  progress('building the HNSW index');
  bulk.notices.length = 0;
  if (args['maintenance-work-mem']) await bulk.query(`SET maintenance_work_mem = '${args['maintenance-work-mem'].replace(/'/g, '')}'`);
  const [mwm] = await bulk.query<{ maintenance_work_mem: string }>('SHOW maintenance_work_mem');
  const [, buildMs] = await timed(() => bulk!.query(indexSql));
  await bulk.query('RESET maintenance_work_mem');
  const buildNotices = bulk.notices.map((s) => s.replace(/\s+/g, ' '));
  const [sizes] = await bulk.query<{ idx: string; mem: string; ev: string }>(
    `SELECT pg_relation_size('${INDEX}') AS idx, pg_total_relation_size('memories') AS mem, pg_total_relation_size('memory_events') AS ev`,
  );
  load.push([
    `HNSW build \`${oneLine(indexSql)}\``,
    n0(MEMORIES),
    f1(buildMs / 1000),
    f0(MEMORIES / (buildMs / 1000)),
    `maintenance_work_mem ${mwm.maintenance_work_mem}; index ${f0(MB(Number(sizes.idx)))} MB; ${buildNotices.length ? buildNotices.join('; ') : 'no notices'}`,
  ]);

  // ---- 2. the changes after T ----
  const chosen = new Set<number>();
  while (chosen.size < CHANGED) chosen.add(int(MEMORIES));
  const changedIds = [...chosen].map((i) => staged.ids[i]);
  let T: number;
  progress(`changing ${CHANGED} memories via ${VIA}`);
  if (VIA === 'sql') {
    T = H;
    const [, ms] = await timed(() => changeViaSql(bulk!, tid, keyId, changedIds, T, staged.vectorsUsed + 1));
    load.push([
      'changes after T via SQL (patch mimic + audit) + as many recalls',
      `${n0(CHANGED)} + ${n0(CHANGED)}`,
      f1(ms / 1000),
      f0((2 * CHANGED) / (ms / 1000)),
      'T = start − 2 h; updates in (T, T+1 h], recalls after',
    ]);
  } else {
    T = Date.now();
    await new Promise((r) => setTimeout(r, 5));
    const [, ms] = await timed(() =>
      pool(changedIds, 8, async (id) => {
        await call('PATCH', `${url}/v1/memories/urn:uuid:${id}`, key, { observation: sentence(6, 14) });
      }),
    );
    const searches = Math.ceil(CHANGED / 10);
    const [, sms] = await timed(() =>
      pool(
        Array.from({ length: searches }, () => sentence(3, 5)),
        8,
        async (q) => {
          await call('GET', `${url}/v1/memories/search?${new URLSearchParams({ q, limit: '10', mode: 'hybrid' })}`, key);
        },
      ),
    );
    load.push(['changes after T via HTTP PATCH (8 streams)', n0(CHANGED), f1(ms / 1000), f0(CHANGED / (ms / 1000)), 'T = just before the first PATCH']);
    load.push(['recalls after T via HTTP search (hybrid, limit 10, 8 streams)', n0(searches), f1(sms / 1000), f0(searches / (sms / 1000)), '']);
  }
  // The events written with SQL above bypassed recordMemoryEvents: derive their intervals as migrations/0007 and 0008 do.
  const [, statesMs] = await timed(() => rebuildReplayIntervals(engram!.node.services.db, tid));
  load.push(['memory_states, edge_states rebuilt from the event log', '', f1(statesMs / 1000), '', 'as migrations/0007, 0008 backfill']);
  await bulk.query('VACUUM ANALYZE memory_states, edge_states');
  await bulk.query('ANALYZE memory_events');
  const kinds = await bulk.query<{ kind: string; n: string }>(
    'SELECT kind, count(*) AS n FROM memory_events WHERE tenant_id = $1 GROUP BY kind ORDER BY kind',
    [tid],
  );
  const targetIso = new Date(T).toISOString();

  // ---- 3a. preview and rollback ----
  progress('preview');
  await call('GET', `${url}/v1/usage`, key); // warm the connection and key path
  const [[preview, previewTrace], previewMs] = await timed(() =>
    traced(() => call('GET', `${url}/v1/rollback/preview?target=${encodeURIComponent(targetIso)}`, key)),
  );
  progress('rollback');
  const maxRssBefore = process.resourceUsage().maxRSS / 1024;
  const rb = await withMemorySampling(() => traced(() => call('POST', `${url}/v1/rollback`, key, { target: targetIso })));
  const [rollback, rollbackTrace] = rb.out;
  const maxRssAfter = process.resourceUsage().maxRSS / 1024;
  // Correctness: every changed memory has the content and the embedding of its state at T again.
  const [check] = await bulk.query<{ n: string; hash_ok: string; emb_ok: string }>(
    `SELECT count(*) AS n, count(*) FILTER (WHERE m.content_hash = f.before->>'hash') AS hash_ok,
            count(*) FILTER (WHERE m.embedding = (SELECT x.embedding FROM memory_events x WHERE x.tenant_id = $1 AND x.memory_id = f.memory_id
                                                   AND x.at <= $2 AND x.embedding IS NOT NULL ORDER BY x.at DESC, x.id DESC LIMIT 1)) AS emb_ok
     FROM (SELECT DISTINCT ON (memory_id) memory_id, before FROM memory_events
           WHERE tenant_id = $1 AND kind = 'update' AND at > $2 ORDER BY memory_id, at, id) f
     JOIN memories m ON m.id = f.memory_id AND m.tenant_id = $1`,
    [tid, targetIso],
  );
  const [live] = await bulk.query<{ n: string }>('SELECT count(*) AS n FROM memories WHERE tenant_id = $1', [tid]);

  // ---- 3b. snapshots ----
  const nowIso = new Date().toISOString();
  const moments = [
    { name: 'T − 15 d', at: new Date(T - 15 * DAY).toISOString() },
    { name: 'T (before the changes)', at: targetIso },
    { name: 'now (after the rollback)', at: nowIso },
  ];
  const offsets = [0, Math.floor(MEMORIES / 2), Math.max(0, MEMORIES - 500)];
  const snapRows: string[][] = [];
  let slowestSnap: { p50: number; trace: Traced; all: Traced[]; name: string } | null = null;
  let worstSnapP95 = 0;
  for (const m of moments) {
    progress(`snapshots at ${m.name}`);
    await call('GET', `${url}/v1/replay/snapshot?${new URLSearchParams({ at: m.at, limit: '500', offset: '0' })}`, key); // warm-up
    for (const offset of offsets) {
      const ms: number[] = [];
      let first: any = null;
      let trace: Traced[] = [];
      for (let i = 0; i < CALLS; i++) {
        const [[res, tr], t] = await timed(() =>
          traced(() => call('GET', `${url}/v1/replay/snapshot?${new URLSearchParams({ at: m.at, limit: '500', offset: String(offset) })}`, key)),
        );
        ms.push(t);
        if (i === 0) [first, trace] = [res, tr];
      }
      const p50 = pct(ms, 50);
      const p95 = pct(ms, 95);
      worstSnapP95 = Math.max(worstSnapP95, p95);
      const main = trace.filter((t) => !isControl(t.text)).sort((a, b) => b.ms - a.ms)[0];
      if (main && (!slowestSnap || p50 > slowestSnap.p50)) slowestSnap = { p50, trace: main, all: trace, name: `${m.name}, offset ${offset}` };
      snapRows.push([
        m.name,
        n0(offset),
        n0(first.total_memories),
        String(first.memories.length),
        n0(first.total_edges),
        String(CALLS),
        f1(p50),
        f1(p95),
        f1(Math.max(...ms)),
        `${p95 < SNAPSHOT_TARGET_MS ? 'ok' : 'MISSED'}`,
      ]);
    }
  }

  // ---- 3c. audit chain and verify at two lengths ----
  const chainLength = async () => {
    const [h] = await bulk!.query<{ seq: string; first_seq: string }>('SELECT seq, first_seq FROM audit_heads WHERE tenant_id = $1', [tid]);
    return Number(h.seq) - Number(h.first_seq) + 1;
  };
  const auditEntry = (i: number) => {
    const id = staged.ids[int(MEMORIES)];
    const update = i % 3 === 0;
    return {
      at: new Date(),
      operation: update ? 'memory.update' : 'memory.create',
      resource_type: 'memory',
      resource_id: `urn:uuid:${id}`,
      actor: keyId,
      metadata: update
        ? { changed: ['importance'], hash: sha256(id), agent_id: `agent-${1 + (i % 8)}` }
        : { hash: sha256(id), agent_id: null, conflict: false, superseded: [] },
    };
  };
  const verifies: {
    retained: number;
    length: number;
    appended: number;
    appendS: number;
    ms: number;
    res: any;
    baseRss: number;
    peakRss: number;
    baseHeap: number;
    peakHeap: number;
  }[] = [];
  for (const length of [AUDIT_FIRST, AUDIT]) {
    const have = await chainLength();
    const add = Math.max(0, length - have);
    progress(`appending ${add} audit entries`);
    const [, appendMs] = await timed(() => appendAuditChain(bulk!, tid, add, auditEntry));
    await bulk.query('ANALYZE audit_log');
    progress(`verify at ${length}`);
    await call('GET', `${url}/v1/usage`, key);
    const v = await withMemorySampling(() => call('GET', `${url}/v1/audit/verify`, key));
    gc();
    const retained = MB(process.memoryUsage().heapUsed) - v.baseHeap;
    verifies.push({
      retained,
      length: await chainLength(),
      appended: add,
      appendS: appendMs / 1000,
      ms: v.ms,
      res: v.out,
      baseRss: v.baseRss,
      peakRss: v.peakRss,
      baseHeap: v.baseHeap,
      peakHeap: v.peakHeap,
    });
    load.push([
      `audit entries via SQL (canonicalize + sha256 chain, ${AUDIT_BATCH}/INSERT)`,
      n0(add),
      f1(appendMs / 1000),
      f0(add / (appendMs / 1000)),
      `chain now ${n0(await chainLength())}`,
    ]);
  }

  // ---- EXPLAIN of the slowest statements ----
  progress('EXPLAIN');
  const slowestRollback = [...rollbackTrace].filter((t) => !isControl(t.text)).sort((a, b) => b.ms - a.ms)[0];
  const rollbackPlan = slowestRollback ? await explain(bulk, slowestRollback, rollbackTrace) : { plan: [], settings: [] };
  const writesMemories = slowestRollback && /^(update|insert into|delete from) memories /i.test(oneLine(slowestRollback.text));
  const noHnswMs = writesMemories ? await withoutHnsw(bulk, slowestRollback) : null;
  const slowestPreview = [...previewTrace].filter((t) => !isControl(t.text)).sort((a, b) => b.ms - a.ms)[0];
  const snapPlan = slowestSnap ? await explain(bulk, slowestSnap.trace, slowestSnap.all) : { plan: [], settings: [] };

  // ---- report ----
  say(`\n### Load (Postgres; tenant ${tid})\n`);
  say(table(['step', 'rows', 'seconds', 'rows/s', 'notes'], load));
  say(
    `\nmemory_events of the tenant by kind: ${kinds.map((k) => `${k.kind} ${n0(Number(k.n))}`).join(', ')} (before the rollback); memory_events ${f0(MB(Number(sizes.ev)))} MB, memories ${f0(MB(Number(sizes.mem)))} MB with indexes (after the load)`,
  );

  const [v1, v2] = verifies;
  const growth = (v: typeof v1) => v.peakRss - v.baseRss;
  const heapGrowth = (v: typeof v1) => v.peakHeap - v.baseHeap;
  const constant = growth(v2) <= Math.max(growth(v1) * 1.25, growth(v1) + 16);
  const reverted = Number(rollback.memories_reverted);
  say(`\n### Change control (T = ${targetIso}; ${n0(CHANGED)} memories changed after T via ${VIA})\n`);
  say(
    table(
      ['measurement', 'value', 'target', 'verdict'],
      [
        [
          'GET /v1/rollback/preview?target=T',
          `${f0(previewMs)} ms; modified ${preview.artifacts_modified}, reverted ${preview.memories_reverted}, deleted ${preview.artifacts_deleted}, restored ${preview.artifacts_restored}`,
          '—',
          preview.memories_reverted === CHANGED ? 'counts ok' : 'COUNTS DIFFER',
        ],
        [
          'POST /v1/rollback {target: T}',
          `${f2(rb.ms / 1000)} s`,
          `< ${ROLLBACK_TARGET_S} s for ${n0(CHANGED)} changed`,
          rb.ms / 1000 < ROLLBACK_TARGET_S ? 'ok' : 'MISSED',
        ],
        [
          'rollback counts',
          `reverted ${reverted}, removed ${rollback.operations_undone}, restored ${rollback.artifacts_restored}`,
          `reverted = ${n0(CHANGED)}`,
          reverted === CHANGED && rollback.operations_undone === 0 && rollback.artifacts_restored === 0 ? 'ok' : 'DIFFERS',
        ],
        [
          'state at T back (live rows)',
          `${check.hash_ok}/${check.n} content hashes, ${check.emb_ok}/${check.n} embeddings; ${n0(Number(live.n))} live memories`,
          `${n0(CHANGED)}/${n0(CHANGED)}, ${n0(MEMORIES)} live`,
          Number(check.hash_ok) === CHANGED && Number(check.emb_ok) === CHANGED && Number(live.n) === MEMORIES ? 'ok' : 'WRONG',
        ],
        [
          'process RSS during the rollback (50 ms samples)',
          `${f0(rb.baseRss)} → peak ${f0(rb.peakRss)} MB (+${f0(rb.peakRss - rb.baseRss)}); heap ${f0(rb.baseHeap)} → ${f0(rb.peakHeap)} MB; lifetime max RSS ${f0(maxRssBefore)} → ${f0(maxRssAfter)} MB`,
          '—',
          '—',
        ],
        [
          `GET /v1/replay/snapshot (limit 500), worst p95 of ${snapRows.length} cells`,
          `${f1(worstSnapP95)} ms`,
          `< ${SNAPSHOT_TARGET_MS} ms a page`,
          worstSnapP95 < SNAPSHOT_TARGET_MS ? 'ok' : 'MISSED',
        ],
        ...verifies.map((v) => [
          `GET /v1/audit/verify, chain ${n0(v.length)}`,
          `${f2(v.ms / 1000)} s, valid ${v.res.valid}, checked ${n0(v.res.checked.audit_entries)} entries + ${n0(v.res.checked.memories)} memories; RSS ${f0(v.baseRss)} → ${f0(v.peakRss)} MB (+${f0(growth(v))}), heap +${f0(heapGrowth(v))} MB at peak, ${v.retained >= 0 ? '+' : ''}${f0(v.retained)} MB after a full GC`,
          'valid: true',
          v.res.valid === true && v.res.failure_count === 0 ? 'ok' : 'INVALID',
        ]),
        [
          `verify memory, chain ${n0(v1.length)} → ${n0(v2.length)} (${f1(v2.length / v1.length)}×)`,
          `RSS growth +${f0(growth(v1))} → +${f0(growth(v2))} MB, heap growth +${f0(heapGrowth(v1))} → +${f0(heapGrowth(v2))} MB`,
          'constant (growth at the longer chain ≤ max(1.25×, +16 MB) of the shorter)',
          constant ? 'ok' : `GROWS at peak${verifies.every((v) => v.retained < 8) ? ' (nothing retained after GC)' : ''}`,
        ],
      ],
    ),
  );

  say('\n### Replay snapshot pages (sequential GETs, limit 500)\n');
  say(table(['at', 'offset', 'total_memories', 'returned', 'total_edges', 'calls', 'p50 ms', 'p95 ms', 'max ms', `p95 < ${SNAPSHOT_TARGET_MS} ms`], snapRows));

  say('\n### SQL statements of the preview (client-side time per statement, slowest first)\n');
  say(breakdown(previewTrace));
  say('\n### SQL statements of the rollback (the job runner, woken at commit, may add outbox statements)\n');
  say(breakdown(rollbackTrace));

  if (slowestRollback) {
    say(
      `\n### EXPLAIN (ANALYZE, BUFFERS) of the slowest rollback statement (${f0(slowestRollback.ms)} ms in the rollback; re-run afterwards with the same parameters${/^(update|insert|delete)/i.test(oneLine(slowestRollback.text)) ? ', in a transaction rolled back' : ''})\n`,
    );
    say('```');
    say(label(slowestRollback.text, 400));
    if (rollbackPlan.settings.length) say(`(with ${rollbackPlan.settings.join('; ')})`);
    say(planSummary(rollbackPlan.plan).join('\n'));
    say('```');
    if (noHnswMs !== null)
      say(
        `\nThe same statement with ${INDEX} dropped (inside a transaction rolled back): ${f0(noHnswMs)} ms, against ${f0(slowestRollback.ms)} ms in the rollback.`,
      );
  }
  if (slowestPreview && slowestRollback && oneLine(slowestPreview.text) !== oneLine(slowestRollback.text))
    say(`\n(slowest preview statement: ${f0(slowestPreview.ms)} ms \`${label(slowestPreview.text)}\`)`);
  if (slowestSnap) {
    say(`\n### EXPLAIN (ANALYZE, BUFFERS) of the snapshot statement of the slowest cell (${slowestSnap.name}, p50 ${f0(slowestSnap.p50)} ms)\n`);
    say('```');
    if (snapPlan.settings.length) say(`(with ${snapPlan.settings.join('; ')})`);
    say(planSummary(snapPlan.plan, 40).join('\n'));
    say('```');
  }
  say(
    `\ntotal ${f1(performance.now() / 60_000)} min; load average at the end ${loadavg()
      .map((x) => x.toFixed(1))
      .join(' / ')}`,
  );
  console.log(out.join('\n'));
  if (preview.memories_reverted !== CHANGED || reverted !== CHANGED || Number(check.hash_ok) !== CHANGED || verifies.some((v) => v.res.valid !== true))
    failed = true;
} catch (err) {
  if (out.length) console.log(out.join('\n'));
  console.error(err);
  failed = true;
} finally {
  try {
    await bulk?.query('DROP TABLE IF EXISTS bench_cc_events, bench_cc_memories, bench_cc_vectors');
    // Leave the database as the migrations define it, even after a failure mid-load.
    await bulk?.query((await indexDefinition(INDEX)).replace('CREATE INDEX', 'CREATE INDEX IF NOT EXISTS'));
    if (tenantId && !args.keep) {
      progress('deleting the bench tenant');
      await bulk?.query('DELETE FROM memory_events WHERE tenant_id = $1', [tenantId]);
      await bulk?.query('DELETE FROM memory_states WHERE tenant_id = $1', [tenantId]);
      await bulk?.query('DELETE FROM edge_states WHERE tenant_id = $1', [tenantId]);
      await bulk?.query('BEGIN');
      await bulk?.query(`SET LOCAL engram.audit_prune = 'on'`);
      await bulk?.query('DELETE FROM audit_log WHERE tenant_id = $1', [tenantId]);
      await bulk?.query('COMMIT');
      await bulk?.query('DELETE FROM tenants WHERE id = $1', [tenantId]);
    }
  } catch (err) {
    console.error('cleanup failed:', err);
  }
  await engram?.close();
  await bulk?.close();
}
process.exit(failed ? 1 : 0);
