import { env } from 'cloudflare:workers';
import { beforeAll, describe, expect, it } from 'vitest';
import { testClient } from '../client';
import worker from '../../functions/worker';

/**
 * Policies inside workerd: re2js (the linear-time engine) and the YAML parser are pure JS, so a
 * policy created from YAML and the dry run behave as on Node.
 */
const bindings = env as unknown as Record<string, string>;
const pending: Promise<unknown>[] = [];
const ctx = { waitUntil: (p: Promise<unknown>) => void pending.push(p), passThroughOnException() {}, props: {} } as unknown as ExecutionContext;
const request = testClient((req) => worker.fetch(req, bindings, ctx), { base: 'https://engram.test' });

let key = '';
beforeAll(async () => {
  const res = await request('POST', '/admin/v1/tenants', {
    key: bindings.ADMIN_TOKEN,
    body: { email: `policies-${crypto.randomUUID().slice(0, 12)}@example.com`, tier: 'pro' },
  });
  expect(res.status, res.text).toBe(201);
  key = res.body.api_key;
});

describe('worker in workerd: policies', () => {
  it('creates a policy from YAML and dry-runs it, with a catastrophic pattern on a big payload', async () => {
    const yaml = "name: WorkerdDrops\nrules:\n  - match: '\\bdrop\\s+table\\b'\n    severity: critical\n  - match: '(a+)+$'\n    severity: low\n";
    const created = await request('POST', '/v1/control/policies', { key, raw: yaml, headers: { 'content-type': 'application/yaml' } });
    expect(created.status, created.text).toBe(201);
    expect(created.body).toMatchObject({ policy_name: 'WorkerdDrops', action: 'created', version: 1 });
    await Promise.all(pending.splice(0));

    const run = await request('POST', '/v1/control/policies/test', {
      key,
      body: { action: 'db.query', params: { sql: 'DROP TABLE users', blob: `${'a'.repeat(50_000)}!` } },
    });
    expect(run.status, run.text).toBe(200);
    expect(run.body.status).toBe('blocked');
    expect(run.body.matches).toEqual([
      { policy: 'WorkerdDrops', rule_index: 0, severity: 'critical', on_violation: 'block', match: 'DROP TABLE', field: '$.params.sql' },
    ]);

    const bad = await request('POST', '/v1/control/policies', { key, body: { name: 'Bad', rules: [{ match: '(a)\\1', severity: 'low' }] } });
    expect(bad.status).toBe(400);
    expect(bad.body).toMatchObject({ code: 'svc_ram.v1.control.invalid_policy', details: [{ path: 'rules[0].match' }] });
  });
});
