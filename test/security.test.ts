import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { UNCONFINED } from '../shared/platform/contract/scopes';
import { bindTools } from '../functions/mcp/catalog';
import { TOOLS } from '../functions/mcp/tools';
import { hasFeature, TIERS, tierRefusal } from '../shared/platform/contract/tiers';
import { createEngine, errorOf, type Tenant, type TestEngine } from './harness';
import { type IdKind, kindOf, makeResources, specNamedForbidden, unknownId } from './security/fixtures';
import { consoleRoutes, fillConsolePath, fillPath, type RouteEntry, routeTable } from './security/route-table';
import { signIn } from './console-session';

/**
 * The security suite, generated from the route table (Unkey's per-route common tests): every route
 * that needs a key refuses a missing, malformed, unknown, revoked and expired key with 401; every
 * route with an id in its path or body answers another tenant's id exactly as an id that names
 * nothing (404, or the 403 the contract names; docs/architecture.md#not-found-never-forbidden), so no route is an oracle; every
 * keyed route refuses a restricted key without the scope it declares. A new route is covered
 * without being listed; a new kind of id fails here until test/security/fixtures.ts knows it.
 */
const routes = routeTable();
const keyed = routes.filter((r) => r.access === 'key');

let engine: TestEngine;
let owner: Tenant;
let attacker: Tenant;
let owned: Record<IdKind, string>;
let badKeys: { label: string; key: string }[];
let doc: any;

const HOUR = 3_600_000;

beforeAll(async () => {
  engine = await createEngine({ env: { SVC_ENABLE_EXPERIMENTAL: '1' } });
  [owner, attacker] = [await engine.newTenant('enterprise'), await engine.newTenant('enterprise')];
  owned = await makeResources(engine, owner);
  doc = (await engine.request('GET', '/openapi.json')).body;

  const revoked = await engine.newTenant('enterprise');
  expect((await engine.request('POST', '/v1/keys/revoke', { key: revoked.key, body: { key_id: revoked.keyId } })).status).toBe(200);
  const expiring = await engine.newTenant('enterprise');
  const rotated = await engine.request('POST', '/v1/keys/rotate', {
    key: expiring.key,
    body: { expires_at: new Date(engine.clock.now().getTime() + HOUR).toISOString() },
  });
  expect(rotated.status).toBe(200);
  engine.clock.advance(25 * HOUR); // the rotated key has expired, and so has the old key's grace
  badKeys = [
    { label: 'a malformed key', key: 'not-a-key' },
    { label: 'an unknown key', key: `sk_${'A'.repeat(43)}` },
    { label: 'a revoked key', key: revoked.key },
    { label: 'an expired key', key: rotated.body.new_key },
    { label: 'a key past its rotation grace', key: expiring.key },
  ];
}, 120_000);
afterAll(() => engine.close());

/** The request body documented for the route (every body has a working example; test/docs.test.ts). */
function exampleBody(route: RouteEntry): Record<string, unknown> | undefined {
  if (!route.hasBody) return undefined;
  const media = doc.paths[route.path][route.method.toLowerCase()].requestBody.content['application/json'];
  const schema = media.schema.$ref ? doc.components.schemas[media.schema.$ref.split('/').pop()] : media.schema;
  return structuredClone(media.example ?? schema.example ?? {});
}

const send = (route: RouteEntry, key: string | undefined, path: string, body?: unknown) =>
  engine.request(route.method, path, { key, body: body ?? (route.hasBody ? {} : undefined) });

describe('every route that needs a key refuses requests without a valid one', () => {
  it(`covers ${keyed.length} keyed routes`, () => {
    expect(keyed.length).toBeGreaterThan(30);
  });

  for (const route of keyed) {
    it(`${route.method} ${route.path}: 401 without a key, and with a malformed, unknown, revoked or expired key`, async () => {
      const path = fillPath(route.path, {});
      const none = await send(route, undefined, path);
      expect(none.status).toBe(401);
      expect(none.body).toMatchObject({ code: 'UNAUTHORIZED', status: 401 });
      for (const { label, key } of badKeys) {
        const res = await send(route, key, path);
        expect(res.status, label).toBe(401);
        expect(errorOf(res).code, label).toBe('UNAUTHORIZED');
      }
    });
  }
});

