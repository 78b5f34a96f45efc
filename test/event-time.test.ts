import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createEngine, type Tenant, type TestEngine } from './harness';

/**
 * Event time beside store time (docs/memories.md#event-time): `occurred_at` on writes and answers,
 * the `occurred_after`/`occurred_before` filters, recency by event time, and `as_of` reads of the
 * store as it was (docs/memories.md#as-of).
 */
let engine: TestEngine;
beforeAll(async () => {
  engine = await createEngine({ env: { LOG_LEVEL: 'error' } });
});
afterAll(() => engine.close());

const DAY = 24 * 3_600_000;
const tick = (ms = 1_000) => engine.clock.advance(ms);
const now = () => engine.clock.now();
const enc = (d: Date | string) => encodeURIComponent(typeof d === 'string' ? d : d.toISOString());
const get = (t: Tenant, path: string) => engine.request<any>('GET', path, { key: t.key });
const store = async (t: Tenant, body: Record<string, unknown>) => {
  const res = await engine.request('POST', '/v1/memories', { key: t.key, body: { auto_link: false, ...body } });
  expect(res.status, res.text).toBe(201);
  return res.body.id as string;
};
const observations = (res: { body: Record<string, unknown> }) => (res.body.memories as { observation: string }[]).map((m) => m.observation);

const mcp = (t: Tenant, name: string, args: Record<string, unknown>) =>
  engine.app.fetch(
    new Request('http://127.0.0.1/mcp', {
      method: 'POST',
      headers: {
        authorization: `Bearer ${t.key}`,
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        'mcp-protocol-version': '2025-11-25',
      },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name, arguments: args } }),
    }),
  );

describe('occurred_at', () => {
  it('round-trips through store, batch, get, list, search, PATCH and MCP remember; defaults to created_at', async () => {
    const t = await engine.newTenant('pro');
    const a = await store(t, { observation: 'We signed the lease in Porto.', occurred_at: '2024-03-01T10:00:00+01:00' });
    const b = await store(t, { observation: 'The boiler was serviced.' });
    const got = await get(t, `/v1/memories/${a}`);
    expect(got.body).toMatchObject({ occurred_at: '2024-03-01T09:00:00.000Z' });
    expect(got.body.created_at).not.toBe(got.body.occurred_at);
    const plain = await get(t, `/v1/memories/${b}`);
    expect(plain.body.occurred_at).toBe(plain.body.created_at);

    const batch = await engine.request<any>('POST', '/v1/memories/batch', {
      key: t.key,
      body: {
        memories: [
          { observation: 'The team offsite was in Lisbon.', occurred_at: '2025-06-10T00:00:00Z' },
          { observation: 'x', occurred_at: '1850-01-01T00:00:00Z' },
        ],
      },
    });
    expect(batch.status, batch.text).toBe(200);
    expect(batch.body.results.map((r: { status: number }) => r.status)).toEqual([201, 400]);
    expect(batch.body.results[1].error.details[0].path).toBe('occurred_at');
    const batched = await get(t, `/v1/memories/${batch.body.results[0].memory.id}`);
    expect(batched.body.occurred_at).toBe('2025-06-10T00:00:00.000Z');

    const search = await get(t, '/v1/memories/search?q=lease%20Porto&mode=keyword');
    expect(search.body.memories[0]).toMatchObject({ observation: 'We signed the lease in Porto.', occurred_at: '2024-03-01T09:00:00.000Z' });

    const patched = await engine.request<any>('PATCH', `/v1/memories/${b}`, { key: t.key, body: { occurred_at: '2023-01-02T00:00:00Z' } });
    expect(patched.status, patched.text).toBe(200);
    expect(patched.body.memory.occurred_at).toBe('2023-01-02T00:00:00.000Z');
    const reset = await engine.request<any>('PATCH', `/v1/memories/${b}`, { key: t.key, body: { occurred_at: null } });
    expect(reset.body.memory.occurred_at).toBe(reset.body.memory.created_at);
    const far = await engine.request('PATCH', `/v1/memories/${b}`, { key: t.key, body: { occurred_at: '2999-01-01T00:00:00Z' } });
    expect(far.status).toBe(400);
    // A planned event may lie ahead.
    await store(t, { observation: 'The product launch is planned.', occurred_at: new Date(now().getTime() + 30 * DAY).toISOString() });

    const remembered = await mcp(t, 'remember', { observation: 'Alice moved to Berlin.', occurred_at: '2022-08-15T12:00:00Z' });
    expect(remembered.status).toBe(200);
    expect(JSON.stringify(await remembered.json())).not.toContain('isError":true');
    const list = await get(t, '/v1/memories?limit=100');
    const berlin = (list.body.memories as { observation: string; occurred_at: string }[]).find((m) => m.observation === 'Alice moved to Berlin.');
    expect(berlin?.occurred_at).toBe('2022-08-15T12:00:00.000Z');
  });

  it('occurred_after / occurred_before filter list and search; recency weighs the event time', async () => {
    const t = await engine.newTenant('pro');
    await store(t, { observation: 'Coffee with Dana about the budget.', occurred_at: '2020-05-01T00:00:00Z' });
    await store(t, { observation: 'Coffee with Eli about the budget.', occurred_at: '2023-05-01T00:00:00Z' });
    await store(t, { observation: 'Coffee with Fay about the budget.' });
    const window = await get(t, '/v1/memories?occurred_after=2021-01-01T00:00:00Z&occurred_before=2024-01-01T00:00:00Z');
    expect(window.status, window.text).toBe(200);
    expect(observations(window)).toEqual(['Coffee with Eli about the budget.']);
    expect(window.body.total).toBe(1);
    const before = await get(t, '/v1/memories/search?q=coffee%20budget&mode=hybrid&occurred_before=2021-01-01T00:00:00Z');
    expect(observations(before)).toEqual(['Coffee with Dana about the budget.']);
    const after = await get(t, '/v1/memories/search?q=coffee%20budget&mode=keyword&occurred_after=30%20days%20ago');
    expect(observations(after)).toEqual(['Coffee with Fay about the budget.']);
    const semantic = await get(t, '/v1/memories/search?q=coffee%20budget&occurred_after=2023-01-01T00:00:00Z&limit=10');
    expect(observations(semantic).sort()).toEqual(['Coffee with Eli about the budget.', 'Coffee with Fay about the budget.']);
    const inverted = await get(t, '/v1/memories?occurred_after=2024-01-01T00:00:00Z&occurred_before=2021-01-01T00:00:00Z');
    expect(inverted.status).toBe(422);
    expect(inverted.body.code).toBe('INVALID_RANGE');
    expect((await get(t, '/v1/memories?occurred_after=yesterday')).status).toBe(400);

    // Recency alone: the newest event first, whatever the order of storing.
    const recent = await get(t, '/v1/memories/search?q=coffee%20budget&mode=keyword&recency_weight=1&limit=3');
    expect(observations(recent)).toEqual(['Coffee with Fay about the budget.', 'Coffee with Eli about the budget.', 'Coffee with Dana about the budget.']);
    expect(recent.body.memories[0].score).toBeGreaterThan(recent.body.memories[1].score);
  });
});

