/**
 * Whole-store keyword search of one big tenant, the staged path (functions/memories/queries/
 * keyword-stages.ts) against every posting of the words (keywordByPostings), A/B interleaved on
 * the same connection, same queries, with the load average; whether both give the same top n, and
 * after which stage each query stopped (KEYWORD_STAGES_SLOWEST=1: the ten slowest queries too; =200: the 200 slowest).
 *
 *   DATABASE_URL=postgres://.../<a database bench:scale loaded> npx tsx test/bench/keyword-stages.ts [--searches 100] [--n 30]
 *     [--tenant <id>] [--min-postings <KEYWORD_STAGES.minPostings>] [--load <memories>]
 *
 * `--tenant`: that tenant (else the one with the most memories); `--min-postings`: the staged
 * path's threshold for this run, and no minimum tenant size or share of the table (1: every query of two words
 * or more takes it). `--load`: into a database holding no memories, one tenant of that many first
 * (as bench:scale loads them, through a server started on the database, which migrates it), vacuumed,
 * and its keyword statistics folded as the maintenance does.
 */
import { parseArgs } from 'node:util';
import { loadavg } from 'node:os';
import { sql } from 'drizzle-orm';
import pg from 'pg';
import { keywordByPostings, keywordCandidates, whereReadable } from '../../functions/memories/queries';
import { KEYWORD_STAGES } from '../../functions/memories/queries/keyword-stages';
import { openPostgres } from '../../shared/node/database';
import { rows } from '../../shared/platform/data/db';
import { f1, pct, rng } from './lib';
import { bulkLoad, countLoaded, createTenant, foldKeywordStatistics, mixedQueries, queries, rareQueries, startServer } from './scale-lib';

const { values: args } = parseArgs({
  options: {
    searches: { type: 'string', default: '100' },
    n: { type: 'string', default: '30' },
    tenant: { type: 'string' },
    'min-postings': { type: 'string' },
    load: { type: 'string' },
  },
});
if (args['min-postings']) Object.assign(KEYWORD_STAGES, { minDocs: 0, minShare: 0, minPostings: Number(args['min-postings']) });
const url = process.env.DATABASE_URL;
if (!url) throw new Error('DATABASE_URL: a database bench:scale loaded');
if (args.load) await loadIfEmpty(url, Number(args.load));
const database = openPostgres(url, 1);
const db = database.db;
const [{ tenant_id: tenantId, count }] = await rows<{ tenant_id: string; count: string }>(
  db,
  args.tenant
    ? sql`SELECT tenant_id, count(*) FROM memories WHERE tenant_id = ${args.tenant} GROUP BY tenant_id`
    : sql`SELECT tenant_id, count(*) FROM memories GROUP BY tenant_id ORDER BY count(*) DESC LIMIT 1`,
);
const N = Number(args.n);
const scope = whereReadable(tenantId, [], 'all', new Date(), {});
const ms = (xs: number[]) => `${f1(pct(xs, 50))} / ${f1(pct(xs, 95))} / ${f1(pct(xs, 99))}`;
console.log(`tenant of ${count} memories, n ${N}, staged from ${KEYWORD_STAGES.minPostings} postings; load average ${loadavg()[0].toFixed(1)} at start`);
for (const [name, texts] of [
  ['common words', queries(Number(args.searches))],
  ['rare words', rareQueries(Number(args.searches), Number(count))],
  ['common words and a rare one', mixedQueries(Number(args.searches), Number(count))],
] as const) {
  const staged: number[] = [];
  const postings: number[] = [];
  let differ = 0;
  // Where the stages stopped: after the stage of k words, or none (every posting read).
  const stoppedAt = new Map<string, number>();
  const slowest: { text: string; ms: number; at: string }[] = [];
  const timed = async <T>(into: number[], run: () => Promise<T>) => {
    const t = performance.now();
    const out = await run();
    into.push(performance.now() - t);
    return out;
  };
  for (const [i, text] of texts.entries()) {
    // Each side goes first every other query: the second reads what the first brought into the cache.
    const staged_ = () => timed(staged, () => keywordCandidates(db, scope, text, N, { kind: 'tenant', tenantId, storage: 'postgres' }));
    const every = () => timed(postings, () => keywordByPostings(db, scope, text, N, tenantId));
    const [a, b] = i % 2 ? await every().then(async (b) => [await staged_(), b] as const) : await staged_().then(async (a) => [a, await every()] as const);
    const key = (r: { id: string; bm25?: number }[]) => r.map((x) => `${x.id}:${x.bm25}`).join(',');
    if (key(a.rows) !== key(b)) differ++;
    const at = a.stagedWords ? `${a.stagedWords} words` : 'none';
    stoppedAt.set(at, (stoppedAt.get(at) ?? 0) + 1);
    slowest.push({ text, ms: staged[staged.length - 1], at });
  }
  slowest.sort((x, y) => y.ms - x.ms);
  if (process.env.KEYWORD_STAGES_SLOWEST)
    for (const s of slowest.slice(0, Math.max(10, Number(process.env.KEYWORD_STAGES_SLOWEST) || 0))) console.log(`  ${f1(s.ms)} ms  ${s.at}  ${s.text}`);
  console.log(
    `${name}: staged ${ms(staged)} | every posting ${ms(postings)} ms p50/p95/p99 | top ${N} differ in ${differ} of ${texts.length} | stopped after ${[...stoppedAt].map(([k, v]) => `${k}: ${v}`).join(', ')} | load ${loadavg()[0].toFixed(1)}`,
  );
}
await database.close();

/** One tenant of `count` memories, unless the database already holds memories. */
async function loadIfEmpty(databaseUrl: string, count: number) {
  const server = await startServer({ DATABASE_URL: databaseUrl, REDIS_URL: process.env.REDIS_URL });
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    const q = async <T = Record<string, any>>(text: string, params?: unknown[]) => (await client.query(text, params)).rows as T[];
    if ((await q('SELECT 1 FROM memories LIMIT 1')).length) return;
    const { tenantId } = await createTenant(server.url, 'keyword-stages');
    await bulkLoad(q, count, () => tenantId, rng(42));
    await countLoaded(q, [tenantId], count);
    // As autovacuum soon would: until the visibility map is set, an index-only scan reads the heap too.
    await q('VACUUM ANALYZE memories, memory_postings, memory_corpus_stats');
  } finally {
    await client.end();
    await server.stop();
  }
  await foldKeywordStatistics(databaseUrl);
}
