import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fuse, ownMatch, queryTexts, rankingVector, semanticMatch, spreadToNeighbours, UNMATCHED_SCALE } from '../functions/memories/hybrid';
import type { Ranked } from '../functions/memories/queries';
import { createEngine, storageName, type Tenant, type TestEngine } from './harness';

/**
 * The hybrid ranking (functions/memories/hybrid.ts) and the per-tenant BM25 statistics
 * (migrations/0022), through the API.
 */
let engine: TestEngine;
beforeAll(async () => {
  engine = await createEngine();
});
afterAll(() => engine.close());

type Hit = { uuid: string; score: number; observation: string };
const store = async (t: Tenant, observation: string, extra: Record<string, unknown> = {}) => {
  const res = await engine.request('POST', '/v1/memories', { key: t.key, body: { observation, auto_link: false, on_conflict: 'manual', ...extra } });
  expect(res.status, res.text).toBe(201);
  return res.body.id as string;
};
const search = async (t: Tenant, params: Record<string, string>) => {
  const res = await engine.request('GET', `/v1/memories/search?${new URLSearchParams({ limit: '10', ...params })}`, { key: t.key });
  expect(res.status, res.text).toBe(200);
  return res.body.memories as Hit[];
};
const scores = (hits: Hit[]) => Object.fromEntries(hits.map((h) => [h.uuid, h.score]));

