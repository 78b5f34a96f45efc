import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { EngramEvent, FetchLike } from '../../sdk/src/index';
import { createEngine, type Tenant, type TestEngine } from '../harness';
import { engineFetch, sdkFor } from './helpers';

/**
 * events.stream() over the real stream route: events arrive as writes commit; when the connection
 * drops mid-stream the SDK reconnects with Last-Event-ID and gets exactly the events it missed.
 */
let engine: TestEngine;
let tenant: Tenant;
beforeAll(async () => {
  engine = await createEngine({ env: { EVENT_STREAM_HEARTBEAT_MS: '100' } });
  tenant = await engine.newTenant('pro');
});
afterAll(async () => engine?.close());

/** The first stream's body errors right after the chunk that carried its first event, as a dropped connection does. */
function droppingFetch(engine: TestEngine) {
  const real = engineFetch(engine);
  const opened: (string | null)[] = [];
  const fetch: FetchLike = async (url, init) => {
    const res = await real(url, init);
    if (!new URL(url).pathname.endsWith('/events/stream')) return res;
    opened.push(new Headers(init.headers).get('last-event-id'));
    if (opened.length > 1 || !res.body) return res;
    const reader = res.body.getReader();
    const cut = new ReadableStream<Uint8Array>({
      async pull(controller) {
        const { done, value } = await reader.read();
        if (done) return controller.close();
        controller.enqueue(value);
        if (new TextDecoder().decode(value).includes('\nid:') || new TextDecoder().decode(value).startsWith('id:')) {
          await reader.cancel();
          controller.error(new TypeError('terminated: other side closed'));
        }
      },
      cancel: () => reader.cancel(),
    });
    return new Response(cut, { status: res.status, headers: res.headers });
  };
  return { fetch, opened };
}

describe('engram-sdk events.stream', () => {
  it('delivers events as they commit and resumes after a drop with Last-Event-ID', async () => {
    const { fetch, opened } = droppingFetch(engine);
    const engram = sdkFor(engine, tenant.key, { fetch });
    const writer = sdkFor(engine, tenant.key);
    const abort = new AbortController();
    const received: EngramEvent[] = [];
    const stream = engram.events.stream({ signal: abort.signal, types: 'memory.created' });

    const reading = (async () => {
      for await (const event of stream) {
        received.push(event);
        if (received.length === 1) {
          // Written while the stream is down: the resumed stream must bring them.
          await writer.memories.store({ observation: 'second event while reconnecting' });
          await writer.memories.store({ observation: 'third event while reconnecting' });
        }
        if (received.length === 3) abort.abort();
      }
    })();
    // Let the stream open before the first write, so the first event is live, not replayed.
    for (let i = 0; i < 100 && opened.length === 0; i++) await new Promise((r) => setTimeout(r, 20));
    await new Promise((r) => setTimeout(r, 100));
    await writer.memories.store({ observation: 'first event on the live stream' });
    await reading;

    expect(received.map((e) => e.type)).toEqual(['memory.created', 'memory.created', 'memory.created']);
    expect(received.map((e) => e.data.type)).toEqual(['memory.created', 'memory.created', 'memory.created']);
    const ids = received.map((e) => Number(e.id));
    expect(ids).toEqual([...ids].sort((a, b) => a - b));
    expect(new Set(ids).size).toBe(3);
    expect(opened.length).toBeGreaterThanOrEqual(2);
    expect(opened[0]).toBeNull();
    expect(opened[1]).toBe(received[0].id);
  });

  it('starts after lastEventId when given, and stops on a refused key', async () => {
    const engram = sdkFor(engine, tenant.key);
    const abort = new AbortController();
    const got: EngramEvent[] = [];
    for await (const event of engram.events.stream({ lastEventId: '0', signal: abort.signal })) {
      got.push(event);
      if (got.length === 3) abort.abort();
    }
    expect(got.map((e) => Number(e.id))).toEqual(expect.arrayContaining([expect.any(Number)]));
    const free = sdkFor(engine, (await engine.newTenant('free')).key);
    await expect(free.events.stream().next()).rejects.toMatchObject({ status: 403, code: 'FEATURE_NOT_AVAILABLE' });
  });
});
