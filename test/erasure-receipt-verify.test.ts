import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { verifyErasureReceipt } from '../sdk/src/verify';
import { buildCliIfStale, runCli } from './cli/cli-process';
import { createEngine, type TestEngine } from './harness';

/**
 * An erasure receipt checked offline by the SDK's verifyErasureReceipt and `engram erasure verify`:
 * valid as served, invalid after an edit of any field it shows.
 */
type Json = Record<string, unknown>;

let engine: TestEngine;
let dir: string;
let receipt: Json;
let publicKey: string;
beforeAll(async () => {
  engine = await createEngine();
  const t = await engine.newTenant('enterprise');
  dir = mkdtempSync(join(tmpdir(), 'engram-receipt-'));
  const stored = await engine.request('POST', '/v1/memories', { key: t.key, body: { observation: 'Jane Roe takes drug X', tags: ['patient:jane'] } });
  expect(stored.status, stored.text).toBe(201);
  const erased = await engine.request('POST', '/v1/erasures', { key: t.key, body: { reason: 'GDPR Art. 17 request', tags: ['patient:jane'] } });
  expect(erased.status, erased.text).toBeLessThan(300);
  receipt = erased.body as Json;
  publicKey = ((await engine.request('GET', '/v1/traces/public-key', { key: t.key })).body as Json).public_key as string;
  await buildCliIfStale();
}, 120_000);
afterAll(async () => {
  rmSync(dir, { recursive: true, force: true });
  await engine.close();
});

function edited(value: unknown): unknown {
  // The first character, not the tail: in base64 the last character before `=` may hold only
  // padding bits, which a decoder drops, so an edit there can leave the signature's bytes unchanged.
  if (typeof value === 'string') return `${value[0] === 'A' ? 'B' : 'A'}${value.slice(1)}`;
  if (typeof value === 'number') return value + 1;
  if (typeof value === 'boolean') return !value;
  if (Array.isArray(value)) return [...value, 'urn:uuid:01935f6e-8a2b-7c3d-9e4f-5a6b7c8d9e0f'];
  if (value && typeof value === 'object') return { ...value, added: 1 };
  return 'added';
}

/** Every field of the receipt, one at a time, and each field of its selector and counts. */
function edits(): [string, Json][] {
  const out: [string, Json][] = Object.keys(receipt).map((field) => [field, { ...structuredClone(receipt), [field]: edited(receipt[field]) }]);
  for (const nested of ['selector', 'counts'])
    for (const field of Object.keys(receipt[nested] as Json)) {
      const copy = structuredClone(receipt);
      (copy[nested] as Json)[field] = edited((receipt[nested] as Json)[field]);
      out.push([`${nested}.${field}`, copy]);
    }
  out.push(['an added field', { ...structuredClone(receipt), approved_by: 'legal' }]);
  return out;
}

describe('an erasure receipt verified offline', () => {
  it('the SDK: valid as served, invalid after any edit', async () => {
    expect(await verifyErasureReceipt(receipt, { publicKey })).toEqual({ valid: true, problems: [] });
    const table = edits();
    expect(table.length).toBeGreaterThan(15);
    for (const [what, bad] of table) expect((await verifyErasureReceipt(bad, { publicKey })).valid, what).toBe(false);
    expect((await verifyErasureReceipt({ erasure_id: 'x' }, { publicKey })).problems[0]).toMatch(/^not an erasure receipt/);
  });

  it('engram erasure verify: exit 0 as served, 1 with the reason after an edit or for what is not a receipt', async () => {
    const env = { XDG_CONFIG_HOME: join(dir, 'nobody'), ENGRAM_URL: 'http://127.0.0.1:9' };
    writeFileSync(join(dir, 'key.pem'), publicKey);
    const run = (name: string, body: unknown) => {
      writeFileSync(join(dir, name), JSON.stringify(body));
      return runCli(['erasure', 'verify', join(dir, name), '--public-key', join(dir, 'key.pem')], env);
    };
    const good = await run('good.json', receipt);
    expect(good.code, good.stderr).toBe(0);
    expect(good.stdout).toContain(`valid: erasure ${receipt.erasure_id}`);
    for (const [what, bad] of edits().filter(([w]) => ['reason', 'memory_ids', 'erased_at', 'counts.memories', 'key_id'].includes(w))) {
      const result = await run('bad.json', bad);
      expect(result.code, what).toBe(1);
      expect(result.stderr, what).toMatch(/^invalid: /);
    }
    const notReceipt = await run('not.json', [1, 2]);
    expect(notReceipt.code).toBe(1);
    expect(notReceipt.stderr).toMatch(/^invalid: not an erasure receipt/);
  }, 120_000);
});
