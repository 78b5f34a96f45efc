/**
 * engram-sdk: its bundle size, its install size beside `openai` and `stripe`, and a search through
 * the TypeScript SDK, the Python SDK and `curl` in the same run, all over real HTTP to the same Node
 * server process (`functions/node.ts` on the embedded default: PGlite, `memory://`, hash embedder).
 *
 *   npm run bench:sdk -- [--memories 1000] [--calls 400] [--rounds 20] [--install-size yes|no]
 *   (ENGRAM_PYTHON=<a python that imports engram> adds the Python SDK; without it that row is skipped)
 *
 * Size: sdk/src/index.ts bundled by esbuild (ESM, minified, its dependencies included) and that
 * gzipped (node:zlib, level 9). Install size: `npm pack -w engram-sdk`, and that tarball, `openai`
 * and `stripe` (the registry's latest) each `npm install`ed into a fresh `npm init -y` project;
 * packages are the package.json directories under node_modules, MB the bytes of its files / 10^6.
 * Time: one tenant stores `--memories` memories, then the same query mix (semantic, keyword and
 * hybrid, a fifth with a tag filter, top 10) runs one call at a time, in `--rounds` rounds of
 * `--calls / --rounds` queries; in each round every way runs the same queries in turn (each round
 * starting with the next way), on a kept-alive connection, timed by the caller around the call: a
 * bare fetch and `engram.memories.search` in the bench's process, `client.memories.search` of the
 * sync Python client in a python process (after a warm-up; interpreter start not counted), and one
 * `curl` invocation for the round's URLs with its own `%{time_total}` per transfer (process start
 * not counted; it reads no JSON). Prints p50 / p95 / p99 of each way and its p50 over curl's.
 */
import { execFile } from 'node:child_process';
import { mkdtemp, readdir, rm, stat } from 'node:fs/promises';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs, promisify } from 'node:util';
import { gzipSync } from 'node:zlib';
import { build } from 'esbuild';
import { Engram } from '../../sdk/src/index';
import { startServer, stopServer } from '../server-process';
import { BENCH_ADMIN_TOKEN, f2, pct, rng, SMOKE, table } from './lib';

const { values: args } = parseArgs({
  options: {
    memories: { type: 'string', default: '1000' },
    calls: { type: 'string', default: '400' },
    rounds: { type: 'string', default: '20' },
    'install-size': { type: 'string', default: 'yes' },
  },
});
const MEMORIES = Number(args.memories);
const CALLS = Number(args.calls);
const ROUNDS = Math.max(1, Math.min(Number(args.rounds), CALLS));
const PYTHON = process.env.ENGRAM_PYTHON;
const run = promisify(execFile);
const WARMUP = SMOKE ? 3 : 30;
delete process.env.DATABASE_URL; // the embedded default, whatever the shell has
delete process.env.REDIS_URL;

const bundled = await build({
  entryPoints: [new URL('../../sdk/src/index.ts', import.meta.url).pathname],
  bundle: true,
  minify: true,
  format: 'esm',
  platform: 'neutral',
  mainFields: ['module', 'main'], // standardwebhooks ships CommonJS with `main` only
  target: 'es2022',
  write: false,
});
const code = bundled.outputFiles[0].contents;
const gzipped = gzipSync(code, { level: 9 }).length;

const load = () =>
  loadavg()
    .map((x) => x.toFixed(2))
    .join(' ');
