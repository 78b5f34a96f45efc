/**
 * What bench:scale and bench:cluster share: engram servers as child processes (the real entry point,
 * functions/node.ts, so each one's RSS is its own), HTTP calls, generated memory texts with the hash
 * embedder's vectors (the server's own code, so a query embeds as the stored rows did) and the
 * machine's load average beside each figure.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { readFile, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { loadavg } from 'node:os';
import { v7 as uuidv7 } from 'uuid';
import { foldLexemeStatistics } from '../../functions/memories/maintenance';
import { hashEmbedder, toStoredVector } from '../../shared/memory/embeddings';
import { openPostgres } from '../../shared/node/database';
import type { Ctx } from '../../shared/platform/contract/context';
import { periodOf } from '../../shared/platform/contract/time';
import { rng } from './lib';

export const ADMIN_TOKEN = `bench-admin-${crypto.randomUUID()}`;

export interface Server {
  url: string;
  pid: number;
  /** Resident set and its peak (VmRSS, VmHWM), MB. */
  rss(): Promise<{ rss: number; peak: number }>;
  /** Sets the peak (VmHWM) back to the current RSS, so the next `rss()` peak is that of what ran since. */
  resetPeak(): Promise<void>;
  stop(): Promise<void>;
}

const freePort = () =>
  new Promise<number>((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
  });

/** `npm start` on DATABASE_URL and REDIS_URL with the hash embedder and rate limits out of the way. */
export async function startServer(env: { DATABASE_URL: string; REDIS_URL?: string }): Promise<Server> {
  const port = await freePort();
  const child: ChildProcess = spawn(process.execPath, ['--import', 'tsx', 'functions/node.ts'], {
    env: {
      ...process.env,
      ...env,
      PORT: String(port),
      HOST: '127.0.0.1',
      ADMIN_TOKEN,
      EMBEDDING_PROVIDER: 'hash',
      LOG_LEVEL: 'error',
      RATE_LIMIT_SCALE: '1000',
      NODE_ENV: 'production',
    },
    stdio: ['ignore', 'inherit', 'inherit'],
  });
  const url = `http://127.0.0.1:${port}`;
  for (let i = 0; ; i++) {
    if (child.exitCode !== null) throw new Error(`engram exited with ${child.exitCode}`);
    const ok = await fetch(`${url}/healthz`).then(
      (r) => r.ok,
      () => false,
    );
    if (ok) break;
    if (i > 600) throw new Error('engram did not start within 60 s');
    await new Promise((r) => setTimeout(r, 100));
  }
  const pid = child.pid!;
  return {
    url,
    pid,
    async rss() {
      const status = await readFile(`/proc/${pid}/status`, 'utf8');
      const kb = (name: string) => Number(status.match(new RegExp(`${name}:\\s+(\\d+)`))?.[1] ?? 0);
      return { rss: Math.round(kb('VmRSS') / 1024), peak: Math.round(kb('VmHWM') / 1024) };
    },
    resetPeak: () => writeFile(`/proc/${pid}/clear_refs`, '5'),
    stop: () =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null) return resolve();
        child.once('exit', () => resolve());
        child.kill('SIGTERM');
      }),
  };
}

export class HttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

