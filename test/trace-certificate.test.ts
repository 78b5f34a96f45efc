import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createEngine, type Tenant, type TestEngine } from './harness';

/**
 * The verification block of docs/change-control.md, run as a user would run it: bash, jq, sha256sum and openssl on
 * the certificate alone. CI installs jq (.ci/run); elsewhere the test is skipped without the tools.
 */
const DOC = readFileSync(new URL('../docs/change-control.md', import.meta.url), 'utf8');
const SCRIPT = /```bash\n(# verify-trace\.sh[\s\S]*?)```/.exec(DOC)?.[1];
const tools = ['jq', 'openssl', 'sha256sum', 'base64'].every((tool) => spawnSync('sh', ['-c', `command -v ${tool}`]).status === 0);

let engine: TestEngine;
let t: Tenant;
let dir: string;
beforeAll(async () => {
  engine = await createEngine();
  t = await engine.newTenant('pro');
  dir = mkdtempSync(join(tmpdir(), 'engram-cert-'));
});
afterAll(async () => {
  rmSync(dir, { recursive: true, force: true });
  await engine.close();
});

async function certificateOf(steps: { type: string; content: string; metadata?: object }[], withContent = false) {
  const post = <P extends string>(path: P, body: unknown = {}) => engine.request('POST', path, { key: t.key, body });
  const traceId = (await post('/v1/traces', { agent_id: 'auditor' })).body.trace_id;
  for (const s of steps) expect((await post(`/v1/traces/${traceId}/steps`, s)).status).toBe(201);
  expect((await post(`/v1/traces/${traceId}/complete`)).status).toBe(200);
  const cert = await engine.request(
    'GET',
    `/v1/traces/${traceId}/certificate${withContent ? '?include_content=true' : ''}` as '/v1/traces/{trace_id}/certificate',
    {
      key: t.key,
    },
  );
  expect(cert.status).toBe(200);
  return cert.body;
}

function runReadme(cert: unknown) {
  writeFileSync(join(dir, 'cert.json'), JSON.stringify(cert));
  return spawnSync('bash', ['-c', SCRIPT!], { cwd: dir, encoding: 'utf8' });
}

describe.skipIf(!tools && !process.env.CI)('docs/change-control.md verifies a trace certificate with openssl', () => {
  it('the page holds the block', () => {
    expect(SCRIPT).toContain('openssl dgst -sha256');
  });

  it('accepts a real certificate, with steps and without, with their contents and without', async () => {
    const steps = [
      { type: 'THOUGHT', content: 'Refund order 42?' },
      {
        type: 'ACTION',
        content: 'POST /v1/refunds {"order": 42} — €12.50\r\n\t"quoted"',
        metadata: { tool: 'stripe', amount: 12.5, nested: { z: [1, null] } },
      },
      { type: 'OUTPUT', content: 'done\nwith a second line' },
    ];
    for (const cert of [await certificateOf(steps), await certificateOf(steps, true), await certificateOf([])]) {
      const run = runReadme(cert);
      expect(run.status, run.stderr).toBe(0);
      expect(run.stdout).toContain('chain: OK');
      expect(run.stdout.match(/Verified OK/g)).toHaveLength(2);
    }
  });

  it('fails on an edit only certificate_signature covers, or on a step content that does not hash', async () => {
    const cert = await certificateOf(
      [
        { type: 'THOUGHT', content: 'one' },
        { type: 'ACTION', content: 'two', metadata: { tool: 'stripe' } },
      ],
      true,
    );
    const step = (i: number, change: object) => ({ ...cert, steps: cert.steps.map((s: object, j: number) => (j === i ? { ...s, ...change } : s)) });
    const forged = [
      { ...cert, agent_id: 'another-agent' },
      { ...cert, status: 'failed' },
      { ...cert, signed_at: '2020-01-01T00:00:00.000Z' },
      { ...cert, description: 'Something else' },
      { ...cert, certificate_signature: null },
      { ...cert, certificate_version: 1 },
      step(1, { type: 'THOUGHT' }),
      step(1, { content: 'three' }),
      step(1, { metadata: { tool: 'paypal' } }),
      step(0, { created_at: '2020-01-01T00:00:00.000Z' }),
    ];
    for (const [i, bad] of forged.entries()) expect(runReadme(bad).status, `forgery ${i}`).not.toBe(0);
    expect(runReadme(cert).status).toBe(0);
  });

  it('fails on a changed step hash, a reordered chain, a forged root, a flipped signature or a swapped key', async () => {
    const cert = await certificateOf([
      { type: 'THOUGHT', content: 'one' },
      { type: 'ACTION', content: 'two' },
      { type: 'OUTPUT', content: 'three' },
    ]);
    const other = await certificateOf([{ type: 'THOUGHT', content: 'another trace' }]);
    const flip = (b64: string) => {
      const bytes = Buffer.from(b64, 'base64');
      bytes[0] ^= 1;
      return bytes.toString('base64');
    };
    const forged = [
      { ...cert, steps: cert.steps.map((s: { integrity_hash: string }, i: number) => (i === 1 ? { ...s, integrity_hash: '0'.repeat(64) } : s)) },
      { ...cert, steps: [cert.steps[1], cert.steps[0], cert.steps[2]] },
      { ...cert, steps: cert.steps.slice(0, 2) },
      { ...cert, integrity_root_hash: other.integrity_root_hash },
      { ...cert, signature: flip(cert.signature) },
      { ...cert, signature: other.signature },
      { ...cert, key_id: '0'.repeat(64) },
    ];
    for (const [i, bad] of forged.entries()) expect(runReadme(bad).status, `forgery ${i}`).not.toBe(0);
    expect(runReadme(cert).status).toBe(0);
  });

  it('openssl on this machine is the one the page assumes', () => {
    expect(execFileSync('openssl', ['version'], { encoding: 'utf8' })).toMatch(/^OpenSSL [3-9]\./);
  });
});
