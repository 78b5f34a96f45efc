import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { Engram, Paginated } from '../sdk/src/index';
import { operationTable } from '../sdk/src/generated/operations';
import { operationNames } from '../sdk/src/names';

/**
 * Every operation of the OpenAPI snapshot has an SDK method (sdk/src/names.ts names it), and that
 * method sends the operation's HTTP method and path (sdk/src/generated/operations.ts): each is
 * called against a fetch that records what went out.
 */
const snapshot = JSON.parse(readFileSync(new URL('./openapi.snapshot.json', import.meta.url), 'utf8')) as {
  paths: Record<string, Record<string, { operationId?: string }>>;
};
const operations = Object.entries(snapshot.paths).flatMap(([path, item]) =>
  Object.entries(item).flatMap(([method, op]) => (op.operationId ? [{ id: op.operationId, method: method.toUpperCase(), path }] : [])),
);

function recordingClient() {
  const sent: { method: string; url: string }[] = [];
  const client = new Engram({
    apiKey: 'k',
    baseUrl: 'http://engram.test',
    maxRetries: 0,
    fetch: async (url, init) => {
      sent.push({ method: String(init.method), url });
      return new Response('{}', { status: 200, headers: { 'content-type': 'application/json' } });
    },
  });
  return { client, sent };
}

describe('SDK coverage of the OpenAPI snapshot', () => {
  it('has a name and a method for every operation', () => {
    expect(operations.length).toBeGreaterThan(100);
    const { client } = recordingClient();
    const missing = operations.filter(({ id }) => {
      const name = (operationNames as Record<string, readonly [string, string, unknown?]>)[id];
      const ns = name && (client as unknown as Record<string, Record<string, unknown>>)[name[0]];
      return typeof ns?.[name![1]] !== 'function';
    });
    expect(missing.map((o) => o.id)).toEqual([]);
    expect(Object.keys(operationNames).sort()).toEqual(operations.map((o) => o.id).sort());
  });

  it('has the generated table of every operation with its method and path', () => {
    for (const op of operations) {
      const entry = operationTable[op.id as keyof typeof operationTable];
      expect(entry, op.id).toMatchObject({ method: op.method, path: op.path });
    }
  });

  it('sends each operation by its method and path when its SDK method is called', async () => {
    for (const op of operations) {
      const [ns, name, flags] = (operationNames as Record<string, readonly [string, string, { paginated?: boolean }?]>)[op.id]!;
      const entry = operationTable[op.id as keyof typeof operationTable];
      const { client, sent } = recordingClient();
      const target = (client as unknown as Record<string, Record<string, (...args: unknown[]) => unknown>>)[ns]!;
      const params = entry.pathParams.map((p) => `${p}-1`);
      if (op.id === 'events.stream') {
        const abort = new AbortController();
        const stream = client.events.stream({ signal: abort.signal, maxReconnects: 0 }) as AsyncGenerator<unknown>;
        await stream.next().catch(() => undefined);
        abort.abort();
      } else {
        let result = target[name]!.call(target, ...params, {}, {});
        expect(result instanceof Paginated, `${op.id}: a Paginated exactly when sdk/src/names.ts says paginated`).toBe(Boolean(flags?.paginated));
        if (flags?.paginated) {
          expect(entry, `${op.id} is a paged list`).toHaveProperty('pageKey');
          result = (result as Paginated<object, unknown>).page();
        }
        await result;
      }
      const expected = `http://engram.test${op.path.replace(/\{([^}]+)\}/g, (_, p: string) => `${p}-1`)}`;
      expect(sent[0], op.id).toBeDefined();
      expect({ method: sent[0]!.method, url: sent[0]!.url.split('?')[0] }, op.id).toEqual({ method: op.method, url: expected });
    }
  });
});