const loadAtStart = load();
// The server in a process of its own, so every way below is a client in another process than it.
const server = await startServer(
  { ADMIN_TOKEN: BENCH_ADMIN_TOKEN, DATA_DIR: 'memory://', EMBEDDING_PROVIDER: 'hash', LOG_LEVEL: 'warn', RATE_LIMIT_SCALE: '1000' },
  { timeoutMs: 90_000 },
);
const base = server.base;
async function post<T>(path: string, key: string, body: unknown): Promise<T> {
  const res = await fetch(`${base}${path}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  if (res.status >= 300) throw new Error(`POST ${path}: ${res.status} ${await res.text()}`);
  return (await res.json()) as T;
}
const tenant = await post<{ api_key: string }>('/admin/v1/tenants', BENCH_ADMIN_TOKEN, { email: `bench-sdk-${Date.now()}@example.com`, tier: 'pro' });

const random = rng(7);
const WORDS = Array.from({ length: 400 }, (_, i) => `w${i.toString(36)}${Math.floor(random() * 1e4).toString(36)}`);
const TAGS = ['billing', 'support', 'product', 'people', 'travel'];
const phrase = (n: number) => Array.from({ length: n }, () => WORDS[Math.floor(random() * WORDS.length)]).join(' ');
for (let i = 0; i < MEMORIES; i += 100) {
  const memories = Array.from({ length: Math.min(100, MEMORIES - i) }, (_, j) => ({
    observation: `Note ${i + j}: ${phrase(12)}`,
    tags: [TAGS[(i + j) % TAGS.length]],
  }));
  await post('/v1/memories/batch', tenant.api_key, { memories });
}

type Query = { q: string; mode: 'semantic' | 'keyword' | 'hybrid'; limit: number; tags?: string };
const MODES = ['semantic', 'keyword', 'hybrid'] as const;
const queries: Query[] = Array.from({ length: 200 }, (_, i) => ({
  q: phrase(1 + (i % 4)),
  mode: MODES[i % MODES.length],
  limit: 10,
  ...(i % 5 === 0 ? { tags: TAGS[i % TAGS.length] } : {}),
}));

const headers = { accept: 'application/json', authorization: `Bearer ${tenant.api_key}` };
const urlOf = (query: Query) => `${base}/v1/memories/search?${new URLSearchParams(Object.entries(query).map(([k, v]) => [k, String(v)]))}`;

/** Each way runs a round's queries and answers the milliseconds of each call. */
type Way = (round: Query[]) => Promise<number[]>;
const inProcess =
  (call: (query: Query) => Promise<void>): Way =>
  async (round) => {
    const ms: number[] = [];
    for (const query of round) {
      const t0 = performance.now();
      await call(query);
      ms.push(performance.now() - t0);
    }
    return ms;
  };

const client = new Engram({ apiKey: tenant.api_key, baseUrl: base });
const ways: Record<string, Way> = {
  'bare fetch': inProcess(async (query) => {
    const res = await fetch(urlOf(query), { method: 'GET', headers });
    const body = (await res.json()) as { memories?: unknown[] };
    if (res.status !== 200 || !Array.isArray(body.memories)) throw new Error(`search: ${res.status}`);
  }),
  'engram.memories.search (TypeScript)': inProcess(async (query) => {
    const body = await client.memories.search(query);
    if (!Array.isArray(body.memories)) throw new Error('search: no memories');
  }),
};

// The sync Python client: one process per round, its warm-up and each call timed inside it.
const PY_ROUND = `
import json, sys, time, engram
base, key, warmup = sys.argv[1], sys.argv[2], int(sys.argv[3])
queries = json.loads(sys.argv[4])
ms = []
with engram.Engram(api_key=key, base_url=base) as client:
    for i, query in enumerate(queries[:1] * warmup + queries):
        t0 = time.perf_counter()
        found = client.memories.search(**query)
        elapsed = (time.perf_counter() - t0) * 1000
        if not isinstance(found["memories"], list):
            raise SystemExit("search: no memories")
        if i >= warmup:
            ms.append(elapsed)
print(json.dumps(ms))
`;
if (PYTHON) {
  ways['client.memories.search (Python, sync)'] = async (round) => {
    const { stdout } = await run(PYTHON, ['-c', PY_ROUND, base, tenant.api_key, String(WARMUP), JSON.stringify(round)]);
    return JSON.parse(stdout) as number[];
  };
} else console.log('ENGRAM_PYTHON is not set: the Python SDK row is skipped (point it at a python that imports engram).');

// curl: one invocation per round, the first URL a warm-up on the same connection.
const hasCurl = await run('curl', ['--version']).then(
  () => true,
  () => false,
);
if (hasCurl) {
  ways.curl = async (round) => {
    const urls = [round[0], ...round].flatMap((q) => ['-o', '/dev/null', urlOf(q)]);
    const { stdout } = await run('curl', [
      '-sS',
      '-H',
      `authorization: ${headers.authorization}`,
      '-H',
      `accept: ${headers.accept}`,
      '-w',
      '%{http_code} %{time_total}\\n',
      ...urls,
    ]);
    const lines = stdout.trim().split('\n').slice(1);
    return lines.map((line) => {
      const [status, seconds] = line.split(' ');
      if (status !== '200') throw new Error(`curl search: ${status}`);
      return Number(seconds) * 1000;
    });
  };
} else console.log('curl is not installed: its row is skipped.');

for (const way of Object.values(ways)) await way(queries.slice(0, WARMUP));
const results = new Map<string, number[]>(Object.keys(ways).map((name) => [name, []]));
const perRound = Math.ceil(CALLS / ROUNDS);
for (let r = 0; r < ROUNDS; r++) {
  const round = Array.from({ length: Math.min(perRound, CALLS - r * perRound) }, (_, i) => queries[(r * perRound + i) % queries.length]);
  if (round.length === 0) break;
  // Each round starts with the next way, so no way always runs right after another.
  const order = Object.keys(ways);
  for (let k = 0; k < order.length; k++) {
    const name = order[(r + k) % order.length];
    results.get(name)!.push(...(await ways[name](round)));
  }
}
await stopServer(server);

console.log(`\n### engram-sdk: bundle ${(code.length / 1024).toFixed(1)} KiB minified, ${(gzipped / 1024).toFixed(1)} KiB gzipped`);
console.log(`\n### a search through each SDK beside curl: ${MEMORIES} memories, ${CALLS} calls each, one at a time, ${ROUNDS} rounds\n`);
const curlP50 = results.has('curl') ? pct(results.get('curl')!, 50) : null;
console.log(
  table(
    ['way', 'p50 / p95 / p99 ms', 'p50 over curl ms'],
    [...results.entries()].map(([way, ms]) => [
      way,
      `${f2(pct(ms, 50))} / ${f2(pct(ms, 95))} / ${f2(pct(ms, 99))}`,
      curlP50 === null || way === 'curl' ? '' : f2(pct(ms, 50) - curlP50),
    ]),
  ),
);
console.log(`load average at start ${loadAtStart}, at end ${load()}`);

/** Packages (package.json directories) and bytes of the files under a node_modules. */
async function footprint(dir: string): Promise<{ packages: number; bytes: number }> {
  let packages = 0;
  let bytes = 0;
  for (const entry of await readdir(dir, { recursive: true, withFileTypes: true })) {
    const path = join(entry.parentPath, entry.name);
    if (entry.isFile()) {
      bytes += (await stat(path)).size;
      if (entry.name === 'package.json' && /[\\/]node_modules[\\/](@[^\\/]+[\\/])?[^\\/@]+$/.test(entry.parentPath)) packages++;
    }
  }
  return { packages, bytes };
}
if (args['install-size'] !== 'no') {
  const work = await mkdtemp(join(tmpdir(), 'engram-sdk-size-'));
  try {
    const root = new URL('../../', import.meta.url).pathname;
    // prepack builds the SDK first, as a publish does.
    await run('npm', ['pack', '-w', 'engram-sdk', '--pack-destination', work], { cwd: root, maxBuffer: 1 << 26 });
    const tarball = join(work, (await readdir(work)).find((f) => f.endsWith('.tgz'))!);
    const rows: string[][] = [];
    for (const [name, spec] of [
      ['engram-sdk (packed)', tarball],
      ['openai', 'openai'],
      ['stripe', 'stripe'],
    ]) {
      const project = join(work, name.split(' ')[0]);
      await run('mkdir', ['-p', project]);
      await run('npm', ['init', '-y'], { cwd: project });
      await run('npm', ['install', '--no-audit', '--no-fund', spec], { cwd: project, maxBuffer: 1 << 26 });
      const installed = JSON.parse((await run('npm', ['ls', '--json', '--depth', '0'], { cwd: project })).stdout) as {
        dependencies: Record<string, { version: string }>;
      };
      const { packages, bytes } = await footprint(join(project, 'node_modules'));
      rows.push([name, Object.values(installed.dependencies)[0].version, String(packages), (bytes / 1e6).toFixed(2)]);
    }
    console.log('\n### install size: each into a fresh npm project\n');
    console.log(table(['package', 'version', 'packages', 'MB'], rows));
  } finally {
    await rm(work, { recursive: true, force: true });
  }
}
process.exit(0);
