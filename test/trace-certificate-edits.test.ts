import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CONSOLE_SCRIPT } from '../functions/console/assets/console-script';
import { verifyTraceCertificate } from '../sdk/src/verify';
import { buildCliIfStale, runCli } from './cli/cli-process';
import { signIn } from './console-session';
import { createEngine, type Tenant, type TestEngine } from './harness';

/**
 * What is signed covers what is shown: every field of a trace certificate, edited in turn, makes
 * each verifier say invalid — the SDK's verifyTraceCertificate, `engram trace verify`, and the
 * console's bundled script run against a stand-in for the trace page.
 */
type Json = Record<string, unknown>;
type Certificate = Json & { steps: Json[] };

let engine: TestEngine;
let t: Tenant;
let dir: string;
let plain: Certificate;
let withContent: Certificate;
beforeAll(async () => {
  engine = await createEngine();
  t = await engine.newTenant('pro');
  dir = mkdtempSync(join(tmpdir(), 'engram-cert-edits-'));
  const traceId = await sealed([
    { type: 'THOUGHT', content: 'Refund order 42?' },
    { type: 'ACTION', content: 'POST /v1/refunds {"order": 42}\r\n— 12.50 EUR', metadata: { tool: 'stripe', amount: 12.5 } },
    { type: 'OUTPUT', content: '\nRefunded.' },
  ]);
  plain = await certificateOf(traceId);
  withContent = await certificateOf(traceId, true);
  await buildCliIfStale();
}, 120_000);
afterAll(async () => {
  rmSync(dir, { recursive: true, force: true });
  await engine.close();
});

const post = (path: string, body: unknown = {}) => engine.request('POST', path as never, { key: t.key, body });

async function sealed(steps: Json[], beforeSteps?: (traceId: string) => Promise<unknown>) {
  const traceId = ((await post('/v1/traces', { agent_id: 'refund-agent', description: 'Refund order 42', tags: ['refunds'] })).body as Json).trace_id as string;
  await beforeSteps?.(traceId);
  for (const s of steps) expect((await post(`/v1/traces/${traceId}/steps`, s)).status).toBe(201);
  expect((await post(`/v1/traces/${traceId}/complete`)).status).toBe(200);
  return traceId;
}

async function certificateOf(traceId: string, content = false): Promise<Certificate> {
  const res = await engine.request('GET', `/v1/traces/${traceId}/certificate${content ? '?include_content=true' : ''}` as never, { key: t.key });
  expect(res.status, res.text).toBe(200);
  return res.body as Certificate;
}

/** One character changed, keeping its kind (a hex digit stays one), so the shape still passes. */
function nudged(text: string): string {
  const at = text.slice(text.length >> 1).search(/[0-9A-Za-z]/) + (text.length >> 1);
  const c = text[at];
  const next = c === '9' ? '0' : c === 'f' ? 'a' : c === 'z' ? 'y' : c === 'Z' ? 'Y' : String.fromCharCode(c.charCodeAt(0) + 1);
  return text.slice(0, at) + next + text.slice(at + 1);
}

function editedValue(field: string, value: unknown): unknown {
  if (field === 'status') return value === 'completed' ? 'failed' : 'completed';
  if (field === 'type') return value === 'ACTION' ? 'OBSERVATION' : 'ACTION';
  if (typeof value === 'string') return nudged(value);
  if (typeof value === 'number') return value + 1;
  if (Array.isArray(value)) return [...value, 'added'];
  if (value && typeof value === 'object') return { ...value, tool: 'paypal' };
  return 'added';
}

/** Every top-level field, every field of each step, and a few edits of the whole. */
function edits(cert: Certificate): [string, Certificate][] {
  const out: [string, Certificate][] = [];
  for (const field of Object.keys(cert)) {
    if (field === 'steps') continue;
    out.push([field, { ...structuredClone(cert), [field]: editedValue(field, cert[field]) }]);
  }
  for (const [i, step] of cert.steps.entries())
    for (const field of Object.keys(step)) {
      const copy = structuredClone(cert);
      copy.steps[i][field] = editedValue(field, step[field]);
      out.push([`steps[${i}].${field}`, copy]);
    }
  const copy = () => structuredClone(cert);
  const dropped = copy();
  dropped.steps.pop();
  const swapped = copy();
  [swapped.steps[0], swapped.steps[1]] = [swapped.steps[1], swapped.steps[0]];
  out.push(
    ['a step dropped', dropped],
    ['two steps swapped', swapped],
    ['an added field', { ...copy(), approved_by: 'finance' }],
    ['certificate_signature removed', { ...copy(), certificate_signature: null }],
    ['downgraded to version 1', { ...copy(), certificate_version: 1, certificate_signature: null }],
  );
  return out;
}

