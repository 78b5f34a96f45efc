import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createEngine, errorOf, type Tenant, type TestEngine } from './harness';
import { sharingHelpers } from './sharing-helpers';

let engine: TestEngine;
let t: Tenant;
const ids: Record<string, string> = {};

const search = (query: string, key = t.key) => engine.request('GET', `/v1/memories/search?${query}`, { key });

beforeAll(async () => {
  engine = await createEngine();
  t = await engine.newTenant('pro');
  const corpus: [string, string, Record<string, unknown>][] = [
    ['pets', 'The customer has two cats named Luna and Miso.', { tags: ['personal'] }],
    ['billing', 'Invoices are sent monthly in EUR to the finance team.', { tags: ['billing'], importance: 9 }],
    ['deploy', 'Production deploys happen every Tuesday after the standup.', { tags: ['ops'], agent_id: 'ops-bot' }],
    ['coffee', 'The customer drinks oat milk flat whites every morning.', { tags: ['personal'] }],
    ['old', 'Invoices used to be sent quarterly in USD.', { tags: ['billing'] }],
  ];
  for (const [name, observation, extra] of corpus) {
    const res = await engine.request('POST', '/v1/memories', { key: t.key, body: { observation, auto_link: false, ...extra } });
    ids[name] = res.body.id;
  }
  // Make 'old' 120 days old, so recency has something to weigh.
  await engine.node.services.db.execute(sql`UPDATE memories SET created_at = created_at - interval '120 days' WHERE id = ${ids.old.slice(9)}::uuid`);
});
afterAll(() => engine.close());