export async function call(method: string, url: string, token: string, body?: unknown) {
  const res = await fetch(url, {
    method,
    headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  if (!res.ok) throw new HttpError(res.status, `${method} ${url.replace(/^https?:\/\/[^/]+/, '')}: ${res.status} ${text.slice(0, 300)}`);
  return (text.startsWith('{') || text.startsWith('[') ? JSON.parse(text) : text) as any;
}

export async function createTenant(url: string, label: string, tier = 'enterprise') {
  const t = await call('POST', `${url}/admin/v1/tenants`, ADMIN_TOKEN, {
    email: `bench-${label.replace(/[^a-z0-9-]/gi, '-')}-${crypto.randomUUID()}@example.com`,
    tier,
  });
  return { key: t.api_key as string, tenantId: t.tenant_id as string };
}

export const load = () => loadavg()[0].toFixed(1);

// ---------- texts and their vectors ----------

const PEOPLE = ['Alice', 'Bruno', 'Chen', 'Dana', 'Elif', 'Farid', 'Grace', 'Hiro', 'Ines', 'Jonas', 'Kemi', 'Luis', 'Maya', 'Noor', 'Omar', 'Priya'];
const VERBS = [
  'prefers',
  'asked about',
  'reported',
  'approved',
  'rejected',
  'wants',
  'mentioned',
  'escalated',
  'scheduled',
  'cancelled',
  'renewed',
  'reviewed',
];
const THINGS = [
  'invoices in EUR',
  'the quarterly renewal',
  'a refund for order',
  'dark mode in the dashboard',
  'weekly status emails',
  'the staging deployment',
  'two-factor login',
  'the data retention policy',
  'a custom webhook',
  'the onboarding checklist',
  'shipping to Canada',
  'the annual contract',
  'slower search results',
  'a bulk export',
  'the mobile app crash',
  'vegetarian lunch options',
  'meetings after 3 pm',
  'the new pricing page',
  'access for a contractor',
  'the security questionnaire',
];
const WHY = [
  'because the budget closes on Friday',
  'after the last outage',
  'for the board meeting',
  'since the team moved to Berlin',
  'before the audit starts',
  'while travelling next week',
  'as agreed on the call',
  'unless legal objects',
];
/** Lexemes for queries: words the texts use, so keyword search finds something and semantic search near neighbours. */
export const QUERY_WORDS = [
  ...PEOPLE.map((p) => p.toLowerCase()),
  'invoices',
  'renewal',
  'refund',
  'dashboard',
  'emails',
  'deployment',
  'login',
  'retention',
  'webhook',
  'onboarding',
  'shipping',
  'contract',
  'search',
  'export',
  'crash',
  'lunch',
  'meetings',
  'pricing',
  'contractor',
  'security',
  'budget',
  'outage',
  'audit',
  'board',
];

/** A realistic observation, different for every `n` (an order or ticket number in it). */
export function observation(r: () => number, n: number) {
  const pick = <T>(xs: T[]) => xs[Math.floor(r() * xs.length)];
  return `${pick(PEOPLE)} ${pick(VERBS)} ${pick(THINGS)} ${n} ${pick(WHY)}; ${pick(PEOPLE)} ${pick(VERBS)} ${pick(THINGS)}.`;
}

export function queries(count: number, seed = 7) {
  const r = rng(seed);
  return Array.from({ length: count }, () =>
    Array.from({ length: 2 + Math.floor(r() * 3) }, () => QUERY_WORDS[Math.floor(r() * QUERY_WORDS.length)]).join(' '),
  );
}

/**
 * Queries of rare words: two order or ticket numbers of the first `loaded` memories (each number is
 * in one memory of the bulk load, `observation`), so a keyword search reads a posting or two per word.
 */
export function rareQueries(count: number, loaded: number, seed = 13) {
  const r = rng(seed);
  return Array.from({ length: count }, () => `${1 + Math.floor(r() * loaded)} ${1 + Math.floor(r() * loaded)}`);
}

/** Queries of common words with a rare one: those of `queries` and an order or ticket number of the first `loaded` memories. */
export function mixedQueries(count: number, loaded: number, seed = 7) {
  const r = rng(seed + 10);
  return queries(count, seed).map((text) => `${text} ${1 + Math.floor(r() * loaded)}`);
}

const embedder = hashEmbedder();

/** The vector the server stores for `text` (hash embedder, normalised), as pgvector's sparse literal: a tenth of the bytes of the dense one. */
export async function sparseVector(text: string) {
  const [v] = await embedder.embed([text]);
  const unit = toStoredVector(v);
  const parts: string[] = [];
  for (let i = 0; i < unit.length; i++) if (unit[i] !== 0) parts.push(`${i + 1}:${unit[i].toPrecision(6)}`);
  return `{${parts.join(',')}}/${unit.length}`;
}

export async function denseVector(text: string) {
  const [v] = await embedder.embed([text]);
  return `[${toStoredVector(v).join(',')}]`;
}

// ---------- bulk load ----------

type Query = <T = Record<string, any>>(text: string, params?: unknown[]) => Promise<T[]>;
const LOAD_BATCH = 1000;
let serial = 0;

/** `count` memories for `tenantOf(i)`, with a `create` event each, in statements of LOAD_BATCH rows. */
export async function bulkLoad(q: Query, count: number, tenantOf: (i: number) => string, random: () => number) {
  const now = Date.now();
  for (let done = 0; done < count; done += LOAD_BATCH) {
    const cols: unknown[][] = [[], [], [], [], [], [], [], []];
    for (let i = done; i < Math.min(count, done + LOAD_BATCH); i++) {
      const text = observation(random, ++serial);
      const at = new Date(now - 30 * 86_400_000 + Math.floor((serial / 2_000_000) * 30 * 86_400_000)).toISOString();
      const row = [
        tenantOf(i),
        uuidv7(),
        text,
        createHash('sha256').update(text).digest('hex'),
        await sparseVector(text),
        at,
        `tag${i % 20}`,
        `agent-${i % 5}`,
      ];
      row.forEach((v, c) => cols[c].push(v));
    }
    await q(
      `WITH ins AS (
         INSERT INTO memories (id, tenant_id, observation, tags, importance, confidence, recall_count, agent_id, content_hash, embedding, version, created_at, updated_at)
         SELECT u.id, u.tenant, u.obs, ARRAY[u.tag], 5, 1, 0, u.agent, u.hash, u.vec::sparsevec::vector, 1, u.at, u.at
         FROM unnest($1::text[], $2::uuid[], $3::text[], $4::text[], $5::text[], $6::timestamptz[], $7::text[], $8::text[]) AS u(tenant, id, obs, hash, vec, at, tag, agent)
         RETURNING id, tenant_id, observation, tags, agent_id, content_hash, embedding, created_at)
       INSERT INTO memory_events (tenant_id, memory_id, kind, at, actor, after, embedding, metadata)
       SELECT tenant_id, id, 'create', created_at, 'key_bench',
              jsonb_build_object('uuid', id, 'observation', observation, 'tags', tags, 'importance', 5, 'confidence', 1, 'agent_id', agent_id,
                                 'hash', content_hash, 'recall_count', 0, 'created_at', created_at, 'updated_at', created_at),
              embedding, '{}'::jsonb FROM ins`,
      cols,
    );
  }
}

/**
 * The maintenance's fold of the big tenants' keyword statistics (migrations/0058), run until it has
 * nothing left, as a running deployment's maintenance keeps them after a load; seconds taken.
 */
export async function foldKeywordStatistics(url: string) {
  const database = openPostgres(url, 1);
  const started = performance.now();
  try {
    while ((await foldLexemeStatistics({ db: database.db } as Ctx)) > 0);
    return (performance.now() - started) / 1000;
  } finally {
    await database.close();
  }
}

/** The counters a store keeps (monthly quota, live count), as search.ts's bulk load sets them. */
export async function countLoaded(q: Query, tenantIds: string[], each: number) {
  await q(
    `INSERT INTO usage_counters (tenant_id, metric, bucket, value)
     SELECT t, m.metric, m.bucket, $3 FROM unnest($1::text[]) t, (VALUES ('memories', $2), ('memories_live', 'all')) m(metric, bucket)
     ON CONFLICT (tenant_id, metric, bucket) DO UPDATE SET value = usage_counters.value + EXCLUDED.value`,
    [tenantIds, periodOf(new Date()), each],
  );
}
