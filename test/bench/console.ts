/**
 * The console's approvals inbox with 1,000 pending actions, through the app in process:
 *   1. time to first byte of GET /console/approvals (the response's headers, its HTML rendered),
 *      p50/p95/p99, interleaved with GET /v1/approvals?status=pending_review in the same run;
 *   2. the inbox's page weight: its HTML, the stylesheet and the scripts, raw and gzipped.
 * Embedded PGlite by default; DATABASE_URL (and REDIS_URL) to run on Postgres.
 *   npx tsx test/bench/console.ts [--n N] [--pending P]
 */
import { gzipSync } from 'node:zlib';
import { f0, f2, inProcessEngram, pct, table } from './lib';

const arg = (name: string, fallback: number) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? Number(process.argv[i + 1]) : fallback;
};
const N = arg('n', 300);
const PENDING = arg('pending', 1000);
const stats = (xs: number[]) => [f2(pct(xs, 50)), f2(pct(xs, 95)), f2(pct(xs, 99))];
const HELD = { action: 'http.post', params: { url: 'https://bank.example/wire', amount: 250000, memo: 'wire transfer' }, agent_id: 'bench-agent' };

async function main() {
  const { node, app, newTenant } = await inProcessEngram();
  const { api_key: key } = await newTenant('pro');
  for (let i = 0; i < PENDING; i++) {
    const res = await app.request('/v1/actions', {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify(HELD),
    });
    if (res.status !== 200) throw new Error(`submit: ${res.status}`);
    await res.arrayBuffer();
  }
  const signIn = await app.request('/console/sign-in', {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ api_key: key }).toString(),
  });
  const cookie = signIn.headers.get('set-cookie')!.split(';')[0];

  /** Milliseconds to the response (headers and status), then the body read to its end. */
  const first = async (path: string, headers: Record<string, string>) => {
    const t0 = performance.now();
    const res = await app.request(path, { headers });
    const ms = performance.now() - t0;
    if (res.status !== 200) throw new Error(`${path}: ${res.status}`);
    return { ms, body: await res.text() };
  };
  const inbox = () => first('/console/approvals', { cookie });
  const api = () => first('/v1/approvals?status=pending_review', { authorization: `Bearer ${key}` });
  for (let i = 0; i < 30; i++) await Promise.all([await inbox(), await api()]); // warm-up

  const times = { inbox: [] as number[], api: [] as number[] };
  let html = '';
  for (let i = 0; i < N; i++) {
    const page = await inbox();
    times.inbox.push(page.ms);
    html = page.body;
    times.api.push((await api()).ms);
  }

  const assets = [...html.matchAll(/(?:href|src)="(\/console\/assets\/[^"]+)"/g)].map((m) => m[1]);
  const weights = [{ name: 'inbox HTML (25 cards)', body: html }];
  for (const path of assets)
    weights.push({
      name: path
        .split('/')
        .pop()!
        .replace(/-[0-9a-f]{8,12}(\.min)?\./, '$1.'),
      body: await (await app.request(path)).text(),
    });
  const kb = (n: number) => (n / 1024).toFixed(1);
  const rows = weights.map((w) => [w.name, kb(Buffer.byteLength(w.body)), kb(gzipSync(w.body).length)]);
  const total = weights.reduce((s, w) => s + gzipSync(w.body).length, 0);

  console.log(`\n${PENDING} pending actions, ${N} requests each, interleaved\n`);
  console.log(
    table(
      ['request', 'p50 / p95 / p99 ms'],
      [
        ['GET /console/approvals (time to first byte)', stats(times.inbox).join(' / ')],
        ['GET /v1/approvals?status=pending_review', stats(times.api).join(' / ')],
      ],
    ),
  );
  console.log(`\n${table(['file', 'KiB', 'KiB gzipped'], [...rows, ['total', '', kb(total)]])}`);
  console.log(`\nrequests: ${f0(N * 2)}`);
  await node.close();
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