describe('the certificate', () => {
  it('carries certificate_signature and, on request, each step with its content', () => {
    expect(plain).toMatchObject({ certificate_version: 2, agent_id: 'refund-agent', description: 'Refund order 42', tags: ['refunds'] });
    expect(plain.certificate_signature).toMatch(/^[A-Za-z0-9+/]+=*$/);
    expect(plain.steps[0]).not.toHaveProperty('content');
    expect(withContent.steps[1]).toMatchObject({ type: 'ACTION', content: 'POST /v1/refunds {"order": 42}\r\n— 12.50 EUR', metadata: { tool: 'stripe' } });
    expect(withContent.certificate_signature).toBe(plain.certificate_signature);
  });
});

describe('the SDK verifier', () => {
  it('accepts both forms as they come', async () => {
    expect(await verifyTraceCertificate(plain)).toEqual({
      valid: true,
      version: 2,
      keyValid: true,
      chainValid: true,
      signatureValid: true,
      certificateSignatureValid: true,
      contentValid: null,
      problems: [],
    });
    expect(await verifyTraceCertificate(withContent)).toMatchObject({ valid: true, contentValid: true, problems: [] });
  });

  it('says invalid after any edit, of any field, and says what failed', async () => {
    const table = [...edits(plain), ...edits(withContent)];
    expect(table.length).toBeGreaterThan(40);
    for (const [what, cert] of table) {
      const check = await verifyTraceCertificate(cert);
      expect(check.valid, what).toBe(false);
      expect(check.problems.length, what).toBeGreaterThan(0);
    }
    const content = edits(withContent).find(([what]) => what === 'steps[1].content')![1];
    expect(await verifyTraceCertificate(content)).toMatchObject({ contentValid: false, certificateSignatureValid: true, chainValid: true });
    const agent = edits(plain).find(([what]) => what === 'agent_id')![1];
    expect(await verifyTraceCertificate(agent)).toMatchObject({ certificateSignatureValid: false, signatureValid: true, chainValid: true });
  });

  it('answers what is not a certificate with a reason, not an exception', async () => {
    for (const input of [null, 42, 'certificate', [], {}, { ...plain, steps: 'none' }, { ...plain, steps: [null] }]) {
      const check = await verifyTraceCertificate(input);
      expect(check.valid).toBe(false);
      expect(check.problems[0]).toMatch(/^not a trace certificate: /);
    }
  });

  it('reports a version 1 certificate (a trace started before whole certificates) as such, its root still checked', async () => {
    const steps = [{ type: 'THOUGHT', content: 'old' }];
    const traceId = await sealed(steps, (id) => engine.node.services.db.execute(sql`UPDATE traces SET certificate_version = 1 WHERE id = ${id}`));
    expect((await post(`/v1/traces/${traceId}/verify`)).body).toMatchObject({ valid: true });
    const legacy = await certificateOf(traceId, true);
    expect(legacy).toMatchObject({ certificate_version: 1, certificate_signature: null });
    const check = await verifyTraceCertificate(legacy);
    expect(check).toMatchObject({ valid: false, version: 1, chainValid: true, signatureValid: true, contentValid: true, certificateSignatureValid: false });
    expect(check.problems).toEqual([expect.stringMatching(/^certificate_version 1: only integrity_root_hash is signed/)]);
  });
});

describe('engram trace verify', () => {
  const offline = () => ({ XDG_CONFIG_HOME: join(dir, 'nobody'), ENGRAM_URL: 'http://127.0.0.1:9' });
  const verifyFile = async (name: string, body: string) => {
    const file = join(dir, name);
    writeFileSync(file, body);
    return runCli(['trace', 'verify', file], offline());
  };

  it('exits 0 on the certificate as served and 1 after any edit', async () => {
    expect((await verifyFile('good.json', JSON.stringify(withContent))).code).toBe(0);
    for (const [i, [what, cert]] of [...edits(plain).filter(([w]) => !w.startsWith('steps[')), ...edits(withContent)].entries()) {
      const run = await verifyFile(`edit-${i}.json`, JSON.stringify(cert));
      expect(run.code, what).toBe(1);
      expect(run.stderr, what).toMatch(/^invalid: /);
    }
  }, 120_000);

  it('says plainly when the file is JSON but not a certificate', async () => {
    for (const [i, body] of ['42', '{}', '[]', '{"steps": 1}'].entries()) {
      const run = await verifyFile(`not-${i}.json`, body);
      expect(run.code).toBe(1);
      expect(run.stderr).toMatch(/^invalid: not a trace certificate: /);
      expect(run.stderr).not.toMatch(/TypeError/);
    }
  });
});

