import { encodeParam, hostileParam, hostileValue, type Json, mutateBody, Rng, type Schema, SchemaWalker } from './generate';

/**
 * Fuzzes every operation of an OpenAPI 3.1 document against a running app: well-formed and
 * malformed bodies, queries and path parameters, with real keys of fresh tenants of every tier and
 * the ids of resources that exist (harvested from earlier answers). Any 5xx is a failure, and so is
 * an error response without the one error body. A small share of requests is sent as a burst of
 * identical copies at once, which finds check-then-insert races.
 */

export type Tier = 'free' | 'starter' | 'pro' | 'enterprise';

export interface FuzzResponse {
  status: number;
  body: any;
  text: string;
}

export interface FuzzTarget {
  request(method: string, path: string, opts: { headers: Record<string, string>; raw?: string }): Promise<FuzzResponse>;
  newTenant(tier: Tier): Promise<{ key: string }>;
  adminToken: string;
}

export interface FuzzOptions {
  seed: number;
  /** Stop after this many requests ... */
  requests?: number;
  /** ... or after this many seconds, whichever comes first. */
  seconds?: number;
  /** Workers sending requests at once. */
  concurrency?: number;
  /** Share of requests sent as a burst of identical copies (races). */
  burstRate?: number;
  burstSize?: number;
}

export interface FuzzFailure {
  kind: '5xx' | 'error-body' | 'broken-response';
  method: string;
  path: string;
  operation: string;
  status: number;
  body: string | undefined;
  response: string;
  count: number;
}

export interface FuzzReport {
  seed: number;
  requests: number;
  operations: number;
  statuses: Record<string, number>;
  serverErrors: number;
  failures: FuzzFailure[];
  seconds: number;
}

interface Operation {
  method: string;
  path: string;
  op: Schema;
}

const TIER_WEIGHTS: Tier[] = ['free', 'starter', 'pro', 'pro', 'pro', 'enterprise', 'enterprise', 'enterprise'];
const ID_KEY = /(^|_)id$|^uuid$|^token$|^key_id$|^prefix$/;

export function operationsOf(doc: any): Operation[] {
  const out: Operation[] = [];
  for (const [path, item] of Object.entries<any>(doc.paths ?? {})) {
    for (const method of ['get', 'post', 'put', 'patch', 'delete']) if (item[method]) out.push({ method: method.toUpperCase(), path, op: item[method] });
  }
  return out;
}

const truncate = (s: string | undefined, n = 400) => (s === undefined ? undefined : s.length > n ? `${s.slice(0, n)}… (${s.length} chars)` : s);

