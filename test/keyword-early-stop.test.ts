import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { foldLexemeStats, keywordByPostings, keywordCandidates, type Ranked, whereReadable } from '../functions/memories/queries';
import { KEYWORD_STAGES } from '../functions/memories/queries/keyword-stages';
import { rng } from './bench/lib';
import { createEngine, type Tenant, type TestEngine } from './harness';

/**
 * A whole-store keyword search that stops at the memories holding most of the query's words
 * (functions/memories/queries/keyword-stages.ts) answers exactly what reading every posting of the
 * words answers: the same memories, in the same order, with the same BM25 to the last bit.
 */
let engine: TestEngine;
let tenant: Tenant;
const limits = { ...KEYWORD_STAGES };

// Words of falling frequency; `zulu` is in one memory, `nowhere` in none.
const WORDS: [string, number][] = [
  ['apple', 0.5],
  ['banana', 0.35],
  ['cherry', 0.25],
  ['delta', 0.15],
  ['echo', 0.08],
  ['fjord', 0.03],
];
const FILLERS = ['meeting', 'invoice', 'travel', 'garden'];
const MEMORIES = 600;

/** A text from a few shapes only, so many memories tie (same words, frequencies and length); a number of its own keeps it unique. */
function textOf(r: () => number, i: number) {
  const words: string[] = [];
  for (const [w, p] of WORDS) if (r() < p) words.push(...(r() < 0.2 ? [w, w] : [w]));
  const fillers = FILLERS.slice(0, Math.floor(r() * 3));
  return [...words, ...fillers, `n${i}`].join(' ');
}

/** A memory of `zulu`, and some of lexemes a tsquery must quote (the parser keeps URLs, addresses and hyphenated words whole). */
const special = (i: number) =>
  i === 7 ? 'zulu apple banana n7' : i >= 40 && i < 46 ? `apple banana foo-bar https://x.example.com/a?b=c user@example.com n${i}` : null;

beforeAll(async () => {
  engine = await createEngine();
  tenant = await engine.newTenant('enterprise');
  const r = rng(5);
  const ids: string[] = [];
  for (let i = 0; i < MEMORIES; i += 100) {
    const memories = Array.from({ length: 100 }, (_, j) => ({ observation: special(i + j) ?? textOf(r, i + j), auto_link: false }));
    const res = await engine.request('POST', '/v1/memories/batch', { key: tenant.key, body: { memories } });
    expect(res.status, res.text).toBe(200);
    for (const x of res.body.results) ids.push(x.memory!.id);
  }
  // Out of the search's scope, their postings still counted: expired, superseded; and deleted.
  for (const id of ids.slice(10, 20)) {
    const res = await engine.request('PATCH', `/v1/memories/${id}`, { key: tenant.key, body: { superseded_by: ids[0] } });
    expect(res.status, res.text).toBe(200);
  }
  for (const id of ids.slice(20, 30)) {
    const r = await engine.request('DELETE', `/v1/memories/${id}`, { key: tenant.key });
    expect(r.status, r.text).toBe(200);
  }
  const expiring = Array.from({ length: 10 }, () => ({ observation: 'apple banana cherry delta echo', ttl_seconds: 60, auto_link: false }));
  expect((await engine.request('POST', '/v1/memories/batch', { key: tenant.key, body: { memories: expiring } })).status).toBe(200);
  engine.clock.advance(120_000);
  // Every query with two words or more takes the stages here, whatever other tenants the table holds.
  Object.assign(KEYWORD_STAGES, { minDocs: 0, minShare: 0, minPostings: 1 });
});
afterAll(async () => {
  Object.assign(KEYWORD_STAGES, limits);
  await engine.close();
});

const QUERIES = [
  'apple banana',
  'apple banana cherry',
  'apple banana cherry delta',
  'apple banana cherry delta echo',
  'banana fjord',
  'cherry delta echo',
  'echo fjord',
  'fjord delta apple',
  'zulu apple',
  'zulu banana cherry',
  'apple nowhere banana',
  'nowhere',
  'apple',
  'Apples and bananas, cherries!',
  'delta echo fjord meeting',
  'garden travel apple',
  'apple apple banana',
  'apple banana cherry delta echo fjord',
  'foo-bar apple',
  'user@example.com https://x.example.com/a?b=c banana',
];

const key = (rows: Ranked[]) => rows.map((r) => `${r.id} ${r.bm25}`);

