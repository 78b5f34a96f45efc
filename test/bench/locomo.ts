/**
 * Retrieval quality on LoCoMo through the HTTP API (in-process), per embedding provider and mode.
 *
 *   npx tsx test/bench/locomo.ts [--providers use,hash] [--modes semantic,keyword,hybrid]
 *                                [--conversations 26,30] [--split a|b|all] --data <dir of LoCoMo json files, or LOCOMO_DATA>
 *                                [--embedding-cache /tmp/locomo-vectors.json] [--postgres]
 *
 * `--postgres` runs on the database of DATABASE_URL (and REDIS_URL if set) instead of embedded PGlite:
 * the same ranking, through the Postgres drivers' statements. Each run uses a new tenant.
 *
 * The conversations fall in two halves by their file's index in name order: A the 1st, 3rd, …, B the
 * 2nd, 4th, …. Ranking levers are tuned on half A and checked on half B, so a figure of B is one the
 * tuning did not see. `--split a` or `b` runs one half; the default runs both and reports each.
 *
 * `--embedding-cache` keeps every vector the provider returned in a file (per provider and text)
 * and replays it on the next run: the models are deterministic, so recall is the same and a rerun
 * skips minutes of embedding (search latency is then measured without the embedding call).
 *
 * Protocol (data README): every turn is a memory "<speaker>: <text>" tagged with the conversation id
 * and its dia_id; every question of categories 1-4 is asked with a tag filter on its conversation;
 * a hit at k is an evidence turn among the top k. Each conversation's turns are stored in their
 * order by one stream (the conversations in parallel), as an agent would store them. Prints
 * recall@5, recall@10 and search latency per provider and mode, overall and per conversation.
 */
import { existsSync } from 'node:fs';
import { readdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { buildApp } from '../../functions/app';
import { jobHandlers, maintenanceTasks } from '../../functions/registry';
import { parseConfig } from '../../shared/platform/contract/config';
import { createLogger } from '../../shared/platform/data/log';
import { openPglite } from '../../shared/node/database';
import { createNodeServices } from '../../shared/node/services';
import { hashEmbedder, type Embedder } from '../../shared/memory/embeddings';
import { useEmbedder } from '../../shared/node/embed-use';
import { pool } from './lib';

const { values: args } = parseArgs({
  options: {
    providers: { type: 'string', default: 'use,hash' },
    modes: { type: 'string', default: 'semantic,keyword,hybrid' },
    conversations: { type: 'string', default: '' },
    split: { type: 'string', default: 'all' },
    data: { type: 'string', default: process.env.LOCOMO_DATA ?? '' },
    concurrency: { type: 'string', default: '8' },
    'embedding-cache': { type: 'string' },
    postgres: { type: 'boolean', default: false },
  },
});

interface Turn {
  speaker: string;
  dia_id: string;
  text: string;
}
interface Qa {
  question: string;
  evidence?: string[];
  category: number;
}

type Half = 'a' | 'b';
/** A conversation's half: by its file's index among all the data's files in name order. */
const halfOf = (index: number): Half => (index % 2 ? 'b' : 'a');

async function loadConversations() {
  if (!args.data) throw new Error('pass the LoCoMo data directory: --data <dir> or LOCOMO_DATA');
  if (!['a', 'b', 'all'].includes(args.split)) throw new Error('--split is a, b or all');
  const wanted = args.conversations ? new Set(args.conversations.split(',')) : null;
  const files = (await readdir(args.data))
    .filter((f) => f.endsWith('.json'))
    .sort()
    .map((f, i) => ({ f, half: halfOf(i) }))
    .filter(({ f, half }) => (!wanted || wanted.has(f.replace('.json', ''))) && (args.split === 'all' || args.split === half));
  return Promise.all(
    files.map(async ({ f, half }) => {
      const raw = JSON.parse(await readFile(join(args.data, f), 'utf8')) as Record<string, unknown>;
      const turns = Object.keys(raw)
        .filter((k) => /^session_\d+$/.test(k))
        .flatMap((k) => raw[k] as Turn[]);
      const qa = (raw.qa as Qa[]).filter((q) => q.category >= 1 && q.category <= 4 && q.evidence?.length);
      return { id: `conv-${f.replace('.json', '')}`, half, turns, qa };
    }),
  );
}

type VectorCache = Record<string, Record<string, number[]>>;
let cache: VectorCache | null = null;

/** The provider's embedder, replaying vectors from --embedding-cache when it has them. */
async function cachedEmbedder(provider: string): Promise<Embedder | undefined> {
  const file = args['embedding-cache'];
  if (!file || (provider !== 'use' && provider !== 'hash')) return undefined;
  cache ??= existsSync(file) ? (JSON.parse(await readFile(file, 'utf8')) as VectorCache) : {};
  const known = (cache[provider] ??= {});
  const inner = provider === 'use' ? useEmbedder() : hashEmbedder();
  return {
    name: inner.name,
    dimension: inner.dimension,
    async embed(texts) {
      const todo = texts.filter((t) => !known[t]);
      if (todo.length) (await inner.embed(todo)).forEach((v, i) => (known[todo[i]] = v));
      return texts.map((t) => known[t]);
    },
  };
}

async function saveCache() {
  if (args['embedding-cache'] && cache) await writeFile(args['embedding-cache'], JSON.stringify(cache));
}

const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))];
};