describe('hybrid ranking', () => {
  it('finds the memory stored next to a hit, which keyword and semantic search miss', async () => {
    const t = await engine.newTenant();
    for (const filler of [
      'The printer on floor two jams on glossy paper.',
      'Lunch orders go in before eleven.',
      'The VPN certificate renews in March.',
      'Parking permits are handed out by reception.',
    ]) {
      await store(t, filler);
    }
    engine.clock.advance(2 * 3_600_000); // a new conversation: the fillers are not its neighbours
    const question = await store(t, 'Where should the team offsite happen this year?');
    const answer = await store(t, 'Lisbon, near the old town, during the second week of June.');
    engine.clock.advance(2 * 3_600_000);
    await store(t, 'The coffee machine descaling is due on Friday.');

    const keyword = await search(t, { q: 'team offsite', mode: 'keyword' });
    expect(keyword.map((h) => h.uuid)).toEqual([question]);
    // Semantic search sees nothing of the query in the answer: it scores it as it scores the fillers
    // (which of those tied rows a limit of 2 would keep is the index's choice, not a ranking).
    const semantic = await search(t, { q: 'team offsite', mode: 'semantic' });
    const similarity = (id: string) => (semantic.find((h) => h.uuid === id) as Hit & { similarity: number }).similarity;
    expect(semantic[0].uuid).toBe(question);
    expect(similarity(answer)).toBe(0);
    expect(semantic.filter((h) => (h as Hit & { similarity: number }).similarity === 0)).toHaveLength(6);

    const hybrid = await search(t, { q: 'team offsite', mode: 'hybrid', limit: '2' });
    expect(hybrid.map((h) => h.uuid)).toEqual([question, answer]);
    for (const h of hybrid) expect(h.score).toBeLessThanOrEqual(1);
  });

  it('lends only to neighbours of the same agent, inside the filter, and stored close in time', async () => {
    const t = await engine.newTenant();
    const question = await store(t, 'Which courier handles the Rotterdam shipments?', { agent_id: 'ops', tags: ['logistics'] });
    const otherAgent = await store(t, 'Somebody renamed the staging cluster.', { agent_id: 'infra', tags: ['logistics'] });
    const outsideFilter = await store(t, 'Quarterly numbers are due next week.', { agent_id: 'ops', tags: ['finance'] });
    const answer = await store(t, 'We use Van Dijk Transport since January.', { agent_id: 'ops', tags: ['logistics'] });
    engine.clock.advance(2 * 3_600_000);
    const later = await store(t, 'Unrelated: the plants need water.', { agent_id: 'ops', tags: ['logistics'] });

    const hits = (await search(t, { q: 'courier Rotterdam shipments', mode: 'hybrid', tags: 'logistics' })).map((h) => h.uuid);
    expect(hits[0]).toBe(question);
    expect(hits).toContain(answer);
    expect(hits).not.toContain(outsideFilter);
    // Neither the other agent's memory nor the one stored hours later is a neighbour: no share reaches them.
    const fromNeighbours = await search(t, { q: 'courier Rotterdam shipments', mode: 'hybrid', tags: 'logistics', limit: '2' });
    expect(fromNeighbours.map((h) => h.uuid)).toEqual([question, answer]);
    expect(fromNeighbours.map((h) => h.uuid)).not.toContain(otherAgent);
    expect(fromNeighbours.map((h) => h.uuid)).not.toContain(later);
  });
  it("ranks the README's example first: the EUR memory, whichever of the two was stored first", async () => {
    for (const first of ['eur', 'staging']) {
      const t = await engine.newTenant();
      const storeEur = () => store(t, 'The user prefers invoices in EUR.', { tags: ['billing'], importance: 8 });
      const storeStaging = () => store(t, 'The staging database is called pg-staging-2');
      const [eur, staging] = first === 'eur' ? [await storeEur(), await storeStaging()] : [await storeStaging(), await storeEur()].reverse();
      const hits = await search(t, { q: 'which currency for invoices', mode: 'hybrid', limit: '5' });
      expect(
        hits.map((h) => h.uuid),
        first,
      ).toEqual([eur, staging]);
      // The staging memory matches neither a word nor the meaning: it comes back only as EUR's
      // neighbour, with a tenth of a score at most, and min_score 0.1 leaves it out.
      expect(hits[0].score).toBe(1);
      expect(hits[1].score).toBeLessThanOrEqual(UNMATCHED_SCALE);
      const confident = await search(t, { q: 'which currency for invoices', mode: 'hybrid', limit: '5', min_score: '0.1' });
      expect(confident.map((h) => h.uuid)).toEqual([eur]);
    }
  });

  it("the README's tour with the offline sentence encoder: EUR first, the memories that match nothing far below", async () => {
    // The tour runs on the embedded default (Universal Sentence Encoder), where unrelated sentences
    // still have a cosine of 0.2-0.3: "The user lives in Lisbon" stays under half of EUR's.
    const use = await createEngine({ env: { EMBEDDING_PROVIDER: 'use' } });
    try {
      const t = await use.newTenant('pro');
      const stored = await use.request('POST', '/v1/memories/batch', {
        key: t.key,
        body: {
          memories: [
            { observation: 'The user prefers invoices in EUR.', tags: ['billing'], importance: 8 },
            { observation: 'The user lives in Lisbon.' },
            { observation: 'The staging database is called pg-staging-2.', tags: ['infra'] },
          ],
        },
      });
      expect(stored.status, stored.text).toBe(200);
      const res = await use.request('GET', '/v1/memories/search?q=which+currency+for+invoices&mode=hybrid&limit=3', { key: t.key });
      const hits = res.body.memories as Hit[];
      expect(hits.map((h) => h.observation)).toEqual([
        'The user prefers invoices in EUR.',
        'The user lives in Lisbon.',
        'The staging database is called pg-staging-2.',
      ]);
      expect(hits[0].score).toBe(1);
      // Before: 0.54 and 0.42, the shares EUR lent its neighbours.
      for (const h of hits.slice(1)) expect(h.score, h.observation).toBeLessThanOrEqual(UNMATCHED_SCALE);
    } finally {
      await use.close();
    }
  }, 60_000);

  it("a neighbour's share never lifts a memory that matches nothing above one that matches", async () => {
    const t = await engine.newTenant();
    const strong = await store(t, 'The user prefers invoices in EUR.');
    const nothing = await store(t, 'The staging database is called pg-staging-2');
    const weak = await store(t, 'Old invoices are archived after a year in cold storage.');
    const hits = await search(t, { q: 'which currency for invoices in EUR', mode: 'hybrid', limit: '5' });
    // Before: the memory between two hits took 0.4 + 0.4 of their scores and passed the weak match.
    expect(hits.map((h) => h.uuid)).toEqual([strong, weak, nothing]);
    // Among memories that match nothing, the shares still decide: the neighbour comes back at all,
    // with a tenth of the weakest match's score at most.
    expect(hits[2].score).toBeGreaterThan(0);
    // Scores are answered rounded to 1e-6, each on its own.
    expect(hits[2].score).toBeLessThanOrEqual(UNMATCHED_SCALE * hits[1].score + 1e-6);
  });

  it('a memory that matches nothing never takes a high score from the hits it was stored between', async () => {
    const t = await engine.newTenant();
    // Two strong matches with an unrelated memory stored between them: before, it took 0.5 of each
    // hit's score (1.0, the best score of the search, after scaling) and ranked with them.
    const first = await store(t, 'Quarterly invoices for the Lisbon office are paid in EUR.');
    const between = await store(t, 'The staging database is called pg-staging-2');
    const second = await store(t, 'Invoices in EUR go out on the first working day.');
    const hits = await search(t, { q: 'invoices EUR', mode: 'hybrid' });
    expect(
      hits
        .map((h) => h.uuid)
        .slice(0, 2)
        .sort(),
    ).toEqual([first, second].sort());
    const unmatched = hits.find((h) => h.uuid === between)!;
    expect(hits.at(-1)!.uuid).toBe(between);
    expect(unmatched.score).toBeLessThanOrEqual(UNMATCHED_SCALE * Math.min(...hits.slice(0, 2).map((h) => h.score)));
  });
});

