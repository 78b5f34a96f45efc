/**
 * Where this process's CPU goes, by phase: the V8 CPU profiler (node:inspector) runs around some
 * calls, and each profile node's self time is attributed to a phase by the source file of its
 * function (see `PHASES`). Builtins without a file (JSON.stringify, a regexp, a Map lookup) and Node's
 * own modules and WebAssembly count for the phase of the nearest caller that has one; what no project file called
 * (the event loop, socket reads before they reach the driver, promise jobs) is "Node runtime".
 *
 * The profiler samples the main thread only, which is where the server, the driver and this bench
 * all run; it slows what it profiles a little, so figures are read beside an unprofiled run's
 * CPU per call (process.cpuUsage), and shares matter more than the absolute milliseconds.
 */
import { Session } from 'node:inspector/promises';
import { findSourceMap } from 'node:module';
import { fileURLToPath } from 'node:url';
import { f2, table } from './lib';

interface CallFrame {
  functionName: string;
  url: string;
  lineNumber: number;
  columnNumber: number;
}
interface ProfileNode {
  id: number;
  callFrame: CallFrame;
  children?: number[];
}
export interface Profile {
  nodes: ProfileNode[];
  startTime: number;
  endTime: number;
  samples: number[];
  timeDeltas: number[];
}

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