describe('as_of', () => {
  it('list and search answer what the store held then: later creates, updates and deletes undone; no recall counted', async () => {
    const t = await engine.newTenant('pro');
    const a = await store(t, { observation: 'Invoices go out in EUR.', tags: ['billing'] });
    const b = await store(t, { observation: 'The office plant needs water on Mondays.', tags: ['office'] });
    tick(DAY);
    const yesterday = now();
    tick(DAY);
    expect((await engine.request('PATCH', `/v1/memories/${a}`, { key: t.key, body: { observation: 'Invoices go out in USD.' } })).status).toBe(200);
    expect((await engine.request('DELETE', `/v1/memories/${b}`, { key: t.key })).status).toBe(200);
    await store(t, { observation: 'Invoices are due in 30 days.', tags: ['billing'] });

    expect(observations(await get(t, '/v1/memories'))).toEqual(['Invoices are due in 30 days.', 'Invoices go out in USD.']);
    const then = await get(t, `/v1/memories?as_of=${enc(yesterday)}`);
    expect(then.status, then.text).toBe(200);
    expect(observations(then)).toEqual(['The office plant needs water on Mondays.', 'Invoices go out in EUR.']);
    expect(then.body).toMatchObject({ total: 2, has_more: false });
    expect(then.body.memories[1]).toMatchObject({ uuid: a, trust: 'verified', source: { kind: 'user' } });
    expect(observations(await get(t, `/v1/memories?as_of=${enc(yesterday)}&tags=billing`))).toEqual(['Invoices go out in EUR.']);
    expect(observations(await get(t, '/v1/memories?as_of=2%20days%20ago'))).toEqual(['The office plant needs water on Mondays.', 'Invoices go out in EUR.']);

    for (const mode of ['semantic', 'keyword', 'hybrid']) {
      const res = await get(t, `/v1/memories/search?q=invoices%20currency&mode=${mode}&as_of=${enc(yesterday)}&limit=5`);
      expect(res.status, res.text).toBe(200);
      expect(observations(res)[0], mode).toBe('Invoices go out in EUR.');
      expect(observations(res), mode).not.toContain('Invoices are due in 30 days.');
      expect(res.body.memories[0].similarity).toBeGreaterThan(0);
    }
    const live = await get(t, '/v1/memories/search?q=invoices%20currency&mode=keyword');
    expect(observations(live)).not.toContain('Invoices go out in EUR.');
    // A look at the past records nothing.
    const memory = await get(t, `/v1/memories/${a}`);
    expect(memory.body.recall_count).toBe(1); // the live search above, not the as_of ones

    // Before the account existed: empty. In the future: 400. Shared scope: 400.
    expect((await get(t, '/v1/memories?as_of=2001-01-01T00:00:00Z')).body).toMatchObject({ total: 0, memories: [] });
    expect((await get(t, `/v1/memories/search?q=x&as_of=${enc(new Date(now().getTime() + DAY))}`)).status).toBe(400);
    expect((await get(t, `/v1/memories?scope=shared&as_of=${enc(yesterday)}`)).status).toBe(400);
  });

  it('follows replay’s tier gate', async () => {
    const t = await engine.newTenant('free');
    await store(t, { observation: 'A free account memory.' });
    const res = await get(t, '/v1/memories?as_of=1%20minute%20ago');
    expect(res.status).toBe(403);
    expect(res.body.required_tier).toBeTruthy();
  });

  it('erased memories stay erased', async () => {
    const t = await engine.newTenant('enterprise');
    await store(t, { observation: 'Jane Roe takes drug X.', tags: ['patient:jane'] });
    await store(t, { observation: 'The clinic opens at 8.', tags: ['clinic'] });
    tick(DAY);
    const before = now();
    tick(DAY);
    const erased = await engine.request('POST', '/v1/erasures', { key: t.key, body: { reason: 'GDPR Art. 17 request', tags: ['patient:jane'] } });
    expect(erased.status, erased.text).toBe(201);
    expect(observations(await get(t, `/v1/memories?as_of=${enc(before)}`))).toEqual(['The clinic opens at 8.']);
    const search = await get(t, `/v1/memories/search?q=Jane%20drug&mode=hybrid&as_of=${enc(before)}`);
    expect(observations(search)).not.toContain('Jane Roe takes drug X.');
  });
});
