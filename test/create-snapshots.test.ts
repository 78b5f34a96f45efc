import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { compactCreate } from '../shared/memory/events';
import { rows } from '../shared/platform/data/db';
import { createEngine, type TestEngine } from './harness';

/**
 * A create event keeps its snapshot without what the event's row says (migrations/0057): what is put
 * back when read must be, byte for byte, the snapshot the writer was given.
 */
let engine: TestEngine;
beforeAll(async () => {
  engine = await createEngine();
});
afterAll(() => engine.close());

const db = () => engine.node.services.db;
const memoryId = '01a2290a-e422-759a-bae4-3a1d53ccc1f2';
const tenantId = 'ten_1bIZaE4HpiezzQmyCSwB3i';
const at = new Date('2026-11-29T20:41:49.324Z');
const snapshot = (over: Record<string, unknown> = {}) => ({
  hash: '2916af91be156462fac8d49010701d67b1ea23cfb51b0ff95f0c348086732f7f',
  tags: [],
  uuid: `urn:uuid:${memoryId}`,
  trust: 'verified',
  source: { ref: null, via: 'api', kind: 'user', key_id: 'key_RKQxDL2xS1kqtXGUdT20sU', agent_id: null },
  context: null,
  agent_id: null,
  space_id: null,
  confidence: 1,
  created_at: at.toISOString(),
  expires_at: null,
  importance: 5,
  updated_at: at.toISOString(),
  observation: 'Luis cancelled weekly status emails before the audit starts.',
  occurred_at: at.toISOString(),
  recall_count: 0,
  superseded_by: null,
  owner_tenant_id: tenantId,
  last_recalled_at: null,
  ...over,
});

/** The snapshot as a create event stores it and as it is read back, both as jsonb text. */
async function roundTrip(after: Record<string, unknown>, kind = 'create') {
  const stored = kind === 'create' ? compactCreate(after, { memoryId, tenantId, at }) : after;
  const [row] = await rows<{ read: string; given: string; bytes: number }>(
    db(),
    sql`SELECT memory_event_after(${kind}, ${JSON.stringify(stored)}::jsonb, ${memoryId}::uuid, ${tenantId}, ${at.toISOString()}::timestamptz)::text AS read,
               ${JSON.stringify(after)}::jsonb::text AS given, pg_column_size(${JSON.stringify(stored)}::jsonb) AS bytes`,
  );
  return { ...row, stored };
}

describe('create snapshots', () => {
  it('leave out what the event row says and read back as given', async () => {
    const { read, given, stored, bytes } = await roundTrip(snapshot());
    expect(read).toBe(given);
    expect(Object.keys(stored).sort()).toEqual(['hash', 'observation', 'source', 'trust']);
    const [whole] = await rows<{ bytes: number }>(db(), sql`SELECT pg_column_size(${JSON.stringify(snapshot())}::jsonb) AS bytes`);
    expect(Number(bytes)).toBeLessThan(Number(whole.bytes) / 2);
  });

  it('keep every value that differs from what would be put back', async () => {
    const set = snapshot({
      tags: ['billing'],
      context: 'from the weekly sync',
      agent_id: 'billing-agent',
      space_id: 'urn:uuid:01a2290a-0000-7000-8000-000000000001',
      confidence: 0.5,
      importance: 8,
      expires_at: '2027-01-01T00:00:00.000Z',
      occurred_at: '2026-11-01T08:00:00.000Z',
      updated_at: '2026-11-29T20:41:49.325Z',
    });
    const { read, given, stored } = await roundTrip(set);
    expect(read).toBe(given);
    expect(stored).toMatchObject({ tags: ['billing'], importance: 8, confidence: 0.5, occurred_at: '2026-11-01T08:00:00.000Z' });
    expect(stored).not.toHaveProperty('created_at');
  });

  it('are kept whole when a field to put back is missing or not the row’s', async () => {
    const { context: _context, ...withoutContext } = snapshot();
    for (const odd of [withoutContext, snapshot({ uuid: 'urn:uuid:01a2290a-0000-7000-8000-000000000002' }), snapshot({ tags: null })]) {
      const { read, given, stored } = await roundTrip(odd);
      expect(stored).toBe(odd);
      expect(read).toBe(given);
    }
    // Other kinds are never cut, and read as stored.
    const { read, given } = await roundTrip(snapshot(), 'update');
    expect(read).toBe(given);
  });

  it('are cut on the store path, and every read of a memory’s past gives the whole memory', async () => {
    const t = await engine.newTenant('pro');
    const res = await engine.request('POST', '/v1/memories', { key: t.key, body: { observation: 'The build server lives in rack four.', auto_link: false } });
    expect(res.status, res.text).toBe(201);
    const id = res.body.id as string;
    const live = (await engine.request<Record<string, unknown>>('GET', `/v1/memories/${id}`, { key: t.key })).body;
    const [raw] = await rows<{ after: Record<string, unknown>; whole: Record<string, unknown> }>(
      db(),
      sql`SELECT after, memory_event_after(kind, after, memory_id, tenant_id, at) AS whole FROM memory_events
          WHERE tenant_id = ${t.tenantId} AND memory_id = ${id.slice('urn:uuid:'.length)}::uuid AND kind = 'create'`,
    );
    expect(raw.after).not.toHaveProperty('uuid');
    expect(raw.after).not.toHaveProperty('created_at');
    expect(raw.whole).toMatchObject({ uuid: id, owner_tenant_id: t.tenantId, created_at: live.created_at, tags: [], recall_count: 0 });
    for (const [key, value] of Object.entries(raw.whole)) if (key in live) expect(live[key], key).toEqual(value);
    engine.clock.advance(1000);
    const asOf = await engine.request('GET', `/v1/memories?as_of=${encodeURIComponent(engine.clock.now().toISOString())}`, { key: t.key });
    expect(asOf.status, asOf.text).toBe(200);
    expect(asOf.body.memories).toEqual([raw.whole]);
    const replayed = await engine.request('GET', `/v1/replay/snapshot?at=${encodeURIComponent(engine.clock.now().toISOString())}`, { key: t.key });
    expect(replayed.status, replayed.text).toBe(200);
    expect(replayed.body.memories).toHaveLength(1);
    for (const [key, value] of Object.entries(replayed.body.memories[0])) expect(value, key).toEqual((raw.whole as Record<string, unknown>)[key]);
  });
});
