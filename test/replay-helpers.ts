import { expect } from 'vitest';
import type { Tenant, TestEngine } from './harness';

/**
 * Shared by the replay test files. The clock only ever moves forward in them, so every test's past
 * stays its own.
 */
export function replayHelpers(engine: () => TestEngine) {
  const tick = (ms = 1_000) => engine().clock.advance(ms);
  const now = () => engine().clock.now();
  const iso = (d: Date) => d.toISOString();
  const get = <T = never, P extends string = string>(t: Tenant, path: P) => engine().request<T, 'GET', P>('GET', path, { key: t.key });
  const store = (t: Tenant, body: Record<string, unknown>) => engine().request('POST', '/v1/memories', { key: t.key, body });
  const patch = (t: Tenant, id: string, body: Record<string, unknown>) => engine().request('PATCH', `/v1/memories/${id}`, { key: t.key, body });
  const del = (t: Tenant, id: string) => engine().request('DELETE', `/v1/memories/${id}`, { key: t.key });
  const snapshotAt = (t: Tenant, at: Date, extra = '') => get(t, `/v1/replay/snapshot?at=${encodeURIComponent(iso(at))}${extra}`);

  /** A tenant with a short history: A and B stored, A changed, B deleted, C stored; times between. */
  async function history(t: Tenant) {
    const a = (await store(t, { observation: 'Invoices go out in EUR.', tags: ['billing'], importance: 4, agent_id: 'billing-agent' })).body.id as string;
    const b = (await store(t, { observation: 'The office plant needs water on Mondays.', tags: ['office'] })).body.id as string;
    tick(10_000);
    const t1 = now();
    tick(10_000);
    expect((await patch(t, a, { observation: 'Invoices go out in USD.', importance: 7 })).status).toBe(200);
    tick(10_000);
    const t2 = now();
    tick(10_000);
    expect((await del(t, b)).status).toBe(200);
    const c = (await store(t, { observation: 'Standups start at 9:30.', tags: ['team'], agent_id: 'pm-agent' })).body.id as string;
    tick(10_000);
    const t3 = now();
    tick(1_000);
    return { a, b, c, t1, t2, t3 };
  }

  return { tick, now, iso, get, store, patch, del, snapshotAt, history };
}