/** The ids a route takes in its path and body, with their kinds. */
function idsOf(route: RouteEntry) {
  const fields = [...route.pathParams.map((name) => ({ name, in: 'path' as const })), ...route.bodyFields.map((name) => ({ name, in: 'body' as const }))];
  return fields.flatMap((f) => {
    const kind = kindOf(route.path, f.name);
    return kind === null ? [] : [{ ...f, kind }];
  });
}

const withIds = keyed.filter((r) => idsOf(r).length > 0);

describe("another tenant's ids answer exactly as ids that name nothing", () => {
  it(`covers ${withIds.length} routes with ids`, () => {
    expect(withIds.length).toBeGreaterThan(10);
  });

  for (const route of withIds) {
    const ids = idsOf(route);
    it(`${route.method} ${route.path}: ${ids.map((i) => `${i.in} ${i.name}`).join(', ')}`, async () => {
      const unknownKinds = ids.filter((i) => i.kind === 'unknown');
      expect(
        unknownKinds.map((i) => i.name),
        'an id kind test/security/fixtures.ts does not know: add it there',
      ).toEqual([]);
      const request = (choose: (kind: IdKind) => string) => {
        const params: Record<string, string> = {};
        const body = exampleBody(route);
        for (const id of ids) {
          const value = choose(id.kind as IdKind);
          if (id.in === 'path') params[id.name] = value;
          else if (body) body[id.name] = value;
        }
        for (const p of route.pathParams) params[p] ??= p === 'index' ? '0' : 'x';
        return send(route, attacker.key, fillPath(route.path, params), body);
      };
      const foreign = await request((kind) => owned[kind]);
      const missing = await request((kind) => unknownId[kind]());
      const where = `foreign ${foreign.status} ${foreign.text} / unknown ${missing.status} ${missing.text}`;
      expect(foreign.status, where).toBeGreaterThanOrEqual(400);
      expect(foreign.status, where).toBeLessThan(500);
      const pathIds = ids.some((i) => i.in === 'path');
      if (specNamedForbidden.some((p) => p.test(route.path))) {
        expect([403, 404], where).toContain(foreign.status);
        expect(missing.status, where).toBe(404);
        return;
      }
      // A path id that names nothing must reach the lookup (404), or the comparison proves nothing.
      if (pathIds) expect(missing.status, where).toBe(404);
      expect({ status: foreign.status, code: errorOf(foreign).code }, where).toEqual({ status: missing.status, code: errorOf(missing).code });
    });
  }
});

const gated = keyed.filter((r) => r.feature);

describe('every tier gate a route declares refuses the tiers without the feature, by the one rule', () => {
  it(`covers ${gated.length} gated routes`, () => {
    expect(gated.length).toBeGreaterThan(10);
  });

  for (const route of gated) {
    const feature = route.feature!;
    it(`${route.method} ${route.path} (${feature}): the tiers without it get 403 with the rule's code, as its OpenAPI says`, async () => {
      const operation = doc.paths[route.path][route.method.toLowerCase()];
      expect(operation['x-required-feature']).toBe(feature);
      expect(operation.responses['403'], 'a gated route documents its 403').toBeDefined();
      const { code, requiredTier } = tierRefusal(feature);
      for (const tier of TIERS.filter((t) => !hasFeature(t, feature))) {
        const tenant = await engine.newTenant(tier);
        const res = await send(route, tenant.key, fillPath(route.path, {}), exampleBody(route));
        expect(res.status, `${tier}: ${res.text}`).toBe(403);
        expect(res.body).toMatchObject({ code, feature, required_tier: requiredTier, current_tier: tier });
      }
    });
  }
});

/** The family of a declared scope: `approvals:write` → `approvals`. */
const scopeFamily = (route: RouteEntry) => route.scope!.split(':')[0];