describe('whole-store keyword search by stages', () => {
  /** How many of the queries (at several n) stopped at a stage; each answered as reading every posting does. */
  async function compareAll() {
    const db = engine.node.services.db;
    const scope = whereReadable(tenant.tenantId, [], 'all', engine.clock.now(), {});
    const own = { kind: 'tenant' as const, tenantId: tenant.tenantId };
    let staged = 0;
    for (const text of QUERIES) {
      for (const n of [1, 5, 10, 30, 100]) {
        const found = await keywordCandidates(db, scope, text, n, own, { tenantId: tenant.tenantId, listedSpaces: false });
        const every = await keywordByPostings(db, scope, text, n, tenant.tenantId);
        expect(key(found.rows), `${text}, n ${n}`).toEqual(key(every));
        expect(found.grants).toEqual([]);
        if (found.stagedWords) staged++;
      }
    }
    return staged;
  }

  it('answers the top n of reading every posting: same memories, order, ties and scores', async () => {
    // Most queries of several words stop at a stage; the rest fall back to every posting.
    expect(await compareAll()).toBeGreaterThan(20);
  });

  it('answers the same whether a stage finds its memories through the postings or through the rows', async () => {
    for (const rowCost of [0, Number.POSITIVE_INFINITY]) {
      Object.assign(KEYWORD_STAGES, { rowCost });
      try {
        expect(await compareAll(), `row cost ${rowCost}`).toBeGreaterThan(20);
      } finally {
        Object.assign(KEYWORD_STAGES, { rowCost: limits.rowCost });
      }
    }
  });

  it('answers the same when the tenant is too small to count its postings first', async () => {
    Object.assign(KEYWORD_STAGES, limits);
    try {
      expect(await compareAll()).toBe(0);
    } finally {
      Object.assign(KEYWORD_STAGES, { minDocs: 0, minShare: 0, minPostings: 1 });
    }
  });

  it('answers the same when the postings are counted but too few for the stages', async () => {
    Object.assign(KEYWORD_STAGES, { minPostings: 1_000_000 });
    try {
      expect(await compareAll()).toBe(0);
    } finally {
      Object.assign(KEYWORD_STAGES, { minPostings: 1 });
    }
  });

  it('ranks ties newer first and leaves out what the scope excludes', async () => {
    const db = engine.node.services.db;
    const scope = whereReadable(tenant.tenantId, [], 'all', engine.clock.now(), {});
    const found = await keywordCandidates(db, scope, 'apple banana cherry', 100, { kind: 'tenant', tenantId: tenant.tenantId });
    const ties = found.rows.filter((r, i) => i > 0 && r.bm25 === found.rows[i - 1].bm25);
    expect(ties.length).toBeGreaterThan(5);
    for (let i = 1; i < found.rows.length; i++) {
      const [a, b] = [found.rows[i - 1], found.rows[i]];
      expect(a.bm25 === b.bm25 ? a.id > b.id : Number(a.bm25) > Number(b.bm25)).toBe(true);
    }
    const ids = found.rows.map((r) => r.id);
    const excluded = await engine.sql<{ id: string }>(
      sql`SELECT id FROM memories WHERE tenant_id = ${tenant.tenantId} AND (superseded_by IS NOT NULL OR expires_at IS NOT NULL)`,
    );
    expect(excluded).toHaveLength(20);
    for (const { id } of excluded) expect(ids).not.toContain(id);
  });

  it('finds a memory holding fewer of the words that outscores one holding them all', async () => {
    // Y holds all four words in a longer text; X three of them twice each in a shorter one and
    // scores above Y, though each of its pairs is bounded below Y. With Y read (n = 1), a stage of
    // pairs would leave X out: the stage of three words must find it.
    const texts = [
      ...Array.from({ length: 5 }, (_, i) => `walrus a${i}`),
      ...['mango', 'nutmeg', 'olive'].flatMap((w) => Array.from({ length: 3 }, (_, i) => `${w} b${i}`)),
      'walrus mango nutmeg olive y1',
      'mango mango nutmeg nutmeg olive olive x1',
    ];
    for (const { n, found, x } of await searchNewTenant(texts, 'walrus mango nutmeg olive', [1, 2])) {
      expect(found.stagedWords, `n ${n}`).toBeDefined();
      expect(found.rows[0].id).toBe(x);
    }
  });

  it("reads the rare word of a query, not the common words' every posting, once the pairs are read", async () => {
    // Every memory holds two of the three common words, none the order number but one: after the
    // pairs a memory holding one common word cannot enter the top n, the one holding the number can.
    const common = ['kiwi', 'lemon', 'melon'];
    const texts = [...Array.from({ length: 30 }, (_, i) => `${common[i % 3]} ${common[(i + 1) % 3]} c${i}`), 'order 4711 shipped'];
    for (const { n, found, x: order } of await searchNewTenant(texts, 'kiwi lemon melon 4711', [1, 5])) {
      expect(found.stagedWords, `n ${n}`).toBe(1);
      expect(found.rows[0].id).toBe(order);
    }
  });

  /**
   * A new tenant holding `texts`, searched for `query` at each n: the staged answer, checked
   * against reading every posting, and `x` the id of the last text.
   */
  async function searchNewTenant(texts: string[], query: string, ns: number[]) {
    const other = await engine.newTenant('enterprise');
    const res = await engine.request('POST', '/v1/memories/batch', {
      key: other.key,
      body: { memories: texts.map((observation) => ({ observation, auto_link: false })) },
    });
    expect(res.status, res.text).toBe(200);
    const x = res.body.results.at(-1)?.memory?.id.replace('urn:uuid:', '');
    const db = engine.node.services.db;
    const scope = whereReadable(other.tenantId, [], 'all', engine.clock.now(), {});
    const answers = [];
    for (const n of ns) {
      const found = await keywordCandidates(db, scope, query, n, { kind: 'tenant', tenantId: other.tenantId });
      expect(key(found.rows), `n ${n}`).toEqual(key(await keywordByPostings(db, scope, query, n, other.tenantId)));
      answers.push({ n, found, x });
    }
    return answers;
  }

  /** Lexemes whose kept statistics and postings since the mark do not give what counting every posting gives. */
  const miscounted = (tenantNo: number) =>
    engine.sql<{ lexeme: string }>(sql`
      WITH mark AS (SELECT coalesce((SELECT through FROM memory_lexeme_folds WHERE tenant_no = ${tenantNo}), '00000000-0000-0000-0000-000000000000'::uuid) AS through),
      every AS (SELECT lexeme, count(*)::int AS df, max(tf) AS max_tf, min(len) AS min_len FROM memory_postings WHERE tenant_no = ${tenantNo} GROUP BY lexeme),
      since AS (
        SELECT lexeme, count(*)::int AS df, max(tf) AS max_tf, min(len) AS min_len FROM memory_postings
        WHERE tenant_no = ${tenantNo} AND memory_id > (SELECT through FROM mark) GROUP BY lexeme
      ),
      kept AS (SELECT lexeme, df, max_tf, min_len FROM memory_lexeme_stats WHERE tenant_no = ${tenantNo})
      SELECT coalesce(e.lexeme, k.lexeme, s.lexeme) AS lexeme FROM every e FULL JOIN kept k USING (lexeme) FULL JOIN since s USING (lexeme)
      WHERE coalesce(e.df, 0) <> coalesce(k.df, 0) + coalesce(s.df, 0)
         OR greatest(k.max_tf, s.max_tf) < e.max_tf OR least(k.min_len, s.min_len) > e.min_len`);

  it('counts the words from statistics kept up to a mark and the postings stored since, exactly', async () => {
    const db = engine.node.services.db;
    const [{ tenant_no: tenantNo }] = await engine.sql<{ tenant_no: number }>(sql`SELECT tenant_no FROM tenants WHERE id = ${tenant.tenantId}`);
    expect(await foldLexemeStats(db, tenantNo, 1, 300)).toBe(300);
    expect(await foldLexemeStats(db, tenantNo, 1000, 300)).toBe(0);
    const [{ through }] = await engine.sql<{ through: string }>(sql`SELECT through FROM memory_lexeme_folds WHERE tenant_no = ${tenantNo}`);
    expect(await miscounted(tenantNo)).toEqual([]);
    expect(await compareAll()).toBeGreaterThan(20);

    // At or below the mark: a changed text, a deletion, a deletion rolled back (the memory comes back with its id).
    const below = await engine.sql<{ id: string }>(
      sql`SELECT id FROM memories WHERE tenant_id = ${tenant.tenantId} AND id <= ${through}::uuid AND superseded_by IS NULL AND expires_at IS NULL ORDER BY id LIMIT 3`,
    );
    const patched = await engine.request('PATCH', `/v1/memories/${below[0].id}`, { key: tenant.key, body: { observation: 'fjord fjord zulu apple' } });
    expect(patched.status, patched.text).toBe(200);
    expect((await engine.request('DELETE', `/v1/memories/${below[1].id}`, { key: tenant.key })).status).toBe(200);
    engine.clock.advance(1000);
    const target = engine.clock.now().toISOString();
    engine.clock.advance(1000);
    expect((await engine.request('DELETE', `/v1/memories/${below[2].id}`, { key: tenant.key })).status).toBe(200);
    const undone = await engine.request('POST', '/v1/rollback', { key: tenant.key, body: { target } });
    expect(undone.body, undone.text).toMatchObject({ artifacts_restored: 1 });
    // Above it: new memories.
    const more = Array.from({ length: 50 }, (_, i) => ({ observation: `apple banana fjord echo echo n${1000 + i}`, auto_link: false }));
    expect((await engine.request('POST', '/v1/memories/batch', { key: tenant.key, body: { memories: more } })).status).toBe(200);
    expect(await miscounted(tenantNo)).toEqual([]);
    expect(await compareAll()).toBeGreaterThan(20);

    expect(await foldLexemeStats(db, tenantNo, 1, 100_000)).toBeGreaterThan(300);
    expect(await miscounted(tenantNo)).toEqual([]);
    expect(await compareAll()).toBeGreaterThan(20);
  }, 120_000); // two folds and two rounds of 100 searches each way: 28 s in a loaded CI run
});