describe('a semantic match of its own', () => {
  const row = (id: string, extra: Partial<Ranked> = {}): Ranked => ({ id, tenant_id: 't', agent_id: null, space_id: null, created_at: new Date(0), ...extra });

  it("is a cosine of at least half the best candidate's, inside the candidate list or not", () => {
    const semantic = [row('strong', { similarity: 0.8 }), row('faint', { similarity: 0.2 })];
    const matches = semanticMatch(semantic);
    expect(matches(row('x', { similarity: 0.4 }))).toBe(true);
    expect(matches(row('x', { similarity: 0.3999 }))).toBe(false);
    expect(matches(row('x'))).toBe(false); // no cosine known: a keyword candidate matches by its words
    expect(semanticMatch([row('x', { similarity: 0 })])(row('x', { similarity: 0 }))).toBe(false);

    const keyword = [row('strong', { bm25: 10 }), row('weak', { bm25: 4 }), row('weakest', { bm25: 1 })];
    const fused = fuse(semantic, keyword);
    // Two neighbours of the strong hit, outside both lists, take the same share of its score: the
    // one at half the best cosine passes the weak keyword hits, the one just below ranks after them
    // and after the weakest, with a tenth of that one's score.
    const near = [
      { ...row('at-half', { similarity: 0.4 }), hit_id: 'strong', distance: 1 },
      { ...row('just-below', { similarity: 0.3999 }), hit_id: 'strong', distance: 1 },
    ];
    const ranked = spreadToNeighbours(fused, near, matches);
    expect(ranked.map((s) => s.row.id)).toEqual(['strong', 'at-half', 'weak', 'weakest', 'just-below', 'faint']);
    expect(ranked.map((s) => s.matched)).toEqual([true, true, true, true, false, false]);
    const score = Object.fromEntries(ranked.map((s) => [s.row.id, s.score]));
    expect(score['at-half']).toBeCloseTo(0.5, 6);
    expect(score['just-below']).toBeCloseTo(UNMATCHED_SCALE * score.weakest, 9);
    expect(score.faint).toBeLessThanOrEqual(score['just-below']);
  });

  it('is also a query word in a neighbour outside the keyword list, whatever its cosine', () => {
    const semantic = [row('strong', { similarity: 0.8 }), row('faint', { similarity: 0.2 })];
    const keyword = [row('strong', { bm25: 10 }), row('weak', { bm25: 4 })];
    const near = [
      { ...row('shares-a-word', { similarity: 0.1, word_match: true } as Partial<Ranked>), hit_id: 'strong', distance: 1 },
      { ...row('shares-nothing', { similarity: 0.1, word_match: false } as Partial<Ranked>), hit_id: 'strong', distance: 1 },
    ];
    const ranked = spreadToNeighbours(fuse(semantic, keyword), near, ownMatch(semanticMatch(semantic)));
    expect(ranked.map((s) => s.row.id)).toEqual(['strong', 'shares-a-word', 'weak', 'shares-nothing', 'faint']);
    expect(ranked.find((s) => s.row.id === 'shares-nothing')!.score).toBeLessThanOrEqual(UNMATCHED_SCALE * ranked[2].score);
  });
});