describe("every keyed route checks a restricted key's scope: read for GET and HEAD, write for the rest", () => {
  const families = [...new Set(keyed.map(scopeFamily))];
  /** For each family, a restricted key whose only scope is of another family (read and write). */
  const strangers = new Map<string, string>();
  const own = new Map<string, string>();
  let scoped: Tenant;

  beforeAll(async () => {
    scoped = await engine.newTenant('enterprise');
    const mint = async (scopes: string[]) => {
      const res = await engine.request('POST', '/v1/keys/restricted', { key: scoped.key, body: { name: scopes.join(' '), scopes } });
      expect(res.status, res.text).toBe(201);
      return res.body.api_key as string;
    };
    for (const family of families) {
      const other = families.find((f) => f !== family)!;
      strangers.set(family, await mint([`${other}:write`]));
      own.set(family, await mint([`${family}:write`]));
    }
  }, 120_000);

  it(`covers ${keyed.length} keyed routes in ${families.length} families`, () => {
    expect(keyed.every((r) => r.operationId.includes('.'))).toBe(true);
    expect(families.length).toBeGreaterThan(10);
  });

  it('every keyed route declares its scope, read for GET and HEAD and write for the rest (MCP reads this x-required-scope)', () => {
    const wrong = keyed.filter((r) => {
      const access = r.method === 'GET' || r.method === 'HEAD' ? 'read' : 'write';
      return r.scope !== `${r.scope?.split(':')[0]}:${access}`;
    });
    expect(wrong.map((r) => `${r.method} ${r.path}: ${r.scope}`)).toEqual([]);
  });

  it("deciding held actions and changing control settings are scopes of their own, not the agent's actions:write", () => {
    const scopeOf = (operationId: string) => keyed.find((r) => r.operationId === operationId)?.scope;
    expect(scopeOf('actions.decide')).toBe('approvals:write');
    expect(scopeOf('actions.putSettings')).toBe('settings:write');
    expect(scopeOf('actions.submit')).toBe('actions:write');
  });

  for (const route of keyed) {
    const scope = route.scope!;
    it(`${route.method} ${route.path} (${route.operationId}): 403 FORBIDDEN with required_scope ${scope} without it, and not with it`, async () => {
      const family = scopeFamily(route);
      expect(doc.paths[route.path][route.method.toLowerCase()]['x-required-scope']).toBe(scope);
      const path = fillPath(route.path, {});
      const refused = await send(route, strangers.get(family)!, path, exampleBody(route));
      expect(refused.status, refused.text).toBe(403);
      expect(refused.body).toMatchObject({ code: 'FORBIDDEN', required_scope: scope });
      const operation = doc.paths[route.path][route.method.toLowerCase()];
      expect(operation.responses['403'], 'every keyed route documents its 403').toBeDefined();
      // The route's own family scope passes the check (what follows may refuse for other reasons).
      const allowed = await send(route, own.get(family)!, path, exampleBody(route));
      expect(allowed.status === 403 && (allowed.body as { required_scope?: string }).required_scope === scope, allowed.text).toBe(false);
    });
  }
});

/**
 * A key confined to an agent or to spaces, even with every scope, reaches only the routes that
 * honour its confinement; every other keyed route would reach the tenant's other memories and
 * refuses it with `required_scope: "unconfined"`. A new route is refused until it declares
 * `confinable` (and honours it).
 */
describe('every keyed route either honours a confined key or refuses it', () => {
  let confined: string;

  beforeAll(async () => {
    const owner = await engine.newTenant('enterprise');
    const res = await engine.request('POST', '/v1/keys/restricted', { key: owner.key, body: { name: 'confined', scopes: ['*'], agent_id: 'confined-agent' } });
    expect(res.status, res.text).toBe(201);
    confined = res.body.api_key;
  });

  it(`${keyed.filter((r) => r.confinable).length} of ${keyed.length} keyed routes honour confinement`, () => {
    expect(keyed.some((r) => r.confinable)).toBe(true);
    expect(keyed.some((r) => !r.confinable)).toBe(true);
  });

  for (const route of keyed) {
    it(`${route.method} ${route.path} (${route.operationId}): ${route.confinable ? 'honours' : 'refuses'} a key confined to an agent`, async () => {
      const res = await send(route, confined, fillPath(route.path, {}), exampleBody(route));
      const unconfined = res.status === 403 && (res.body as { required_scope?: string }).required_scope === UNCONFINED;
      expect(unconfined, res.text).toBe(!route.confinable);
    });
  }
});

