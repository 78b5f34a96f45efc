/**
 * What the opt-in reranker costs a search (docs/performance.md#reranking), in one run: the same
 * queries with `rerank=false` and with the rerank stand-in (test/standins/rerank-server.ts, word
 * overlap over loopback HTTP, Cohere wire), one after the other per query, then with the stand-in
 * down (connections dropped: the fallback's cost). In-process app (app.request, no sockets to the
 * app), embedded PGlite unless DATABASE_URL, the `hash` embedder so the embedding is not the figure.
 *
 *   npx tsx test/bench/rerank.ts [--memories 2000] [--searches 200] [--top-n 50]
 *
 * Prints a markdown table: p50/p95 of the whole search and p50 of each Server-Timing part.
 */
import { parseArgs } from 'node:util';
import { startRerankServer } from '../standins/rerank-server';
import { f1, inProcessEngram, pct, rng, SMOKE, table } from './lib';

const { values: args } = parseArgs({
  options: {
    memories: { type: 'string', default: SMOKE ? '100' : '2000' },
    searches: { type: 'string', default: SMOKE ? '5' : '200' },
    'top-n': { type: 'string', default: '50' },
  },
});
const MEMORIES = Number(args.memories);
const SEARCHES = Number(args.searches);

const WORDS =
  'invoice finance team monthly euro office printer cat luna deploy tuesday standup database restart sunday coffee oat milk berlin bank transfer customer prefers pdf attachment quarterly report budget travel flight hotel meeting agenda review release notes bug ticket support escalation holiday schedule laptop password reset vendor contract renewal'.split(
    ' ',
  );
const random = rng(42);
const sentence = (n: number) => Array.from({ length: n }, () => WORDS[Math.floor(random() * WORDS.length)]).join(' ');

const reranker = await startRerankServer();
const engram = await inProcessEngram({ RERANK_PROVIDER: 'cohere', RERANK_BASE_URL: reranker.url, RERANK_TOP_N: args['top-n'] });
try {
  const { api_key: key } = await engram.newTenant();
  for (let i = 0; i < MEMORIES; i += 100) {
    const memories = Array.from({ length: Math.min(100, MEMORIES - i) }, () => ({ observation: `${sentence(10)}.`, auto_link: false }));
    await engram.call('POST', '/v1/memories/batch', key, { memories });
  }
  const queries = Array.from({ length: SEARCHES }, () => sentence(5));

  interface Sample {
    ms: number;
    parts: Record<string, number>;
    outcome: string;
  }
  const search = async (mode: string, query: string, extra = ''): Promise<Sample> => {
    const started = performance.now();
    const res = await engram.app.request(`/v1/memories/search?q=${encodeURIComponent(query)}&mode=${mode}&limit=10${extra}`, {
      headers: { authorization: `Bearer ${key}` },
    });
    const body = (await res.json()) as { rerank: string };
    const ms = performance.now() - started;
    if (res.status !== 200) throw new Error(`search answered ${res.status}: ${JSON.stringify(body)}`);
    const parts = Object.fromEntries(
      (res.headers.get('server-timing') ?? '')
        .split(',')
        .filter(Boolean)
        .map((p) => {
          const [name, dur] = p.trim().split(';dur=');
          return [name!, Number(dur)];
        }),
    );
    return { ms, parts, outcome: body.rerank };
  };

  const rows: string[][] = [];
  const summarise = (mode: string, label: string, samples: Sample[]) => {
    const part = (name: string) => {
      const xs = samples.flatMap((s) => (name in s.parts ? [s.parts[name]!] : []));
      return xs.length ? f1(pct(xs, 50)!) : '–';
    };
    const outcomes = [...new Set(samples.map((s) => s.outcome))].join(', ');
    const ms = samples.map((s) => s.ms);
    rows.push([mode, label, outcomes, f1(pct(ms, 50)!), f1(pct(ms, 95)!), part('embed'), part('db'), part('rank'), part('rerank')]);
  };

  for (const mode of ['hybrid', 'semantic']) {
    for (const q of queries.slice(0, Math.min(10, queries.length))) await search(mode, q); // warm-up
    const off: Sample[] = [];
    const on: Sample[] = [];
    reranker.behave('ok');
    for (const q of queries) {
      off.push(await search(mode, q, '&rerank=false'));
      on.push(await search(mode, q));
    }
    reranker.behave('down');
    const down: Sample[] = [];
    for (const q of queries.slice(0, Math.max(1, Math.floor(queries.length / 4)))) down.push(await search(mode, q));
    reranker.behave('ok');
    summarise(mode, 'rerank=false', off);
    summarise(mode, `stand-in (top ${args['top-n']})`, on);
    summarise(mode, 'stand-in down', down);
  }

  console.log(`\n${MEMORIES} memories, ${SEARCHES} searches a row, limit 10, ${engram.node.services.storage}, hash embedder\n`);
  console.log(table(['mode', 'reranker', 'rerank', 'p50 ms', 'p95 ms', 'embed p50', 'db p50', 'rank p50', 'rerank p50'], rows));
} finally {
  await engram.node.close();
  await reranker.close();
}