describe('the vector a hybrid search ranks by', () => {
  const row = (id: string, extra: Partial<Ranked> = {}): Ranked => ({ id, tenant_id: 't', agent_id: null, space_id: null, created_at: new Date(0), ...extra });

  it('embeds the query without its stopwords beside it, for hybrid searches only', () => {
    expect(queryTexts('hybrid', 'When did Caroline go to the support group?')).toEqual([
      'When did Caroline go to the support group?',
      'Caroline go support group',
    ]);
    expect(queryTexts('hybrid', 'invoices EUR')).toEqual(['invoices EUR']);
    expect(queryTexts('hybrid', 'what is it')).toEqual(['what is it']);
    expect(queryTexts('semantic', 'When did Caroline go?')).toEqual(['When did Caroline go?']);
    expect(rankingVector([[1, 0]])).toEqual([1, 0]);
    expect(
      rankingVector([
        [1, 0],
        [0, 1],
      ]),
    ).toEqual([0.5, 0.5]);
  });

  it("ranks candidates by their cosine to it and matches them by their cosine to the query's own", () => {
    // Ranked by the mean vector, "near" leads; by the query's own vector it is under half the best,
    // so it does not match and falls behind the keyword hit.
    const semantic = [
      row('near', { rank_similarity: 0.9, similarity: 0.3 }),
      row('real', { rank_similarity: 0.6, similarity: 0.7 }),
      row('far', { rank_similarity: 0.1, similarity: 0.1 }),
    ];
    const fused = fuse(semantic, [row('word', { bm25: 2 })]);
    expect(fused.map((s) => [s.row.id, s.matched])).toEqual([
      ['word', true],
      ['real', true],
      ['near', false],
      ['far', false],
    ]);
    expect(fused.find((s) => s.row.id === 'near')!.score).toBeCloseTo(0.3, 9); // the semantic weight × the best of the ranking cosines
  });
});