describe('semantic search', () => {
  it('ranks by cosine; score equals similarity when recency_weight is 0', async () => {
    const res = await search('q=customer%20cats%20named%20Luna&limit=3');
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ query: 'customer cats named Luna', mode: 'semantic' });
    expect(res.body.memories[0].uuid).toBe(ids.pets);
    for (const m of res.body.memories) {
      expect(m.score).toBe(m.similarity);
      expect(m.similarity).toBeGreaterThanOrEqual(0);
      expect(m.similarity).toBeLessThanOrEqual(1);
      expect(m.match_confidence).toBeGreaterThanOrEqual(0);
      expect(m.match_confidence).toBeLessThanOrEqual(1);
      expect(Object.keys(m)).toEqual(
        expect.arrayContaining(['uuid', 'observation', 'score', 'similarity', 'match_confidence', 'tags', 'importance', 'created_at']),
      );
    }
    const scores = res.body.memories.map((m: { score: number }) => m.score);
    expect([...scores].sort((a, b) => b - a)).toEqual(scores);
    expect(res.body.total_results).toBe(res.body.memories.length);
  });

  it('filters by tags before ranking, by agent, and by min_score', async () => {
    const tagged = await search('q=customer%20cats&tags=billing,ops&limit=10');
    expect(tagged.body.memories.map((m: { uuid: string }) => m.uuid).sort()).toEqual([ids.billing, ids.deploy, ids.old].sort());
    const agent = await search('q=deploys&agent_id=ops-bot&limit=10');
    expect(agent.body.memories.map((m: { uuid: string }) => m.uuid)).toEqual([ids.deploy]);
    const strict = await search('q=customer%20cats%20named%20Luna&min_score=0.5&limit=10');
    expect(strict.body.memories.length).toBeGreaterThan(0);
    expect(strict.body.memories.every((m: { score: number }) => m.score >= 0.5)).toBe(true);
    // No stored memory is the query's exact text, so nothing reaches a score of 1.
    const none = await search('q=customer%20cats&min_score=1&limit=10');
    expect(none.status).toBe(200);
    expect(none.body.memories).toEqual([]);
  });

  it('recency_weight favours newer memories and keeps similarity raw', async () => {
    const plain = await search('q=invoices%20sent&limit=5&tags=billing');
    const recent = await search('q=invoices%20sent&limit=5&tags=billing&recency_weight=1');
    const oldPlain = plain.body.memories.find((m: { uuid: string }) => m.uuid === ids.old)!;
    const oldRecent = recent.body.memories.find((m: { uuid: string }) => m.uuid === ids.old)!;
    expect(oldRecent.similarity).toBe(oldPlain.similarity);
    expect(oldRecent.score).toBeCloseTo(Math.exp(-120 / 30), 2);
    expect(recent.body.memories[0].uuid).toBe(ids.billing);
  });

  it('hides superseded memories unless include_superseded=true', async () => {
    await engine.request('PATCH', `/v1/memories/${ids.old}`, { key: t.key, body: { superseded_by: ids.billing } });
    const hidden = await search('q=invoices%20quarterly%20USD&limit=10');
    expect(hidden.body.memories.map((m: { uuid: string }) => m.uuid)).not.toContain(ids.old);
    const shown = await search('q=invoices%20quarterly%20USD&limit=10&include_superseded=true');
    expect(shown.body.memories.map((m: { uuid: string }) => m.uuid)).toContain(ids.old);
    await engine.request('PATCH', `/v1/memories/${ids.old}`, { key: t.key, body: { superseded_by: null } });
  });

  it('counts recalls, writes recall events and the first_search milestone', async () => {
    const before = await engine.request('GET', `/v1/memories/${ids.coffee}`, { key: t.key });
    await search('q=oat%20milk%20flat%20whites&limit=1');
    const after = await engine.request('GET', `/v1/memories/${ids.coffee}`, { key: t.key });
    expect(after.body.recall_count).toBe(before.body.recall_count + 1);
    expect(after.body.last_recalled_at).not.toBeNull();
    const events = await engine.sql<{ n: number }>(
      sql`SELECT count(*)::int AS n FROM memory_events WHERE memory_id = ${ids.coffee.slice(9)}::uuid AND kind = 'recall'`,
    );
    expect(events[0].n).toBeGreaterThanOrEqual(1);
    const milestones = await engine.request('GET', '/v1/milestones', { key: t.key });
    expect(milestones.body.milestones.map((m: { milestone: string }) => m.milestone)).toContain('first_search');
  });

  it('counts a recall for exactly the hits answered: not below min_score, not another tenant’s, whether or not grants exist', async () => {
    const h = sharingHelpers(() => engine);
    const [owner, reader] = [await engine.newTenant('pro'), await engine.newTenant('pro')];
    const store = async (who: Tenant, observation: string, tags: string[]) => (await h.store(who, { observation, tags, auto_link: false })).body.id as string;
    const mine = [
      await store(reader, 'The reader keeps the ferry timetable in a red folder.', ['notes']),
      await store(reader, 'Unrelated: the office plant needs water on Fridays.', ['notes']),
    ];
    const theirs = await store(owner, 'The ferry timetable changes in winter.', ['ferry']);
    const counts = async () =>
      Promise.all(mine.map(async (id) => (await engine.request('GET', `/v1/memories/${id}`, { key: reader.key })).body.recall_count as number));
    const ownerCount = async () => (await engine.request('GET', `/v1/memories/${theirs}`, { key: owner.key })).body.recall_count as number;
    const answered = async (query: string) => {
      const res = await search(query, reader.key);
      expect(res.status).toBe(200);
      return res.body.memories.map((m: { uuid: string }) => m.uuid) as string[];
    };

    // No grants: hits above min_score only are counted.
    const scored = (await search('q=ferry%20timetable%20folder&limit=10', reader.key)).body.memories as { uuid: string; score: number }[];
    const cut = (scored[0].score + scored[1].score) / 2;
    await expect(counts()).resolves.toEqual([1, 1]);
    expect(await answered(`q=ferry%20timetable%20folder&limit=10&min_score=${cut}`)).toEqual([mine[0]]);
    await expect(counts()).resolves.toEqual([2, 1]);
    // The same through a tag filter (on Postgres the nearest ids first, then the bookkeeping by id).
    expect(await answered(`q=ferry%20timetable%20folder&limit=10&tags=notes&min_score=${cut}`)).toEqual([mine[0]]);
    await expect(counts()).resolves.toEqual([3, 1]);
    expect(await answered('q=ferry%20timetable%20folder&limit=10&tags=notes')).toEqual([mine[0], mine[1]]);
    await expect(counts()).resolves.toEqual([4, 2]);

    // With a grant the owner's memory is answered too, and counted for nobody.
    await h.shareAndJoin(owner, reader, 'ferry');
    const both = await answered('q=ferry%20timetable%20folder&limit=10');
    expect(both).toEqual(expect.arrayContaining([mine[0], mine[1], theirs]));
    await expect(counts()).resolves.toEqual([5, 3]);
    expect(await ownerCount()).toBe(0);
    expect(await answered('q=ferry%20timetable%20folder&limit=10&tags=ferry')).toEqual([theirs]);
    await expect(counts()).resolves.toEqual([5, 3]);
    expect(await answered('q=ferry%20timetable%20folder&limit=10&scope=own')).toEqual(expect.arrayContaining([mine[0], mine[1]]));
    await expect(counts()).resolves.toEqual([6, 4]);
    expect(await answered('q=ferry%20timetable&limit=10&scope=shared')).toEqual([theirs]);
    await expect(counts()).resolves.toEqual([6, 4]);
    expect(await ownerCount()).toBe(0);
  });

  it('never returns another tenant’s memories', async () => {
    const other = await engine.newTenant();
    const res = await search('q=customer%20cats%20named%20Luna&limit=100', other.key);
    expect(res.body.memories).toEqual([]);
  });
});

