import { env, exports } from 'cloudflare:workers';
import { expect, it } from 'vitest';
import { testClient } from '../client';

/**
 * The knowledge graph inside workerd, through the worker's fetch handler and the Neon driver:
 * entities created by ON CONFLICT, a memory linked to the entities it names, a neighbourhood, the
 * path search (its own transaction with SET LOCAL), and an entity delete that unlinks the memory.
 */
const worker = (exports as unknown as { default: { fetch(req: Request): Promise<Response> } }).default;
const bindings = env as unknown as Record<string, string>;
const call = testClient((req) => worker.fetch(req), { base: 'https://engram.test' });

it('builds a graph, links a memory to it, walks it and deletes from it', async () => {
  const tenant = await call('POST', '/admin/v1/tenants', {
    key: bindings.ADMIN_TOKEN,
    body: { email: `kg-${crypto.randomUUID().slice(0, 12)}@example.com`, tier: 'pro' },
  });
  expect(tenant.status, tenant.text).toBe(201);
  const key = tenant.body.api_key as string;
  const post = async (body: Record<string, unknown>) => {
    const res = await call('POST', '/v1/knowledge/triples', { key, body });
    expect(res.status, res.text).toBe(201);
    return res.body;
  };
  const ab = await post({ subject: 'Ada Lovelace', predicate: 'knew', object: 'Charles Babbage' });
  const bc = await post({ subject: 'charles babbage', predicate: 'designed', object: 'Analytical Engine', confidence: 0.5 });
  expect(bc.subject.entity_id).toBe(ab.object.entity_id);

  const memory = await call('POST', '/v1/memories', { key, body: { observation: "Ada Lovelace's notes on the Analytical Engine.", auto_link: false } });
  expect(memory.status, memory.text).toBe(201);
  expect(memory.body.entities).toEqual([ab.subject.entity_id, bc.object.entity_id]);

  const babbage = await call('GET', `/v1/knowledge/entities/${ab.object.entity_id}`, { key });
  expect(babbage.body).toMatchObject({ total_connections: 2, as_subject: [{ triple_id: bc.triple_id }], as_object: [{ triple_id: ab.triple_id }] });

  const paths = await call('GET', '/v1/knowledge/paths?from=ada%20lovelace&to=analytical%20engine', { key });
  expect(paths.status, paths.text).toBe(200);
  expect(paths.body.paths.map((p: { triple_id: string }[]) => p.map((s) => s.triple_id))).toEqual([[ab.triple_id, bc.triple_id]]);

  const deleted = await call('DELETE', `/v1/knowledge/entities/${ab.subject.entity_id}`, { key });
  expect(deleted.body).toEqual({ deleted: true, triples_removed: 1 });
  const life = await call('GET', `/v1/replay/memory/${memory.body.id}`, { key });
  expect(life.body.entities.map((e: { name: string }) => e.name)).toEqual(['analytical engine']);
  expect(life.body.events.map((e: { event_type: string }) => e.event_type)).toEqual(['create', 'link', 'link', 'unlink']);
});
