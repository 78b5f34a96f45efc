import { createHash } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createEngine, type Tenant, type TestEngine } from './harness';

/**
 * The versioned bundle format (docs/portability.md#bundle-versions): every bundle version ever
 * written keeps importing (a fixture per version), an account survives export → import → export
 * unchanged but for ids and times, unknown optional fields are ignored, and the OpenAPI document
 * serves the line schemas.
 */
let engine: TestEngine;
beforeAll(async () => {
  engine = await createEngine();
});
afterAll(() => engine.close());

const FIXTURES = join(import.meta.dirname, 'fixtures');

type Summary = { stored: Record<string, number>; skipped: { webhook: number }; errors: { line: number; code: string; message: string }[] };

const importFile = (t: Tenant, file: string) =>
  engine.request('POST', '/v1/import?format=bundle', { key: t.key, raw: file, headers: { 'content-type': 'application/x-ndjson' } });
const imported = async (t: Tenant, file: string) => {
  const res = await importFile(t, file);
  expect(res.status, res.text).toBe(200);
  return res.body as unknown as Summary;
};
const exported = async (t: Tenant) => {
  const res = await engine.request('GET', '/v1/export/bundle', { key: t.key });
  expect(res.status, res.text).toBe(200);
  return res.text;
};

function withTrailer(records: Record<string, unknown>[]): string {
  const body = records.map((r) => `${JSON.stringify(r)}\n`).join('');
  return `${body}${JSON.stringify({ type: 'trailer', lines: records.length, sha256: createHash('sha256').update(body).digest('hex') })}\n`;
}
const header = (version: unknown = 1) => ({ type: 'header', format: 'engram-bundle', version, exported_at: '2026-11-01T00:00:00.000Z', counts: {} });

describe('bundle versions', () => {
  const fixtures = readdirSync(FIXTURES).filter((f) => /^bundle-v\d+\.jsonl$/.test(f));

  it('has a fixture for every version', () => {
    expect(fixtures).toContain('bundle-v1.jsonl');
  });

  it.each(fixtures)('%s keeps importing, every record restored', async (name) => {
    const t = await engine.newTenant('enterprise');
    const result = await imported(t, readFileSync(join(FIXTURES, name), 'utf8'));
    expect(result.errors).toEqual([]);
    expect(result.stored).toMatchObject({ space: 1, agent: 1, pack: 1, policy: 1, memory: 2, triple: 1, webhook: 0 });
    expect(result.skipped.webhook).toBe(1);
    const [inSpace] = await engine.sql<{ name: string }>(
      sql`SELECT s.name FROM memories m JOIN context_spaces s ON s.id = m.space_id WHERE m.tenant_id = ${t.tenantId}`,
    );
    expect(inSpace.name).toBe('research');
  });

  it('ignores unknown fields of a known version, refuses an unknown version, and names a missing field', async () => {
    const t = await engine.newTenant('enterprise');
    const memory = { type: 'memory', id: 'urn:uuid:0193a0a0-0000-7000-8000-00000000e001', text: 'Future-proof fact.' };
    const result = await imported(
      t,
      withTrailer([
        header(),
        { ...memory, sentiment: 'positive', embedding_model: 'x' },
        { type: 'space', id: 'urn:uuid:0193a0a0-0000-7000-8000-00000000e002' },
      ]),
    );
    expect(result.stored.memory).toBe(1);
    expect(result.errors).toEqual([{ line: 3, code: 'INVALID_RECORD', message: expect.stringContaining('name') }]);

    const future = await importFile(t, withTrailer([header(2), memory]));
    expect(future.status).toBe(422);
    expect(future.body).toMatchObject({ code: 'BUNDLE_INTEGRITY_FAILED', message: expect.stringContaining('version 2') });
  });

  it('serves the line schemas as OpenAPI components', async () => {
    const doc = (await engine.request('GET', '/openapi.json')).body as { components: { schemas: Record<string, { properties?: Record<string, unknown> }> } };
    for (const kind of ['Header', 'Space', 'Agent', 'Pack', 'Policy', 'Memory', 'Triple', 'Webhook', 'Trailer'])
      expect(doc.components.schemas[`Bundle${kind}Line`], kind).toBeDefined();
    expect(Object.keys(doc.components.schemas.BundleMemoryLine.properties ?? {})).toEqual(expect.arrayContaining(['id', 'text', 'tags', 'space_id']));
  });
});

/** A small seeded generator (mulberry32), so a failing case names its seed and runs again the same. */
function generator(seed: number) {
  let a = seed;
  const next = () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const int = (lo: number, hi: number) => lo + Math.floor(next() * (hi - lo + 1));
  const pick = <T>(xs: readonly T[]) => xs[int(0, xs.length - 1)];
  const WORDS = ['alpha', 'beta', 'gamma', 'café', 'naïve', '漢字', 'delta', 'emoji 🚀', 'quote "x"', 'back\\slash', 'tab\tin', 'line\nbreak'];
  const words = (n: number) => Array.from({ length: n }, () => pick(WORDS)).join(' ');
  return { next, int, pick, words };
}