describe('a store of hundreds: whole-store search and auto-link (on Postgres a kept plan that walks the graph)', () => {
  it('finds the nearest memory, fills the page, and links a near-duplicate to it', async () => {
    const big = await engine.newTenant('pro');
    // The same text in another tenant's store: the walk passes its row and must leave it out.
    const elsewhere = (
      await engine.request('POST', '/v1/memories', { key: t.key, body: { observation: 'The lighthouse keeper retires next spring.', auto_link: false } })
    ).body.id;
    const topics = ['hiking in the alps', 'sourdough baking', 'tax filing deadlines', 'jazz piano lessons', 'garden tomatoes', 'train timetables'];
    for (let batch = 0; batch < 4; batch++) {
      const memories = Array.from({ length: 100 }, (_, i) => ({
        observation: `note ${batch * 100 + i}: ${topics[i % topics.length]} and item ${i * 7 + batch}`,
        auto_link: false,
        tags: [`t${i % 3}`],
      }));
      expect((await engine.request('POST', '/v1/memories/batch', { key: big.key, body: { memories } })).body.stored).toBe(100);
    }
    const target = (
      await engine.request('POST', '/v1/memories', { key: big.key, body: { observation: 'The lighthouse keeper retires next spring.', auto_link: false } })
    ).body.id;

    const found = await search(`q=${encodeURIComponent('The lighthouse keeper retires next spring.')}&limit=50`, big.key);
    expect(found.body.memories[0].uuid).toBe(target);
    expect(found.body.memories).toHaveLength(50);
    expect(found.body.memories.every((m: { owner_tenant_id: string }) => m.owner_tenant_id === big.tenantId)).toBe(true);
    // The same answer as a filtered search, which is planned per search.
    await engine.request('PATCH', `/v1/memories/${target}`, { key: big.key, body: { tags: ['t1'] } });
    const filtered = await search(`q=${encodeURIComponent('The lighthouse keeper retires next spring.')}&limit=5&tags=t0,t1,t2`, big.key);
    expect(filtered.body.memories[0].uuid).toBe(target);

    const linked = await engine.request('POST', '/v1/memories', { key: big.key, body: { observation: 'The lighthouse keeper retires next spring!' } });
    expect(linked.body.auto_links).toContain(target);
    expect(linked.body.auto_links).not.toContain(elsewhere);
    const own = await search(`q=${encodeURIComponent('The lighthouse keeper retires next spring.')}&limit=10`);
    expect(own.body.memories[0].uuid).toBe(elsewhere);
    expect(own.body.memories.map((m: { uuid: string }) => m.uuid)).not.toContain(target);
    await engine.request('DELETE', `/v1/memories/${elsewhere}`, { key: t.key });
  });
});