/** The trace page as functions/console/views/traces.tsx renders it, for the console's script. */
function tracePage(cert: Certificate) {
  const el = (props: Json) => ({ dataset: {}, textContent: '', className: '', querySelector: () => null, ...props });
  const { steps, ...top } = cert;
  const given = { ...top, steps: steps.map(({ content: _c, metadata: _m, created_at: _t, ...hashes }) => hashes) };
  const cards = steps.map((s) =>
    el({
      dataset: { stepIndex: String(s.step_index), metadata: JSON.stringify(s.metadata), createdAt: s.created_at },
      querySelector: (selector: string) => el({ textContent: selector === 'pre' ? s.content : s.type }),
    }),
  );
  const shown = (field: string, text: unknown, format?: string) => el({ dataset: { certified: field, format }, textContent: String(text) });
  const certified = [
    shown('trace_id', cert.trace_id),
    shown('agent_id', cert.agent_id),
    shown('status', cert.status),
    shown(
      'signed_at',
      String(cert.signed_at)
        .replace('T', ' ')
        .replace(/\.\d+Z$/, ' UTC'),
      'time',
    ),
    shown('integrity_root_hash', cert.integrity_root_hash),
  ];
  let click: () => Promise<void> = async () => {};
  const byId: Record<string, unknown> = {
    'trace-certificate': el({ dataset: { certificate: JSON.stringify(given) } }),
    'verify-signature': { addEventListener: (_: string, listener: () => Promise<void>) => (click = listener) },
    'verify-result': el({}),
  };
  const document = {
    getElementById: (id: string) => byId[id] ?? null,
    querySelectorAll: (selector: string) => (selector === '[data-step-index]' ? cards : selector === '[data-certified]' ? certified : []),
  };
  return { document, certified, result: byId['verify-result'] as { className: string; textContent: string }, click: () => click() };
}

/** Runs the served console script on the page and presses "Verify in this browser". */
async function browserVerdict(page: ReturnType<typeof tracePage>) {
  new Function('document', 'setInterval', CONSOLE_SCRIPT)(page.document, () => 0);
  await page.click();
  return page.result;
}

describe("the console's in-browser check (the served bundle)", () => {
  it('the trace page carries the certificate and shows each step as its exact text', async () => {
    const visitor = await signIn((req) => engine.app.request(req), t.key);
    const page = await visitor.get(`/console/traces/${plain.trace_id}`);
    expect(page.status).toBe(200);
    const html = await page.text();
    const attribute = /data-certificate="([^"]*)"/.exec(html)?.[1] ?? '';
    const unescaped = attribute
      .replace(/&quot;/g, '"')
      .replace(/&#39;/g, "'")
      .replace(/&lt;/g, '<')
      .replace(/&gt;/g, '>')
      .replace(/&amp;/g, '&');
    expect(JSON.parse(unescaped)).toEqual(plain);
    // The parser drops a newline right after <pre> and reads a bare carriage return as a line feed.
    expect(html).toContain('<pre>POST /v1/refunds {"order": 42}&#13;\n— 12.50 EUR</pre>');
    expect(html).toContain('<pre>\n\nRefunded.</pre>');
    expect(html).toContain('data-certified="agent_id"');
  });

  it('says valid for the page as served', async () => {
    const result = await browserVerdict(tracePage(withContent));
    expect(result.className, result.textContent).toBe('notice ok');
  });

  it('says invalid after any edit of the certificate or of what the page shows', async () => {
    for (const [what, cert] of edits(withContent)) {
      const result = await browserVerdict(tracePage(cert));
      expect(result.className, what).toBe('notice bad');
      expect(result.textContent, what).toMatch(/^Invalid: /);
    }
    const page = tracePage(withContent);
    page.certified[1].textContent = 'another-agent';
    expect((await browserVerdict(page)).textContent).toContain("the page's agent_id is not the certificate's");
  });
});
