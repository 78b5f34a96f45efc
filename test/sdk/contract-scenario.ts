/**
 * The scripted scenario of the contract test (issue 47 item 4) through the TypeScript SDK: the same
 * calls, in the same order, as sdk-python/tests/contract_scenario.py makes through the Python SDK,
 * answering the same transcript (what the server said, without ids or times). test/sdk/contract.test.ts
 * runs both against one server and compares the two transcripts byte for byte.
 *
 * The transcript is one JSON object, a key per step; `transcriptJson` writes it the way the Python
 * side does (`json.dumps(..., indent=2, sort_keys=True, ensure_ascii=False)`), so a change of shape
 * on either side shows as a diff of the two texts.
 */
import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import { ConflictError, Engram, verifyErasureReceipt, verifyTraceCertificate } from '../../sdk/src/index';

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
type Delivery = { body: Buffer; headers: Record<string, string> };

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Keys sorted at every level and two-space indents: Python's `json.dumps(sort_keys=True, indent=2)`. */
export function transcriptJson(value: unknown): string {
  const sorted = (v: unknown): unknown =>
    Array.isArray(v)
      ? v.map(sorted)
      : v !== null && typeof v === 'object'
        ? Object.fromEntries(
            Object.keys(v)
              .sort()
              .map((k) => [k, sorted((v as Record<string, unknown>)[k])]),
          )
        : v;
  return JSON.stringify(sorted(value), null, 2);
}

/** A local webhook endpoint that keeps each delivery (raw body, lower-case headers). */
async function receiver() {
  const waiting: ((d: Delivery) => void)[] = [];
  const received: Delivery[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const delivery = { body: Buffer.concat(chunks), headers: flatHeaders(req.headers) };
      const next = waiting.shift();
      if (next) next(delivery);
      else received.push(delivery);
      res.writeHead(200).end();
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`,
    next: (timeoutMs: number) =>
      new Promise<Delivery>((resolve, reject) => {
        const first = received.shift();
        if (first) return resolve(first);
        const timer = setTimeout(() => reject(new Error('no webhook delivery')), timeoutMs);
        waiting.push((d) => {
          clearTimeout(timer);
          resolve(d);
        });
      }),
    close: () => new Promise((r) => server.close(r)),
  };
}

function flatHeaders(headers: IncomingHttpHeaders): Record<string, string> {
  return Object.fromEntries(Object.entries(headers).map(([k, v]) => [k, Array.isArray(v) ? v.join(', ') : (v ?? '')]));
}

/** Runs the scenario at `baseUrl` with a fresh enterprise tenant's key and answers its transcript. */
export async function runScenario(baseUrl: string, apiKey: string): Promise<Record<string, Json>> {
  const client = new Engram({ apiKey, baseUrl });
  const out: Record<string, Json> = {};

  const stored = await client.memories.store({ observation: 'The customer prefers invoices in EUR', tags: ['billing'], importance: 7 });
  out.store = Object.keys(stored).sort();
  const batch = await client.memories.storeMany(Array.from({ length: 5 }, (_, i) => ({ observation: `Order ${i} shipped to Lyon` })));
  out.batch = { stored: batch.stored, failed: batch.failed };

  const search: Record<string, Json> = {};
  for (const mode of ['semantic', 'keyword', 'hybrid'] as const) {
    const found = await client.memories.search({ q: 'invoices EUR', mode, limit: 3 });
    search[mode] = { mode: found.mode, top: found.memories.slice(0, 1).map((m) => m.observation) };
  }
  out.search = search;

  const pages: number[] = [];
  for await (const page of client.memories.list({ limit: 4 }).pages()) pages.push(page.memories.length);
  out.pages = pages;

  try {
    await client.memories.store({ observation: 'The customer prefers invoices in EUR', tags: ['billing'], on_conflict: 'reject' });
    out.conflict = null;
  } catch (err) {
    if (!(err instanceof ConflictError)) throw err;
    out.conflict = { status: err.status, code: err.code };
  }
  const updated = await client.memories.update(stored.uuid, { importance: 9, tags: ['billing', 'eu'] });
  out.update = { importance: updated.memory.importance, tags: updated.memory.tags };

  await sleep(1100);
  const middle = new Date().toISOString();
  await sleep(1100);
  await client.memories.store({ observation: 'A memory the rollback removes' });
  const preview = await client.rollback.preview({ target: middle });
  out.rollback_preview = {
    artifacts_deleted: preview.artifacts_deleted,
    artifacts_restored: preview.artifacts_restored,
    memories_reverted: preview.memories_reverted,
    safe_rollback: preview.safe_rollback,
  };
  const rolled = await client.rollback.run({ target: middle });
  out.rollback = { success: rolled.success, operations_undone: rolled.operations_undone, memories_reverted: rolled.memories_reverted };

  const audit = await client.audit.verify();
  out.audit_verify = { valid: audit.valid, failure_count: audit.failure_count };

  // The key that submits an action cannot decide it (self-approval): a restricted agent key submits.
  const agentKey = await client.keys.createRestricted({ name: 'contract-agent', scopes: ['actions:write'] });
  const held = await new Engram({ apiKey: agentKey.api_key, baseUrl }).actions.submit({
    action: 'http.post',
    params: { url: 'https://bank.example/wire', amount: 250000, memo: 'wire transfer' },
  });
  out.held = { status: held.status };
  let decided: Json = null;
  for (let i = 0; i < 30; i++) {
    try {
      const d = await client.approvals.decide(held.action_id, { decision: 'approve', reason: 'verified by phone', confirmation: 'ROLLBACK' });
      decided = { status: d.status, decision: d.decision };
      break;
    } catch (err) {
      if (!(err instanceof ConflictError)) throw err;
      // Solo mode: a decision waits a few seconds after the submission (409 with retry_after).
      const wait = Number(err.body?.retry_after ?? 1);
      await sleep(Math.min(wait, 6) * 1000);
    }
  }
  out.decided = decided;

  const trace = await client.traces.start({ agent_id: 'contract-agent', description: 'contract scenario' });
  await client.traces.addStep(trace.trace_id, { type: 'THOUGHT', content: 'check the invoice currency' });
  await client.traces.addStep(trace.trace_id, { type: 'OUTPUT', content: 'EUR' });
  await client.traces.complete(trace.trace_id);
  const { public_key } = await client.traces.publicKey();
  const check = await verifyTraceCertificate(await client.traces.certificate(trace.trace_id, { include_content: 'true' }), { publicKey: public_key });
  out.trace = { valid: check.valid, version: check.version, content_valid: check.contentValid, problems: check.problems };

  const receipt = await client.erasures.create({ reason: 'customer request', memory_ids: [stored.uuid] });
  out.erasure = {
    memories: (receipt.counts as Record<string, number | undefined>).memories ?? null,
    valid: (await verifyErasureReceipt(receipt, { publicKey: public_key })).valid,
  };

  const hooks = await receiver();
  try {
    const hook = await client.webhooks.create({ url: hooks.url, events: ['memory.created'] });
    await client.webhooks.test(hook.webhook_id);
    const { body, headers } = await hooks.next(120_000);
    const event = client.webhooks.unwrap(body, headers, hook.secret);
    out.webhook = { type: event.type, webhook_id_matches: (event.data as { webhook_id?: string }).webhook_id === hook.webhook_id };
  } finally {
    await hooks.close();
  }
  return out;
}