describe('keyword and hybrid modes', () => {
  it('keyword mode ranks by full text with stemming and scores in [0,1]', async () => {
    const res = await search('q=deploying%20on%20Tuesdays&mode=keyword&limit=5');
    expect(res.body.mode).toBe('keyword');
    expect(res.body.memories[0].uuid).toBe(ids.deploy);
    expect(res.body.memories[0].score).toBeGreaterThan(0);
    expect(res.body.memories[0].score).toBeLessThan(1);
    const nothing = await search('q=the%20and%20of&mode=keyword');
    expect(nothing.body.memories).toEqual([]);
  });

  it('a filtered keyword search finds the matching rows inside the filter, and nothing for stop words alone', async () => {
    const billing = await search('q=invoices%20sent&mode=keyword&tags=billing&limit=5');
    expect(billing.status).toBe(200);
    expect(billing.body.memories.map((m: { uuid: string }) => m.uuid).sort()).toEqual([ids.billing, ids.old].sort());
    const personal = await search('q=invoices%20sent&mode=keyword&tags=personal&limit=5');
    expect(personal.body.memories).toEqual([]);
    const stopWords = await search('q=the%20and%20of&mode=keyword&tags=billing');
    expect(stopWords.status).toBe(200);
    expect(stopWords.body.memories).toEqual([]);
  });

  it('hybrid fuses both rankings; similarity stays the raw cosine', async () => {
    const res = await search('q=Luna%20and%20Miso&mode=hybrid&limit=5');
    expect(res.body.memories[0].uuid).toBe(ids.pets);
    const semantic = await search('q=Luna%20and%20Miso&limit=5');
    const pets = semantic.body.memories.find((m: { uuid: string }) => m.uuid === ids.pets)!;
    expect(res.body.memories[0].similarity).toBe(pets.similarity);
    expect(res.body.memories[0].score).toBeLessThanOrEqual(1);
  });
});

describe('bad input', () => {
  it('answers 400 naming the field', async () => {
    const cases: [string, string][] = [
      ['limit=5', 'q'],
      ['q=', 'q'],
      ['q=x&limit=0', 'limit'],
      ['q=x&limit=101', 'limit'],
      ['q=x&min_score=2', 'min_score'],
      ['q=x&recency_weight=-0.1', 'recency_weight'],
      ['q=x&mode=fuzzy', 'mode'],
      ['q=x&include_superseded=maybe', 'include_superseded'],
    ];
    for (const [query, field] of cases) {
      const res = await search(query);
      expect(res.status, query).toBe(400);
      expect(
        errorOf(res).details?.map((d: { path: string }) => d.path),
        query,
      ).toContain(field);
    }
    // A space id of any shape that names nothing filters to nothing, as an unknown one does.
    for (const id of ['nope', 'urn:uuid:01935f6e-8a2b-7c3d-9e4f-5a6b7c8d9e0f']) {
      const res = await search(`q=x&space_id=${id}`);
      expect([res.status, res.body.total_results], id).toEqual([200, 0]);
    }
  });

  it('an embedding provider outage is 503 and stores nothing', async () => {
    const broken = await createEngine({ env: { EMBEDDING_PROVIDER: 'openai', EMBEDDING_BASE_URL: 'http://127.0.0.1:9/v1' } });
    try {
      const tenant = await broken.newTenant();
      const res = await broken.request('POST', '/v1/memories', { key: tenant.key, body: { observation: 'will not embed' } });
      expect(res.status).toBe(503);
      expect(errorOf(res).code).toBe('SERVICE_UNAVAILABLE');
      expect((await broken.request('GET', '/v1/memories', { key: tenant.key })).body.total).toBe(0);
      expect((await broken.request('GET', '/v1/usage', { key: tenant.key })).body.memories.current).toBe(0);
    } finally {
      await broken.close();
    }
  });
});