/**
 * Actions and traces belong to an agent: a key confined to another agent answers the tenant's
 * action or trace by id exactly as an id that names nothing, on every confinable route that takes
 * one (reads and writes alike). A new such route is covered without being listed.
 */
const AGENT_KINDS: readonly IdKind[] = ['action', 'trace'];
const agentOwned = keyed.filter((r) => r.confinable && idsOf(r).some((i) => AGENT_KINDS.includes(i.kind as IdKind)));

describe("a key confined to an agent answers another agent's actions and traces as ids that name nothing", () => {
  let confined: string;

  beforeAll(async () => {
    // The owner's fixtures were made by no agent (the action) or by another one (the trace).
    const res = await engine.request('POST', '/v1/keys/restricted', { key: owner.key, body: { name: 'bot-a', scopes: ['*'], agent_id: 'bot-a' } });
    expect(res.status, res.text).toBe(201);
    confined = res.body.api_key;
  });

  it(`covers ${agentOwned.length} confinable routes with an action or trace id`, () => {
    expect(agentOwned.length).toBeGreaterThan(4);
  });

  for (const route of agentOwned) {
    const ids = idsOf(route);
    it(`${route.method} ${route.path}: ${ids.map((i) => `${i.in} ${i.name}`).join(', ')}`, async () => {
      const request = (choose: (kind: IdKind) => string) => {
        const params: Record<string, string> = {};
        const body = exampleBody(route);
        for (const id of ids) {
          const value = choose(id.kind as IdKind);
          if (id.in === 'path') params[id.name] = value;
          else if (body) body[id.name] = value;
        }
        return send(route, confined, fillPath(route.path, params), body);
      };
      const theirs = await request((kind) => owned[kind]);
      const missing = await request((kind) => unknownId[kind]());
      const where = `another agent's ${theirs.status} ${theirs.text} / unknown ${missing.status} ${missing.text}`;
      expect(missing.status, where).toBe(404);
      expect({ status: theirs.status, code: errorOf(theirs).code }, where).toEqual({ status: missing.status, code: errorOf(missing).code });
    });
  }
});

/**
 * The same through MCP, derived from the tool table: each tool is bound to its route by
 * operationId, so a tool whose route takes an id gets that route's ids and fixtures. Another
 * tenant's id must come back as the tool error an id that names nothing gets, with nothing else
 * in it. A new tool is covered without being listed.
 */