/** The bundle's records as comparable values: ids, times and the exporting tenant left out, space ids as the space's name. */
function normalized(file: string) {
  const records = file
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as Record<string, unknown>);
  const spaceNames = new Map(records.filter((r) => r.type === 'space').map((r) => [r.id, r.name]));
  return records
    .filter((r) => r.type !== 'trailer')
    .map(({ id, created_at, updated_at, exported_at, tenant_id, ...rest }) =>
      rest.type === 'memory'
        ? // An imported memory is `import` and `external` (docs/memories.md#provenance-and-trust): only its ref travels.
          { ...rest, space_id: rest.space_id ? spaceNames.get(rest.space_id) : null, source: (rest.source as { ref: unknown }).ref, trust: undefined }
        : rest,
    )
    .map((r) => JSON.stringify(r))
    .sort();
}

async function populate(t: Tenant, seed: number) {
  const g = generator(seed);
  const ok = async (path: string, body: Record<string, unknown>) => {
    const res = await engine.request('POST', path, { key: t.key, body });
    expect(res.status, `${path} ${res.text}`).toBeLessThan(300);
    return res.body as Record<string, unknown>;
  };
  const spaces: string[] = [];
  for (let i = 0; i < g.int(1, 3); i++)
    spaces.push((await ok('/v1/context-spaces', { name: `space ${seed}-${i}`, description: g.words(3), tags: [`t${i}`] })).space_id as string);
  const packs: string[] = [];
  for (let i = 0; i < g.int(0, 2); i++) {
    const tool = `tool.${seed}_${i}`;
    packs.push(
      (await ok('/v1/capabilities', { name: `pack-${seed}-${i}`, tools: [{ name: tool, description: g.words(2) }], risk_levels: { [tool]: 'low' } }))
        .name as string,
    );
  }
  for (let i = 0; i < g.int(1, 2); i++) {
    const agentId = `agent-${seed}-${i}`;
    await ok('/v1/agents', { agent_id: agentId, name: g.words(2).slice(0, 100), provider: 'anthropic', model: 'claude', capabilities: packs.slice(0, i + 1) });
    if (g.next() < 0.5) {
      const res = await engine.request('PATCH', `/v1/agents/${agentId}`, { key: t.key, body: { status: 'paused' } });
      expect(res.status, res.text).toBe(200);
    }
  }
  for (let i = 0; i < g.int(1, 3); i++)
    await ok('/v1/control/policies', {
      name: `Policy${seed}_${i}`,
      description: g.words(4),
      enabled: g.next() < 0.8,
      rules: [{ match: `\\b${g.pick(['drop', 'wire', 'delete'])}\\b`, severity: g.pick(['low', 'high', 'critical']), confidence: 0.5 }],
    });
  for (let i = 0; i < g.int(2, 8); i++)
    await ok('/v1/memories', {
      observation: `${g.words(g.int(1, 6))} #${seed}-${i}`,
      tags: [...new Set(Array.from({ length: g.int(0, 3) }, () => g.pick(['a', 'b', 'c', 'd'])))],
      importance: g.int(1, 10),
      ...(g.next() < 0.5 ? { context: g.words(2) } : {}),
      ...(g.next() < 0.5 ? { agent_id: `agent-${seed}-0` } : {}),
      ...(g.next() < 0.5 ? { space_id: g.pick(spaces) } : {}),
      auto_link: false,
    });
  const types = new Map<string, string>();
  for (let i = 0; i < g.int(0, 4); i++) {
    const [subject, object] = [`entity ${g.int(0, 4)}`, `entity ${g.int(0, 4)}`];
    for (const name of [subject, object]) if (!types.has(name)) types.set(name, g.pick(['person', 'concept', 'place']));
    await ok('/v1/knowledge/triples', {
      subject,
      object,
      subject_type: types.get(subject),
      object_type: types.get(object),
      predicate: g.pick(['knows', 'wrote', 'near']),
      confidence: g.pick([0.5, 1]),
      metadata: { seed, note: g.words(1) },
    });
  }
}

describe('round trip', () => {
  it.each([1, 2, 3, 4])('export → import into an empty account → export is the same account (seed %i)', async (seed) => {
    const source = await engine.newTenant('enterprise');
    await populate(source, seed);
    const first = await exported(source);
    const target = await engine.newTenant('enterprise');
    const result = await imported(target, first);
    expect(result.errors).toEqual([]);
    const again = await exported(target);
    expect(normalized(again)).toEqual(normalized(first));
    const memories = again
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { type: string; source?: { kind: string; via: string }; trust?: string })
      .filter((r) => r.type === 'memory');
    for (const m of memories) expect(m).toMatchObject({ source: { kind: 'import', via: 'import' }, trust: 'external' });
  });
});
