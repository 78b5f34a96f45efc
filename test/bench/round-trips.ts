/**
 * Round trips to PostgreSQL and this process's CPU per store and per search: engram in process on
 * the server of DATABASE_URL (a fresh database `engram_round_trips`), node-postgres counted at its
 * connection. A round trip is a ReadyForQuery (one per Sync or simple-protocol message, however many
 * statements it carries); a text message is a Parse or a simple-protocol query (a named statement
 * that this connection already prepared is bound and executed by name, with no text). Sequential calls, one tenant, hash embedder.
 *
 *   DATABASE_URL=postgres://... REDIS_URL=redis://... npx tsx test/bench/round-trips.ts [--calls 200] [--rounds 2]
 *
 * Figures include what the request gate writes now and then (api_calls, in batches), so a store's
 * round trips are its own plus a fraction. CPU is process.cpuUsage over the calls, printed with the
 * load average: compare builds in alternating runs on the same machine, not with other machines.
 */
import { loadavg } from 'node:os';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { inProcessEngram } from './lib';

const { values: args } = parseArgs({ options: { calls: { type: 'string', default: '200' }, rounds: { type: 'string', default: '2' } } });
const CALLS = Number(args.calls);
const base = process.env.DATABASE_URL;
if (!base) throw new Error('set DATABASE_URL (a PostgreSQL server with pgvector)');
const url = new URL(base);
url.pathname = '/engram_round_trips';
{
  const c = new pg.Client({ connectionString: base });
  await c.connect();
  await c.query('DROP DATABASE IF EXISTS engram_round_trips WITH (FORCE)');
  await c.query('CREATE DATABASE engram_round_trips');
  await c.end();
}
const e = await inProcessEngram({ DATABASE_URL: url.toString() });
const { api_key } = await e.newTenant('enterprise');

let roundTrips = 0;
let parses = 0;
const proto = (pg.Connection as unknown as { prototype: Record<string, (...a: unknown[]) => unknown> }).prototype;
const emit = proto.emit;
proto.emit = function (this: unknown, event: unknown, ...rest: unknown[]) {
  if (event === 'readyForQuery') roundTrips++;
  return emit.call(this, event, ...rest);
};
for (const sent of ['parse', 'query'] as const) {
  const original = proto[sent];
  proto[sent] = function (this: unknown, ...a: unknown[]) {
    parses++;
    return original.apply(this, a);
  };
}

const words = 'alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu'.split(' ');
const text = (i: number) => `note ${i}: ${words[i % 12]} ${words[(i * 7) % 12]} met ${words[(i * 5) % 12]} at the market on day ${i}`;
const query = (i: number) => `${words[i % 12]}+${words[(i * 3) % 12]}`;

async function measure(label: string, n: number, call: (i: number) => Promise<unknown>) {
  roundTrips = 0;
  parses = 0;
  const cpu0 = process.cpuUsage();
  for (let i = 0; i < n; i++) await call(i);
  const cpu = process.cpuUsage(cpu0);
  const load = loadavg()
    .map((x) => x.toFixed(2))
    .join(' ');
  console.log(`| ${label} | ${((cpu.user + cpu.system) / 1000 / n).toFixed(2)} | ${(roundTrips / n).toFixed(2)} | ${(parses / n).toFixed(2)} | ${load} |`);
}

// Warm-up: every statement prepared on its connection, the JIT settled.
const ids: string[] = [];
for (let i = 0; i < 50; i++) {
  const res = (await e.call('POST', '/v1/memories', api_key, { observation: text(1e6 + i), tags: ['c1'] })) as { id: string };
  ids.push(res.id);
}
for (let i = 0; i < 30; i++) await e.call('GET', `/v1/memories/search?q=${query(i)}&limit=10&mode=semantic&tags=c1`, api_key);
for (let i = 0; i < 30; i++) await e.call('GET', `/v1/memories/${ids[i % ids.length]}`, api_key);

console.log(`\n| call (${CALLS} each) | Node CPU ms per call | round trips per call | Parse or simple-query messages per call | load average |`);
console.log('|---|---|---|---|---|');
for (let r = 0; r < Number(args.rounds); r++) {
  await measure('store', CALLS, (i) => e.call('POST', '/v1/memories', api_key, { observation: text(r * 1e5 + i), tags: ['c1', `d${i % 5}`] }));
  await measure('store, auto_link on', CALLS, (i) =>
    e.call('POST', '/v1/memories', api_key, { observation: text(5e5 + r * 1e5 + i), tags: ['c1'], auto_link: true }),
  );
  await measure('semantic search, one tag', CALLS, (i) => e.call('GET', `/v1/memories/search?q=${query(i)}&limit=10&mode=semantic&tags=c1`, api_key));
  await measure('keyed read (GET /v1/memories/{id})', CALLS, (i) => e.call('GET', `/v1/memories/${ids[i % ids.length]}`, api_key));
  await measure('semantic search, whole store', CALLS, (i) => e.call('GET', `/v1/memories/search?q=${query(i)}&limit=10&mode=semantic`, api_key));
}
await e.node.close();