describe("MCP tools answer another tenant's ids exactly as ids that name nothing", () => {
  const byOperation = new Map(keyed.filter((r) => r.operationId).map((r) => [r.operationId!, r]));
  const toolRoutes = TOOLS.map((spec) => ({ spec, route: byOperation.get(spec.operationId) }));
  const withToolIds = toolRoutes.filter(({ route }) => route && idsOf(route).length > 0);
  let client: Client;

  beforeAll(async () => {
    client = new Client({ name: 'engram-security', version: '1.0.0' });
    // The official client, through the app's own fetch (no socket needed for the isolation proof).
    const transport = new StreamableHTTPClientTransport(new URL('http://localhost/mcp'), {
      requestInit: { headers: { authorization: `Bearer ${attacker.key}` } },
      fetch: async (url, init) => engine.app.request(new Request(url, init)),
    });
    await client.connect(transport);
  });
  afterAll(() => client?.close());

  it(`every tool is bound to a keyed route; ${withToolIds.length} take ids`, () => {
    expect(toolRoutes.filter(({ route }) => !route).map(({ spec }) => spec.name)).toEqual([]);
    expect(withToolIds.length).toBeGreaterThan(5);
  });

  for (const { spec, route } of withToolIds) {
    const ids = idsOf(route!);
    it(`${spec.name} (${route!.method} ${route!.path}): ${ids.map((i) => `${i.in} ${i.name}`).join(', ')}`, async () => {
      expect(
        ids.filter((i) => i.kind === 'unknown').map((i) => i.name),
        'an id kind test/security/fixtures.ts does not know: add it there',
      ).toEqual([]);
      const tool = bindTools(doc).routes.get(spec.operationId)!;
      const call = async (choose: (kind: IdKind) => string) => {
        const args: Record<string, unknown> = { ...exampleBody(route!) };
        const chosen: string[] = [];
        for (const id of ids) {
          const value = choose(id.kind as IdKind);
          chosen.push(value);
          args[id.name] = value;
        }
        for (const p of route!.pathParams) args[p] ??= p === 'index' ? '0' : 'x';
        if (spec.confirm) args.confirm = spec.confirm;
        expect(Object.keys(args).filter((k) => !(k in (tool.inputSchema.properties as object)))).toEqual([]);
        const answer = (await client.callTool({ name: spec.name, arguments: args })) as { isError?: boolean; structuredContent?: Record<string, unknown> };
        // The ids the caller sent may be echoed; everything else must be the same for both.
        let text = JSON.stringify({ ...answer.structuredContent, request_id: null });
        for (const [i, value] of chosen.entries()) text = text.replaceAll(JSON.stringify(value).slice(1, -1), `<id ${i}>`);
        return { answer, text };
      };
      const foreign = await call((kind) => owned[kind]);
      const missing = await call((kind) => unknownId[kind]());
      const where = `foreign ${JSON.stringify(foreign.answer)} / unknown ${JSON.stringify(missing.answer)}`;
      expect(foreign.answer.isError, where).toBe(true);
      expect(missing.answer.isError, where).toBe(true);
      const status = foreign.answer.structuredContent?.status as number;
      if (specNamedForbidden.some((p) => p.test(route!.path))) expect([403, 404], where).toContain(status);
      else {
        if (ids.some((i) => i.in === 'path')) expect(missing.answer.structuredContent?.status, where).toBe(404);
        expect(foreign.text, where).toBe(missing.text);
      }
    });
  }
});

describe("every console page needs a session, and answers another tenant's ids as ids that name nothing", () => {
  const sessioned = consoleRoutes.filter((r) => r.session);
  const withConsoleIds = sessioned.filter((r) => r.idParams.length > 0);
  it(`covers ${sessioned.length} console routes, ${withConsoleIds.length} with ids`, () => {
    expect(sessioned.length).toBeGreaterThan(3);
    expect(withConsoleIds.length).toBeGreaterThan(0);
  });

  for (const route of sessioned) {
    it(`${route.method} ${route.path}: no session is a redirect to the sign-in page`, async () => {
      const res = await engine.app.request(fillConsolePath(route.path, {}), { method: route.method, redirect: 'manual' });
      expect([302, 303]).toContain(res.status);
      expect(res.headers.get('location')).toBe('/console/sign-in');
    });
  }

  for (const route of withConsoleIds) {
    it(`${route.method} ${route.path}: ${route.idParams.join(', ')}`, async () => {
      const visitor = await signIn((req) => engine.app.request(req), attacker.key);
      const kinds = route.idParams.map((name) => kindOf(route.path, name) as IdKind);
      expect(
        kinds.filter((k) => !k || (k as string) === 'unknown'),
        'an id kind test/security/fixtures.ts does not know: add it there',
      ).toEqual([]);
      const request = (choose: (kind: IdKind) => string) => {
        const path = fillConsolePath(route.path, Object.fromEntries(route.idParams.map((name, i) => [name, choose(kinds[i])])));
        return route.method === 'GET' ? visitor.get(path) : visitor.post(path, { _csrf: visitor.csrf });
      };
      const foreign = await request((kind) => owned[kind]);
      const missing = await request((kind) => unknownId[kind]());
      expect(missing.status).toBe(404);
      expect(foreign.status).toBe(404);
    });
  }
});