describe('BM25 statistics per tenant', () => {
  // A search over the whole store reads the tenant's running totals; the same search with a tag
  // every memory carries counts them over the rows. Equal scores mean the totals are exact.
  const agree = async (t: Tenant, q: string) => {
    const whole = scores(await search(t, { q, mode: 'keyword' }));
    const counted = scores(await search(t, { q, mode: 'keyword', tags: 'all' }));
    expect(Object.keys(whole).length).toBeGreaterThan(0);
    expect(Object.keys(whole).sort()).toEqual(Object.keys(counted).sort());
    for (const [id, s] of Object.entries(whole)) expect(s, id).toBeCloseTo(counted[id], 6);
    return whole;
  };

  it('stay exact after stores, edits, deletes and a rollback', async () => {
    const t = await engine.newTenant();
    const zebra = await store(t, 'The zebra crossing outside the office was repainted.', { tags: ['all'] });
    await store(t, 'A zebra appeared in the company newsletter cartoon.', { tags: ['all'] });
    const before = await agree(t, 'zebra crossing');
    engine.clock.advance(1000);
    const target = engine.clock.now().toISOString();
    engine.clock.advance(1000);

    // More memories without the word raise its inverse document frequency, so its score.
    const others: string[] = [];
    for (let i = 0; i < 6; i++) others.push(await store(t, `Meeting note ${i}: budget review moved to room ${i + 4}.`, { tags: ['all'] }));
    const grown = await agree(t, 'zebra crossing');
    expect(grown[zebra]).toBeGreaterThan(before[zebra]);

    await engine.request('PATCH', `/v1/memories/${others[0]}`, {
      key: t.key,
      body: { observation: 'Meeting note: the long budget review about travel, hardware, hiring and rent moved to Thursday.' },
    });
    await agree(t, 'zebra crossing');
    await engine.request('DELETE', `/v1/memories/${others[1]}`, { key: t.key });
    await agree(t, 'zebra crossing');

    engine.clock.advance(1000);
    const rolled = await engine.request('POST', '/v1/rollback', { key: t.key, body: { target } });
    expect(rolled.status, rolled.text).toBe(200);
    const after = await agree(t, 'zebra crossing');
    for (const [id, s] of Object.entries(before)) expect(after[id], id).toBeCloseTo(s, 6);
  });

  it('a whole-store keyword search follows edits, deletes and a rollback word for word', async () => {
    const t = await engine.newTenant();
    const ids = async (q: string) => (await search(t, { q, mode: 'keyword' })).map((h) => h.uuid).sort();
    const kept = await store(t, 'Granite countertops arrive on Monday.');
    const edited = await store(t, 'The marble statue needs polishing.');
    const deleted = await store(t, 'Marble samples are in the basement.');
    engine.clock.advance(1000);
    const target = engine.clock.now().toISOString();
    engine.clock.advance(1000);
    expect(await ids('marble')).toEqual([edited, deleted].sort());

    expect((await engine.request('PATCH', `/v1/memories/${edited}`, { key: t.key, body: { observation: 'The bronze statue needs polishing.' } })).status).toBe(
      200,
    );
    expect((await engine.request('DELETE', `/v1/memories/${deleted}`, { key: t.key })).status).toBe(200);
    expect(await ids('marble')).toEqual([]);
    expect(await ids('bronze statue')).toEqual([edited]);
    expect(await ids('granite')).toEqual([kept]);

    engine.clock.advance(1000);
    expect((await engine.request('POST', '/v1/rollback', { key: t.key, body: { target } })).status).toBe(200);
    expect(await ids('marble')).toEqual([edited, deleted].sort());
    expect(await ids('bronze')).toEqual([]);
  });

  it('one tenant’s memories do not move another tenant’s scores', async () => {
    const a = await engine.newTenant();
    const b = await engine.newTenant();
    await store(a, 'Our lighthouse keeper retires in spring.', { tags: ['all'] });
    await store(a, 'The harbour office closes at six.', { tags: ['all'] });
    const before = await agree(a, 'lighthouse keeper');
    for (let i = 0; i < 8; i++) await store(b, `Lighthouse log ${i}: the keeper lit the lamp.`);
    for (let i = 0; i < 8; i++) await store(b, `Unrelated note ${i} about spreadsheets.`);
    const after = await agree(a, 'lighthouse keeper');
    expect(after).toEqual(before);
  });

  it('folds the running totals when they pile up, without changing a score', async () => {
    const t = await engine.newTenant();
    for (let i = 0; i < 70; i++) await store(t, `Inventory line ${i}: ${i % 7 === 0 ? 'walnut' : 'pine'} shelf number ${i}.`, { tags: ['all'] });
    const parts = async () => (await engine.sql<{ n: number }>(sql`SELECT count(*)::int AS n FROM memory_corpus_stats WHERE tenant_id = ${t.tenantId}`))[0].n;
    expect(await parts()).toBeGreaterThan(64);
    const first = await agree(t, 'walnut shelf');
    expect(await parts()).toBe(1);
    expect(await agree(t, 'walnut shelf')).toEqual(first);
  });

  it('are folded by the maintenance for a tenant that never searches by keyword, writes during the fold still counted', async () => {
    const t = await engine.newTenant();
    const note = (i: number) => store(t, `Garden note ${i}: ${i % 3 === 0 ? 'tulip' : 'fern'} bed number ${i}.`, { tags: ['all'] });
    const parts = async () => (await engine.sql<{ n: number }>(sql`SELECT count(*)::int AS n FROM memory_corpus_stats WHERE tenant_id = ${t.tenantId}`))[0].n;
    const totals = async () =>
      (
        await engine.sql<{ docs: number; lexemes: number }>(
          sql`SELECT sum(docs)::int AS docs, sum(lexemes)::int AS lexemes FROM memory_corpus_stats WHERE tenant_id = ${t.tenantId}`,
        )
      )[0];
    const exact = async () =>
      (
        await engine.sql<{ docs: number; lexemes: number }>(
          sql`SELECT count(*)::int AS docs, sum(length(search_tsv))::int AS lexemes FROM memories WHERE tenant_id = ${t.tenantId}`,
        )
      )[0];
    for (let i = 0; i < 12; i++) await note(i);
    expect(await parts()).toBeGreaterThan(8);
    // Stores racing the fold: each one's delta is either folded or left beside the folded row.
    await Promise.all([engine.node.runner.maintain(), ...[12, 13, 14, 15].map(note)]);
    expect(await totals()).toEqual(await exact());
    for (let i = 16; i < 26; i++) await note(i);
    await engine.node.runner.maintain();
    expect(await parts()).toBe(1);
    expect(await totals()).toEqual(await exact());
    await agree(t, 'tulip bed');

    if (storageName !== 'postgres') return; // one connection: no write can be open while the fold runs
    // A delta written by a transaction still open while the fold runs is not folded, and stays counted once it commits.
    for (let i = 26; i < 36; i++) await note(i);
    await engine.node.services.db.transaction(async (tx) => {
      await tx.execute(sql`INSERT INTO memory_corpus_stats (tenant_id, docs, lexemes) VALUES (${t.tenantId}, 1, 5)`);
      await engine.node.runner.maintain();
    });
    expect(await parts()).toBe(2);
    const { docs, lexemes } = await exact();
    expect(await totals()).toEqual({ docs: docs + 1, lexemes: lexemes + 5 });
    await engine.sql(sql`INSERT INTO memory_corpus_stats (tenant_id, docs, lexemes) VALUES (${t.tenantId}, -1, -5)`);
    expect(await totals()).toEqual(await exact());
  });
});