/** Phases in print order: the first rule whose pattern matches the project-relative path wins. */
const PHASES: [string, RegExp][] = [
  ['hashing', /^node:internal\/crypto|^shared\/platform\/data\/audit\.ts|node_modules\/@noble\/hashes/],
  ['serialization (JSON, text)', /^node:internal\/encoding|^node:internal\/util\/inspect|node_modules\/superjson/],
  [
    'driver (pg, pool, sockets)',
    /node_modules\/(pg|pg-pool|pg-protocol|pg-types|postgres-array|postgres-bytea|postgres-date|postgres-interval|pgpass|@electric-sql|@neondatabase)\/|^shared\/platform\/data\/driver\/(short-transactions|hooks|internals|pglite-plans)\.ts|^shared\/node\/(database|pglite-durable)\.ts/,
  ],
  [
    'SQL building',
    /node_modules\/drizzle-orm\/|^shared\/platform\/data\/driver\/(compile|literals)\.ts|^shared\/platform\/data\/db\.ts|^functions\/[^/]+\/queries|\/queries\.ts$|^functions\/memories\/store\/write\.ts/,
  ],
  [
    'authentication and limits',
    /^shared\/platform\/http\/(auth|verb)\.ts|^shared\/platform\/limits\/|^shared\/platform\/data\/(key-cache|usage|counters|restricted-keys|accounts|anomalies)\.ts|node_modules\/(ioredis|redis|@redis|@upstash|denque|lru-cache)\/|^shared\/node\/redis\.ts/,
  ],
  [
    'planning (store plan, search)',
    /^functions\/memories\/(store\/(plan|prepare|index|store)\.ts|search\.ts|hybrid\.ts|service\.ts|verbs\.ts)|^shared\/memory\//,
  ],
  [
    'unit of work, audit, events',
    /^shared\/platform\/data\/(unit-of-work|event-bus|idempotency|milestones|log)\.ts|^functions\/memories\/store\/tail\.ts|^functions\/events\//,
  ],
  [
    'HTTP and validation',
    /node_modules\/(hono|@hono|zod|@asteasolutions|@opentelemetry)\/|^node:internal\/deps\/undici|^functions\/[^/]+\/(routes|schemas|index)\.ts|^functions\/app\.ts|^shared\/platform\/(http|contract)\//,
  ],
  ['metrics and logs', /^shared\/node\/metrics\.ts|node_modules\/prom-client\/|^shared\/platform\/data\/log\.ts/],
  ['other verbs and handlers', /^functions\/|^shared\/(jobs|platform)\//],
  ['bench client', /^test\/bench\/|node_modules\/(autocannon|hdr-histogram-js)\//],
];
const SERIALIZATION = /^(stringify|parse|JSON\.\w+|decode|encode|toString|TextDecoder|TextEncoder)$/;

/** A project-relative path, `node:...` for Node's own modules, '' for a builtin without a file. */
function pathOf(url: string) {
  if (!url) return '';
  const path = url.startsWith('file://') ? fileURLToPath(url) : url;
  return path.startsWith(ROOT) ? path.slice(ROOT.length) : path;
}

/** The 1-based line of a function in its source: tsx compiles a TypeScript file to a few long lines, and its source map says where they came from. */
function sourceLine({ url, lineNumber, columnNumber }: CallFrame): number {
  const entry = url.startsWith('file://') ? findSourceMap(url)?.findEntry(lineNumber, columnNumber) : undefined;
  return entry && 'originalLine' in entry ? Number(entry.originalLine) + 1 : lineNumber + 1;
}

function phaseOfPath(path: string): string | null {
  for (const [phase, re] of PHASES) if (re.test(path)) return phase;
  return null;
}

/** Runs `fn` under the CPU profiler (sampling every `intervalUs` µs) and returns its result and the profile. */
export async function profiled<T>(fn: () => Promise<T>, intervalUs = 100): Promise<{ result: T; profile: Profile }> {
  const session = new Session();
  session.connect();
  try {
    await session.post('Profiler.enable');
    await session.post('Profiler.setSamplingInterval', { interval: intervalUs });
    await session.post('Profiler.start');
    const result = await fn();
    const { profile } = (await session.post('Profiler.stop')) as { profile: Profile };
    return { result, profile };
  } finally {
    await session.post('Profiler.disable').catch(() => undefined);
    session.disconnect();
  }
}

export interface PhaseBreakdown {
  calls: number;
  /** ms of sampled CPU per call (idle excluded). */
  total: number;
  phases: { phase: string; ms: number; share: number }[];
  /** Self time by function, most first: `name (file:line)`, ms per call. */
  top: { fn: string; phase: string; ms: number }[];
  /** The files behind the "other" phase, most first. */
  other: { path: string; ms: number }[];
}

/** Self time per phase and per function, per call. */
export function breakdown(profile: Profile, calls: number): PhaseBreakdown {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const selfUs = new Map<number, number>();
  profile.samples.forEach((id, i) => selfUs.set(id, (selfUs.get(id) ?? 0) + (profile.timeDeltas[i + 1] ?? 0)));

  const phaseCache = new Map<number, string>();
  const phaseOf = (id: number): string => {
    const cached = phaseCache.get(id);
    if (cached) return cached;
    const { functionName, url } = byId.get(id)!.callFrame;
    const path = pathOf(url);
    let phase: string | null = null;
    if (functionName === '(garbage collector)') phase = 'garbage collection';
    else if (functionName === '(program)') phase = 'V8 (compiler, runtime)';
    else if (functionName === '(idle)') phase = 'idle';
    else if (!path && SERIALIZATION.test(functionName)) phase = 'serialization (JSON, text)';
    else if (path) phase = phaseOfPath(path);
    // WebAssembly (PGlite's Postgres, a histogram's) counts for whoever called it.
    if (!phase && (!path || path.startsWith('node:') || path.startsWith('wasm:'))) {
      const up = parent.get(id);
      const inherited = up === undefined ? 'Node runtime' : phaseOf(up);
      phase = inherited === '(root)' || inherited === 'idle' ? 'Node runtime' : inherited;
    }
    if (functionName === '(root)') phase = '(root)';
    phase ??= 'other';
    phaseCache.set(id, phase);
    return phase;
  };

  const phaseUs = new Map<string, number>();
  const fnUs = new Map<string, { phase: string; us: number }>();
  const otherUs = new Map<string, number>();
  for (const [id, us] of selfUs) {
    const phase = phaseOf(id);
    if (phase === 'idle' || phase === '(root)') continue;
    phaseUs.set(phase, (phaseUs.get(phase) ?? 0) + us);
    const { functionName, url } = byId.get(id)!.callFrame;
    const path = pathOf(url);
    // A builtin has no file: its callers' phase tells one `writev` (a response) from another (a query).
    const key = `${functionName || '(anonymous)'}${path ? ` (${path}:${sourceLine(byId.get(id)!.callFrame)})` : ` [${phase}]`}`;
    const f = fnUs.get(key) ?? { phase, us: 0 };
    f.us += us;
    fnUs.set(key, f);
    if (phase === 'other') otherUs.set(path, (otherUs.get(path) ?? 0) + us);
  }
  const totalUs = [...phaseUs.values()].reduce((a, b) => a + b, 0);
  const perCall = (us: number) => us / 1000 / calls;
  const order = [...PHASES.map(([p]) => p), 'garbage collection', 'V8 (compiler, runtime)', 'Node runtime', 'other'];
  return {
    calls,
    total: perCall(totalUs),
    phases: [...phaseUs].sort((a, b) => order.indexOf(a[0]) - order.indexOf(b[0])).map(([phase, us]) => ({ phase, ms: perCall(us), share: us / totalUs })),
    top: [...fnUs].sort((a, b) => b[1].us - a[1].us).map(([fn, { phase, us }]) => ({ fn, phase, ms: perCall(us) })),
    other: [...otherUs].sort((a, b) => b[1] - a[1]).map(([path, us]) => ({ path, ms: perCall(us) })),
  };
}

const pc = (x: number) => `${(x * 100).toFixed(0)}%`;

/** Phases side by side: one column pair (ms per call, share) per breakdown. */
export function phaseTable(columns: [string, PhaseBreakdown][]) {
  const phases = [...new Set(columns.flatMap(([, b]) => b.phases.map((p) => p.phase)))];
  const body = phases.map((phase) => [
    phase,
    ...columns.flatMap(([, b]) => {
      const p = b.phases.find((x) => x.phase === phase);
      return p ? [f2(p.ms), pc(p.share)] : ['–', '–'];
    }),
  ]);
  body.push(['**all sampled CPU**', ...columns.flatMap(([, b]) => [f2(b.total), '100%'])]);
  return table(['phase', ...columns.flatMap(([name]) => [`${name}: ms per call`, 'share'])], body);
}

/** The `n` functions with the most self time. */
export function topTable(b: PhaseBreakdown, n = 10) {
  return table(
    ['function (file:line)', 'phase', 'ms per call', 'share'],
    b.top.slice(0, n).map((t) => [`\`${t.fn}\``, t.phase, f2(t.ms), pc(t.ms / b.total)]),
  );
}
