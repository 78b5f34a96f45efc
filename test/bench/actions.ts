/**
 * Governed actions, end to end through the API (app.request, no sockets), beside a cheap keyed
 * route in the same run:
 *   1. POST /v1/actions p50/p95/p99 for each outcome (allowed, pending_review, blocked 403),
 *      interleaved with GET /v1/usage and GET /v1/control/settings, so all share the same warm process;
 *   2. the policy evaluation alone (loadPolicySet + evaluatePolicies, in process);
 *   3. submissions per second from 16 clients.
 * Embedded PGlite by default; DATABASE_URL (and REDIS_URL) to run on Postgres. Target: submission
 * p95 ≤ 15 ms on the embedded default.
 *   npx tsx test/bench/actions.ts [--n N]
 */
import { EVALUATION_BUDGET } from '../../shared/control/budget';
import { evaluatePolicies } from '../../shared/control/evaluate';
import { loadPolicySet, policyPatterns } from '../../shared/control/policy-set';
import { f0, f2, inProcessEngram, pct, pool, table } from './lib';

const arg = (name: string, fallback: number) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? Number(process.argv[i + 1]) : fallback;
};
const N = arg('n', 1000);
const stats = (xs: number[]) => [f2(pct(xs, 50)), f2(pct(xs, 95)), f2(pct(xs, 99))];

const PAYLOADS = {
  allowed: { action: 'slack.post_message', params: { channel: '#general', text: 'standup at 10' }, agent_id: 'bench-agent' },
  pending_review: { action: 'http.post', params: { url: 'https://bank.example/wire', amount: 250000, memo: 'wire transfer' }, agent_id: 'bench-agent' },
  blocked: { action: 'slack.post_message', params: { text: '-----BEGIN RSA PRIVATE KEY-----\nMIIE...' }, agent_id: 'bench-agent' },
} as const;
type Outcome = keyof typeof PAYLOADS;

async function main() {
  const { node, app, newTenant } = await inProcessEngram();
  const tenant = await newTenant();
  const key = tenant.api_key;
  const send = async (method: string, path: string, body?: unknown, expect = 200) => {
    const t0 = performance.now();
    const res = await app.request(path, {
      method,
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const json = (await res.json()) as { status?: string };
    const ms = performance.now() - t0;
    if (res.status !== expect) throw new Error(`${method} ${path}: ${res.status} ${JSON.stringify(json)}`);
    return ms;
  };

  const submit = (o: Outcome) => send('POST', '/v1/actions', PAYLOADS[o], o === 'blocked' ? 403 : 200);
  for (let i = 0; i < 50; i++) for (const o of Object.keys(PAYLOADS) as Outcome[]) await submit(o); // warm-up
  for (let i = 0; i < 50; i++) await send('GET', '/v1/usage');

  const times: Record<Outcome | 'usage' | 'settings', number[]> = { allowed: [], pending_review: [], blocked: [], usage: [], settings: [] };
  for (let i = 0; i < N; i++) {
    for (const o of Object.keys(PAYLOADS) as Outcome[]) times[o].push(await submit(o));
    times.usage.push(await send('GET', '/v1/usage'));
    times.settings.push(await send('GET', '/v1/control/settings'));
  }

  const evaluation: number[] = [];
  for (let i = 0; i < N; i++) {
    const t0 = performance.now();
    const policies = await loadPolicySet(node.services.db, tenant.tenant_id, 'bench-agent');
    await evaluatePolicies(
      policies,
      { ...PAYLOADS.pending_review, params: { ...PAYLOADS.pending_review.params } },
      EVALUATION_BUDGET,
      policyPatterns(tenant.tenant_id, 'enterprise'),
    );
    evaluation.push(performance.now() - t0);
  }

  const t0 = performance.now();
  await pool(
    Array.from({ length: N }, (_, i) => i),
    16,
    async (i) => {
      await submit(i % 3 === 0 ? 'pending_review' : 'allowed');
    },
  );
  const perSecond = N / ((performance.now() - t0) / 1000);

  console.log(`\nGoverned actions on ${node.services.storage}, ${N} requests of each (ms)\n`);
  console.log(
    table(
      ['measure', 'p50', 'p95', 'p99'],
      [
        ['POST /v1/actions → allowed', ...stats(times.allowed)],
        ['POST /v1/actions → pending_review (+ event)', ...stats(times.pending_review)],
        ['POST /v1/actions → 403 blocked', ...stats(times.blocked)],
        ['GET /v1/usage (cheap keyed route, same run)', ...stats(times.usage)],
        ['GET /v1/control/settings (one keyed read)', ...stats(times.settings)],
        ['  policy set + evaluation alone, in process', ...stats(evaluation)],
      ],
    ),
  );
  console.log(`\nsubmissions/s from 16 clients: ${f0(perSecond)}`);
  const p95 = pct(times.allowed.concat(times.pending_review, times.blocked), 95);
  console.log(`POST /v1/actions p95 over all outcomes: ${f2(p95)} ms (target ≤ 15 ms) ${p95 <= 15 ? 'OK' : 'OVER'}`);
  await node.close();
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