async function runProvider(provider: string, conversations: Awaited<ReturnType<typeof loadConversations>>) {
  const admin = 'locomo-bench-admin-token';
  if (args.postgres && !process.env.DATABASE_URL) throw new Error('--postgres needs DATABASE_URL');
  const config = parseConfig({
    ADMIN_TOKEN: admin,
    EMBEDDING_PROVIDER: provider,
    LOG_LEVEL: 'silent',
    RATE_LIMIT_SCALE: '1000',
    DATA_DIR: 'memory://',
    ...(args.postgres ? { DATABASE_URL: process.env.DATABASE_URL, REDIS_URL: process.env.REDIS_URL } : {}),
  });
  const log = createLogger('silent');
  const node = await createNodeServices(config, {
    embedder: await cachedEmbedder(provider),
    database: args.postgres ? undefined : await openPglite({ dataDir: 'memory://' }),
    log,
    jobHandlers: jobHandlers(config, log),
    maintenance: maintenanceTasks,
  });
  const app = buildApp(() => node.services);
  const call = async (method: string, path: string, key: string, body?: unknown) => {
    const res = await app.request(path, {
      method,
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: body ? JSON.stringify(body) : undefined,
    });
    const json = await res.json();
    if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${JSON.stringify(json)}`);
    return json as any;
  };
  const tenant = await call('POST', '/admin/v1/tenants', admin, { email: `locomo-${provider}-${Date.now()}@example.com`, tier: 'enterprise' });
  const key = tenant.api_key as string;

  const turns = conversations.flatMap((c) => c.turns.map((t) => ({ conv: c.id, t })));
  let started = performance.now();
  await pool(conversations, Number(args.concurrency), async (c) => {
    for (const t of c.turns) {
      await call('POST', '/v1/memories', key, { observation: `${t.speaker}: ${t.text}`, tags: [c.id, t.dia_id], auto_link: false, on_conflict: 'manual' });
    }
  });
  const storeSeconds = (performance.now() - started) / 1000;
  await saveCache();

  const rows: string[] = [];
  const byConversation: string[] = [];
  for (const mode of args.modes.split(',')) {
    const questions = conversations.flatMap((c) => c.qa.map((q) => ({ conv: c.id, q })));
    const perConv = new Map<string, { n: number; h5: number; h10: number }>();
    const latencies: number[] = [];
    started = performance.now();
    await pool(questions, Number(args.concurrency), async ({ conv, q }) => {
      const evidence = new Set(q.evidence!.flatMap((e) => e.split(/[;,\s]+/)).filter(Boolean));
      const t0 = performance.now();
      const res = await call('GET', `/v1/memories/search?${new URLSearchParams({ q: q.question, tags: conv, limit: '10', mode })}`, key);
      latencies.push(performance.now() - t0);
      const ranks = (res.memories as { tags: string[] }[]).map((m) => m.tags.some((tag) => evidence.has(tag)));
      const c = perConv.get(conv) ?? { n: 0, h5: 0, h10: 0 };
      perConv.set(conv, c);
      c.n++;
      if (ranks.slice(0, 5).some(Boolean)) c.h5++;
      if (ranks.some(Boolean)) c.h10++;
    });
    const latency = `${pct(latencies, 50).toFixed(1)} | ${pct(latencies, 95).toFixed(1)} | ${pct(latencies, 99).toFixed(1)}`;
    for (const split of ['all', 'a', 'b'] as const) {
      const counts = conversations.filter((c) => split === 'all' || c.half === split).map((c) => perConv.get(c.id)!);
      const n = counts.reduce((s, c) => s + c.n, 0);
      if (!n || (split !== 'all' && counts.length === conversations.length)) continue; // a half with nothing, or everything
      const at = (k: 'h5' | 'h10') => (counts.reduce((s, c) => s + c[k], 0) / n).toFixed(3);
      rows.push(
        `| ${provider} | ${mode} | ${split === 'all' ? 'all' : split.toUpperCase()} | ${n} | ${at('h5')} | ${at('h10')} | ${split === 'all' ? latency : '– | – | –'} |`,
      );
    }
    for (const { id, half } of conversations) {
      const c = perConv.get(id)!;
      byConversation.push(`| ${provider} | ${mode} | ${id} | ${half.toUpperCase()} | ${c.n} | ${(c.h5 / c.n).toFixed(3)} | ${(c.h10 / c.n).toFixed(3)} |`);
    }
    console.error(`  ${provider}/${mode}: ${questions.length} questions in ${((performance.now() - started) / 1000).toFixed(1)} s`);
  }
  await node.close();
  return { rows, byConversation, storeSeconds, memories: turns.length };
}

const conversations = await loadConversations();
console.error(
  `LoCoMo: ${conversations.length} conversations, ${conversations.reduce((s, c) => s + c.turns.length, 0)} turns, ${conversations.reduce((s, c) => s + c.qa.length, 0)} questions (categories 1-4)`,
);
const table = ['| provider | mode | half | questions | recall@5 | recall@10 | search p50 ms | p95 ms | p99 ms |', '|---|---|---|---|---|---|---|---|---|']; // half: all, or half A or B of the conversations run
const perConversation = ['| provider | mode | conversation | half | questions | recall@5 | recall@10 |', '|---|---|---|---|---|---|---|'];
for (const provider of args.providers.split(',')) {
  const { rows, byConversation, storeSeconds, memories } = await runProvider(provider, conversations);
  perConversation.push(...byConversation);
  console.error(
    `  ${provider}: stored ${memories} memories in ${storeSeconds.toFixed(1)} s (${(memories / storeSeconds).toFixed(0)}/s, concurrency ${args.concurrency})`,
  );
  table.push(...rows);
}
await saveCache();
console.log(table.join('\n'));
console.log(`\n${perConversation.join('\n')}`);