export async function fuzz(target: FuzzTarget, doc: any, opts: FuzzOptions): Promise<FuzzReport> {
  const walker = new SchemaWalker(doc.components?.schemas ?? {});
  const operations = operationsOf(doc);
  const concurrency = opts.concurrency ?? 2;
  const burstRate = opts.burstRate ?? 0.04;
  const burstSize = opts.burstSize ?? 8;
  const maxRequests = opts.requests ?? Number.POSITIVE_INFINITY;
  const deadline = Date.now() + (opts.seconds ?? 3600) * 1000;
  const started = Date.now();

  const tenants = new Map<Tier, { key: string }>();
  for (const tier of ['free', 'starter', 'pro', 'enterprise'] as Tier[]) tenants.set(tier, await target.newTenant(tier));

  // Ids of resources that exist, by the field name they came in.
  const pools = new Map<string, string[]>();
  const harvest = (v: any, key = '', depth = 0): void => {
    if (depth > 6 || v === null || v === undefined) return;
    if (typeof v === 'string') {
      if (ID_KEY.test(key) && v.length <= 200) {
        const pool = pools.get(key) ?? [];
        if (!pool.includes(v)) pool.push(v);
        if (pool.length > 40) pool.shift();
        pools.set(key, pool);
      }
    } else if (Array.isArray(v)) v.slice(0, 20).forEach((x) => harvest(x, key.endsWith('_ids') ? key.slice(0, -1) : key, depth + 1));
    else if (typeof v === 'object') for (const [k, x] of Object.entries(v)) harvest(x, k, depth + 1);
  };
  const idFor = (r: Rng, name: string): string | undefined => {
    const exact = pools.get(name);
    if (exact?.length && r.chance(0.7)) return r.pick(exact);
    if (!ID_KEY.test(name)) return undefined;
    const all = [...pools.values()].flat();
    return all.length ? r.pick(all) : undefined;
  };

  const statuses: Record<string, number> = {};
  const failures = new Map<string, FuzzFailure>();
  let sent = 0;
  let serverErrors = 0;

  function build(r: Rng, o: Operation, valid: boolean) {
    const headers: Record<string, string> = {
      'x-forwarded-for': `2001:db8::${r.int(1, 0xffff).toString(16)}:${r.int(1, 0xffff).toString(16)}:${r.int(1, 0xffff).toString(16)}`,
    };
    // Authentication from the operation's security.
    const security: any[] = o.op.security ?? [];
    const schemes = new Set(security.flatMap((s) => Object.keys(s)));
    const optional = security.some((s) => Object.keys(s).length === 0);
    let tier: Tier | undefined;
    if (schemes.has('adminToken')) headers.authorization = `Bearer ${r.chance(0.03) ? 'wrong-admin-token-000000' : target.adminToken}`;
    else if (schemes.has('bearerAuth') && !(optional && r.chance(0.5))) {
      const roll = valid ? 1 : r.next();
      if (roll < 0.02) headers.authorization = `Bearer sk_${r.word(43)}`;
      else if (roll < 0.04) headers.authorization = r.pick(['Bearer', 'Basic abc', 'Bearer \u00e9', `Bearer ${'x'.repeat(5000)}`]);
      else if (roll >= 0.05) {
        tier = r.pick(TIER_WEIGHTS);
        headers.authorization = `Bearer ${tenants.get(tier)!.key}`;
      }
    }

    // Path parameters: an id that exists, the documented example, or something hostile.
    const params: any[] = (o.op.parameters ?? []).map((p: any) => walker.resolve(p));
    let path = o.path;
    for (const p of params.filter((x) => x.in === 'path')) {
      const roll = valid ? r.next() * 0.7 : r.next();
      const known = idFor(r, p.name);
      const value =
        roll < 0.5 && known !== undefined
          ? encodeURIComponent(known)
          : roll < 0.7
            ? encodeURIComponent(String(walker.valid(r, p.schema, p.name, 0, (n) => idFor(r, n))))
            : hostileParam(r);
      path = path.replace(`{${p.name}}`, value || 'x');
    }

    // Query: each parameter left out, well-formed, or hostile; sometimes repeated or unknown.
    const query: string[] = [];
    for (const p of params.filter((x) => x.in === 'query')) {
      const roll = valid ? r.next() * 0.85 : r.next();
      if (!p.required && roll < 0.4) continue;
      if (roll < 0.85) {
        const v = walker.valid(r, p.schema, p.name, 0, (n) => idFor(r, n));
        const text = Array.isArray(v) ? v.join(',') : v === null ? '' : String(v);
        query.push(`${p.name}=${encodeParam(r, text)}`);
      } else query.push(`${p.name}=${hostileParam(r)}`);
      if (!valid && r.chance(0.03)) query.push(`${p.name}=${hostileParam(r)}`);
    }
    if (!valid && r.chance(0.03)) query.push(`${r.pick(['x', '__proto__', '%00'])}=${hostileParam(r)}`);
    if (query.length) path += `?${query.join('&')}`;

    // Body: valid, mutated once or twice, or not JSON at all.
    let raw: string | undefined;
    let json: Json | undefined;
    const bodySchema = o.op.requestBody?.content?.['application/json']?.schema;
    if (bodySchema) {
      json = walker.valid(r, bodySchema, '', 0, (n) => idFor(r, n));
      if (!valid) {
        const roll = r.next();
        if (roll < 0.05)
          raw = r.pick([
            '',
            '{',
            'null',
            '[]',
            '"x"',
            '1',
            '{"a":',
            '\u0000',
            '{"observation":"\\ud800"}',
            `${'['.repeat(20_000)}${']'.repeat(20_000)}`,
            `{"x":${'['.repeat(100_000)}`,
          ]);
        else if (roll < 0.08) json = hostileValue(r);
        else if (roll < 0.8) {
          json = mutateBody(r, json);
          if (r.chance(0.3)) json = mutateBody(r, json);
        }
      }
      if (raw === undefined) raw = JSON.stringify(json);
      const ct = valid ? 0 : r.next();
      headers['content-type'] = ct < 0.03 ? r.pick(['text/plain', 'application/x-www-form-urlencoded', 'multipart/form-data; boundary=x']) : 'application/json';
    } else if (!valid && o.method !== 'GET' && r.chance(0.1)) {
      raw = JSON.stringify(hostileValue(r));
      headers['content-type'] = 'application/json';
    }
    return { method: o.method, path, headers, raw, tier };
  }

  async function send(o: Operation, req: ReturnType<typeof build>) {
    sent++;
    let res: FuzzResponse;
    try {
      res = await target.request(req.method, req.path, { headers: req.headers, raw: req.raw });
    } catch (err) {
      record('broken-response', o, req, { status: 0, body: null, text: err instanceof Error ? `${err.name}: ${err.message}` : String(err) });
      return;
    }
    statuses[res.status] = (statuses[res.status] ?? 0) + 1;
    if (res.status >= 500) {
      serverErrors++;
      record('5xx', o, req, res);
    } else if (res.status >= 400) {
      const b = res.body;
      // A blocked action is the one error whose `status` is the action's own ("blocked"), as on the route's other answers.
      const statusField = b?.code === 'BLOCKED' && res.status === 403 ? 'blocked' : res.status;
      const ok =
        b &&
        typeof b === 'object' &&
        typeof b.code === 'string' &&
        b.status === statusField &&
        typeof b.message === 'string' &&
        typeof b.request_id === 'string';
      if (!ok) record('error-body', o, req, res);
      // A tenant whose key stopped working (revoked by the fuzzer itself) is replaced.
      if (res.status === 401 && req.tier && req.headers.authorization === `Bearer ${tenants.get(req.tier)!.key}`) {
        tenants.set(req.tier, await target.newTenant(req.tier));
      }
    } else if (res.body && typeof res.body === 'object') harvest(res.body);
  }

  function record(kind: FuzzFailure['kind'], o: Operation, req: ReturnType<typeof build>, res: FuzzResponse) {
    const key = `${kind} ${o.method} ${o.path} ${res.status}`;
    const seen = failures.get(key);
    if (seen) seen.count++;
    else
      failures.set(key, {
        kind,
        method: req.method,
        path: truncate(req.path, 300)!,
        operation: `${o.method} ${o.path}`,
        status: res.status,
        body: truncate(req.raw),
        response: truncate(res.text)!,
        count: 1,
      });
  }

  const worker = async (index: number) => {
    const r = new Rng((opts.seed + index * 0x9e3779b1) >>> 0);
    // Warm-up: well-formed requests to every operation, so later ones find ids that exist.
    for (const o of operations) if (index === 0 || r.chance(0.5)) await send(o, build(r, o, true));
    while (sent < maxRequests && Date.now() < deadline) {
      const o = r.pick(operations);
      const valid = r.chance(0.15);
      const req = build(r, o, valid);
      if (o.method !== 'GET' && r.chance(burstRate)) {
        // The same write several times at once, from distinct client addresses.
        await Promise.all(
          Array.from({ length: burstSize }, (_, i) =>
            send(o, { ...req, headers: { ...req.headers, 'x-forwarded-for': `2001:db8::ffff:${index}:${i}:${r.int(1, 0xffff).toString(16)}` } }),
          ),
        );
      } else await send(o, req);
    }
  };
  await Promise.all(Array.from({ length: concurrency }, (_, i) => worker(i)));

  return {
    seed: opts.seed,
    requests: sent,
    operations: operations.length,
    statuses,
    serverErrors,
    failures: [...failures.values()],
    seconds: Math.round((Date.now() - started) / 100) / 10,
  };
}

/** A failure report a person can act on: the seed to rerun with, and each failing request. */
export function describe(report: FuzzReport): string {
  const lines = [
    `fuzz: ${report.requests} requests over ${report.operations} operations in ${report.seconds}s, ${report.serverErrors} × 5xx, seed ${report.seed} (rerun: FUZZ_SEED=${report.seed})`,
    `statuses: ${JSON.stringify(report.statuses)}`,
  ];
  for (const f of report.failures) {
    lines.push(`- ${f.kind} ${f.status} ×${f.count} on ${f.operation}`, `    ${f.method} ${f.path}`);
    if (f.body !== undefined) lines.push(`    body: ${JSON.stringify(f.body)}`);
    lines.push(`    answer: ${f.response}`);
  }
  return lines.join('\n');
}
