import type { Context } from 'hono';
import type { CounterOutcome } from '../data/counters';
import type { DbOrTx } from '../data/db';
import type { UsageWrite } from '../limits/request-gate';
import { AppError } from './errors';
import type { AppRegistry } from '../http/metrics';
import type { Services } from './services';
import type { Tier } from './tiers';

export interface AuthContext {
  tenantId: string;
  keyId: string;
  tier: Tier;
  email: string;
  /** `grace` for a key rotated out but still inside its grace period. */
  keyStatus?: 'active' | 'grace';
  /** Set for a restricted key only (POST /v1/keys/restricted): what it may call and see. */
  restriction?: KeyRestriction;
  /**
   * With Redis (several instances): the tenant's key epoch the request was admitted under
   * (request-gate.ts), which the verbs changing memory policies replace too: the store path keeps
   * its copy of the tenant's governance under it (shared/control/governance-copies.ts).
   */
  keyEpoch?: string;
}

/**
 * What a restricted key may do: the families its scopes name (shared/platform/contract/scopes.ts), and in
 * the memories family only one agent's memories (`agentId`) and only some spaces (`spaceIds`, bare
 * uuids). Null: not confined that way.
 */
export interface KeyRestriction {
  scopes: readonly string[];
  agentId: string | null;
  spaceIds: readonly string[] | null;
}

export interface AppEnv {
  Variables: {
    services: Services;
    /** The app's own registry of its routes (shared/platform/http/metrics.ts). */
    registry: AppRegistry;
    requestId: string;
    auth?: AuthContext;
    /** This request's api_calls count and the tenant's other counters at that moment. */
    counted?: CounterOutcome;
    /** Built on first use by `ctxOf`/`publicCtxOf`, then reused for the rest of the request. */
    ctx?: Ctx;
    /** The Idempotency-Key this request holds (shared/platform/data/idempotency.ts). */
    idempotency?: IdempotencyClaim;
    /** With Redis: this write request, announced to every instance until it ends (request-gate.ts). */
    usageWrite?: UsageWrite;
  };
}

/**
 * What a service verb knows about the request it serves: built once per request (or per job),
 * passed as the first argument of every verb. `now` is one reading of the clock, so every
 * timestamp a request writes agrees. `db` is the database, or the open transaction when the ctx
 * comes from a unit of work (`write`), so a verb called with it joins that transaction.
 */
export interface Ctx {
  readonly services: Services;
  readonly db: DbOrTx;
  readonly now: Date;
  readonly requestId: string | null;
  /** Who the audit trail names: a key id, `admin`, `system`. */
  readonly actor: string | null;
  /** The caller's tenant when a key authenticated the request. */
  readonly auth: AuthContext | null;
  /** Set inside a unit of work; see `write` in unit-of-work.ts. */
  readonly work?: unknown;
  /** The Idempotency-Key the request holds: the work's transaction marks it committed. */
  readonly idempotency?: IdempotencyClaim;
  /** The request's announcement as a writer: its commits need no usage epoch change after them. */
  readonly usageWrite?: UsageWrite;
  /** The way in when it is not the HTTP API itself: a tool call over MCP. Its audit entries say so. */
  readonly via?: Via;
  /** The app that took the request (its routes' registry); none for jobs and maintenance. */
  readonly registry?: AppRegistry;
}

export type Via = 'mcp';

/**
 * The way in of a request the app made to itself on a caller's behalf (functions/mcp): carried in
 * the env argument of `app.fetch`, which no client can set.
 */
export const VIA_ENV = '__via';
const viaOf = (c: Context<AppEnv>): Via | undefined => (c.env as Record<string, unknown> | undefined)?.[VIA_ENV] as Via | undefined;

/** Which idempotency record a request's writes belong to. */
export interface IdempotencyClaim {
  tenantId: string;
  keyHash: string;
  hash: string;
}

/** A ctx whose caller is a tenant (every keyed route, and jobs acting for a tenant). */
export interface TenantCtx extends Ctx {
  readonly auth: AuthContext;
  readonly tenantId: string;
  readonly tier: Tier;
}

export function makeCtx(services: Services, opts: { requestId?: string | null; actor?: string | null; now?: Date; registry?: AppRegistry } = {}): Ctx {
  return {
    services,
    db: services.db,
    now: opts.now ?? services.clock.now(),
    requestId: opts.requestId ?? null,
    actor: opts.actor ?? null,
    auth: null,
    registry: opts.registry,
  };
}

/**
 * A ctx whose caller is `auth`'s tenant. Built as one object literal of a fixed shape, not by
 * spreading: this runs on every keyed request, and spreads cost several times more on the hot path.
 */
export function tenantCtx(base: Ctx, auth: AuthContext, idempotency?: IdempotencyClaim, usageWrite?: UsageWrite, via?: Via): TenantCtx {
  return {
    services: base.services,
    db: base.db,
    now: base.now,
    requestId: base.requestId,
    actor: base.actor ?? auth.keyId,
    auth,
    tenantId: auth.tenantId,
    tier: auth.tier,
    idempotency: idempotency ?? base.idempotency,
    usageWrite: usageWrite ?? base.usageWrite,
    via: via ?? base.via,
    registry: base.registry,
  };
}

/** The ctx of a public route (signup, verify, operator calls): no tenant; `actor` names who acts. */
export function publicCtxOf(c: Context<AppEnv>, actor: string | null = null): Ctx {
  const auth = c.get('auth');
  const base = makeCtx(c.get('services'), { requestId: c.get('requestId'), actor: auth?.keyId ?? actor, registry: c.get('registry') });
  return auth ? tenantCtx(base, auth) : base;
}

/** The ctx of a keyed route; the key's tenant acts. Built once per request. */
export function ctxOf(c: Context<AppEnv>): TenantCtx {
  const cached = c.get('ctx');
  if (cached?.auth) return cached as TenantCtx;
  const auth = c.get('auth');
  if (!auth) throw new AppError('UNAUTHORIZED', 'Missing API key');
  const ctx = tenantCtx(
    makeCtx(c.get('services'), { requestId: c.get('requestId'), registry: c.get('registry') }),
    auth,
    c.get('idempotency'),
    c.get('usageWrite'),
    viaOf(c),
  );
  c.set('ctx', ctx);
  return ctx;
}

/** Background work (maintenance, jobs): the `system` actor, no request. */
export const systemCtx = (services: Services, now?: Date): Ctx => makeCtx(services, { actor: 'system', now });
