/**
 * One tenant's policy evaluation against another tenant's latency, in one process and one run:
 *   - a Pro tenant with its largest allowed rule set (25 policies × 100 rules, none with a literal
 *     the prefilter can look for, so every rule scans the whole action) submits its largest allowed
 *     action (params just under 64 KB) from several submitters at once;
 *   - meanwhile another tenant calls GET /v1/usage one request after another.
 * Prints that tenant's p50/p95/p99 without the load and with it (target: p99 grows by at most
 * 10 ms), and the submitters' latency and outcomes (held for review once the budget runs out).
 * Embedded PGlite by default; DATABASE_URL (and REDIS_URL) to run on Postgres.
 *   npm run bench:policy-isolation -- [--submitters 8] [--requests 300]
 */
import { f2, inProcessEngram, pct, table } from './lib';

const arg = (name: string, fallback: number) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? Number(process.argv[i + 1]) : fallback;
};
const SUBMITTERS = arg('submitters', 8);
const REQUESTS = arg('requests', 300);
const POLICIES = 25;
const RULES = 100;
const stats = (xs: number[]) => [String(xs.length), f2(pct(xs, 50)), f2(pct(xs, 95)), f2(pct(xs, 99))];

async function main() {
  const { app, call, newTenant } = await inProcessEngram();
  const heavy = await newTenant('pro');
  const other = await newTenant('free');
  for (let p = 0; p < POLICIES; p++) {
    const rules = Array.from({ length: RULES }, (_, i) => {
      const k = p * RULES + i;
      return { match: String.raw`\d{${3 + (k % 40)}}[a-z]{${1 + Math.floor(k / 40)}}`, severity: 'critical' };
    });
    await call('POST', '/v1/control/policies', heavy.api_key, { name: `Heavy${p}`, rules });
  }
  // Just under 64 KB of params, as the route allows.
  const action = { action: 'http.post', params: { text: 'lorem ipsum dolor sit amet, consectetur adipiscing elit '.repeat(1_140) } };
  const bytes = JSON.stringify(action.params).length;

  const send = async (key: string, method: string, path: string, body?: unknown) => {
    const t0 = performance.now();
    const res = await app.request(path, {
      method,
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const json = (await res.json()) as { status?: string; policy_result?: { reason?: string } };
    const ms = performance.now() - t0;
    if (res.status >= 300) throw new Error(`${method} ${path}: ${res.status} ${JSON.stringify(json)}`);
    return { ms, json };
  };
  const usage = async (n: number) => {
    const xs: number[] = [];
    for (let i = 0; i < n; i++) xs.push((await send(other.api_key, 'GET', '/v1/usage')).ms);
    return xs;
  };

  // Warm-up: the usage route, and one heavy submission (compiles the patterns).
  await usage(50);
  const first = await send(heavy.api_key, 'POST', '/v1/actions', action);
  const quiet = await usage(REQUESTS);

  let stop = false;
  const submissions: number[] = [];
  const outcomes = new Map<string, number>();
  const submitter = async () => {
    while (!stop) {
      const { ms, json } = await send(heavy.api_key, 'POST', '/v1/actions', action);
      submissions.push(ms);
      const key = `${json.status}${json.policy_result?.reason?.startsWith('Policy evaluation budget exceeded') ? ' (budget exceeded)' : ''}`;
      outcomes.set(key, (outcomes.get(key) ?? 0) + 1);
    }
  };
  const running = Array.from({ length: SUBMITTERS }, submitter);
  const loaded = await usage(REQUESTS);
  stop = true;
  await Promise.all(running);

  console.log(`Rule set: ${POLICIES} policies × ${RULES} rules (Pro's limit) plus the built-ins; action params ${bytes} bytes; ${SUBMITTERS} submitters.`);
  console.log(`First submission (patterns compiled): ${f2(first.ms)} ms, ${first.json.status}: ${first.json.policy_result?.reason ?? ''}\n`);
  console.log(
    table(
      ['what', 'n', 'p50 ms', 'p95 ms', 'p99 ms'],
      [
        ['other tenant GET /v1/usage, no load', ...stats(quiet)],
        [`other tenant GET /v1/usage, ${SUBMITTERS} heavy submitters`, ...stats(loaded)],
        ['heavy POST /v1/actions (submitter latency)', ...stats(submissions)],
      ],
    ),
  );
  console.log(`\np99 growth of the other tenant: ${f2(pct(loaded, 99) - pct(quiet, 99))} ms (target ≤ 10 ms)`);
  console.log(`Submission outcomes: ${[...outcomes].map(([k, n]) => `${k} × ${n}`).join(', ')}`);
  process.exit(0);
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
