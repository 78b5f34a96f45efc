import type { createRoute, z } from '@hono/zod-openapi';
import type { Context } from 'hono';
import { inputFailure } from './app';
import { type AppEnv, ctxOf, type TenantCtx } from '../contract/context';
import type { Tx } from '../data/db';
import { limitReached } from '../contract/errors';
import { jsonBody } from './openapi';
import { refuseOutOfScope, requiredScope } from '../contract/scopes';
import { type Feature, requireFeature, type Tier, TIERS } from '../contract/tiers';
import { type Work, write } from '../data/unit-of-work';

/**
 * A verb is the single enforcement point of an operation (docs/architecture.md#verbs): what a caller
 * may do and with what input is declared once, here, and every surface that calls the verb (the
 * route, the console, MCP, the importer) meets the same rules in the same order as the route's
 * middleware: the key's scope and confinement, the tier gate, then the input schemas; then the
 * verb's own checks, and its limit, counted under its lock in the unit of work the work runs in.
 */

type Method = 'get' | 'post' | 'put' | 'patch' | 'delete';
type Schema = z.ZodType;
type Empty = Record<never, never>;
type Parameter = NonNullable<NonNullable<Parameters<typeof createRoute>[0]['request']>['query']>;

export type ValidationHook = (result: { success: boolean; target?: string; error?: unknown }) => undefined;

/** The verb's input, as the route takes it apart: path parameters, query parameters, JSON body. */
export interface VerbInput {
  params?: Parameter;
  query?: Parameter;
  body?: Schema;
}

/** The request declaration of a route, as `routeOf` builds it from the verb's input. */
type RequestOf<I extends VerbInput> = (I extends { params: infer P extends Parameter } ? { params: P } : Empty) &
  (I extends { query: infer Q extends Parameter } ? { query: Q } : Empty) &
  (I extends { body: infer B extends Schema } ? { body: { required: true; content: { 'application/json': { schema: B } } } } : Empty);

type Out<S> = S extends Schema ? z.output<S> : unknown;
/** The input `run` gets: every part, parsed, as one object. */
export type InputOf<I extends VerbInput> = Out<I['params']> & Out<I['query']> & Out<I['body']>;

/**
 * A count the verb caps (docs/architecture.md#verbs): what is counted, the most a tier may have,
 * the advisory lock the count and the write hold together (so two callers cannot both take the
 * last place), and the refusal over it (403 svc_ram.v1.tier.limit_exceeded with `usage`, or the
 * contract's 429 RATE_LIMITED where it names that).
 */
export interface VerbLimit<In> {
  /** What is counted, as the refusal's `usage.metric` names it: `custom_policies`, `webhooks`. */
  metric: string;
  /** The most there may be on a tier; null: no limit. */
  max: (tier: Tier) => number | null;
  /** The advisory lock key (`work.lock`), held from the count to the end of the write. */
  lock: (ctx: TenantCtx) => string;
  /** How many there are, read under the lock. */
  count: (tx: Tx, ctx: TenantCtx) => Promise<number>;
  /** Whether this call adds one to the count (default: always); enabling a policy that is enabled adds none. */
  adds?: (tx: Tx, ctx: TenantCtx, input: In) => Promise<boolean>;
  /** The refusal's message. */
  message: (max: number, tier: Tier) => string;
  /** Where the contract names RATE_LIMITED for a count cap (eval baselines); else limit_exceeded. */
  code?: 'RATE_LIMITED';
}

export interface VerbDeclaration<I extends VerbInput, R, M extends Method> {
  /** The operationId of the route that serves it: `traces.list`. */
  name: `${string}.${string}`;
  /** The route's method: a GET needs the family's read scope, any other method its write scope. */
  method: M;
  /** The scope family when it is not the operationId's prefix (deciding held actions is `approvals`). */
  scopeFamily?: string;
  input: I;
  /** The tier feature it needs; a tier without it is refused (shared/platform/contract/tiers.ts, `requireFeature`). */
  feature?: Feature;
  /** Whether it honours a key's `agent_id` and `space_ids`; any other verb refuses a confined key. */
  confinable?: true;
  /**
   * The route's own validation hook when it has one (it throws its refusal); else a failure is 400
   * VALIDATION_ERROR with `details`, or 422 INVALID_RANGE, as the router answers.
   */
  hook?: ValidationHook;
  /**
   * Checks of the input the schemas cannot make and that read nothing of the account (a webhook's
   * destination, resolved in DNS): they run before the unit of work opens, so no lock waits on them.
   */
  check?: (ctx: TenantCtx, input: InputOf<I>) => Promise<void> | void;
  /** The count it caps; checked in the unit of work `run` then joins. */
  limit?: VerbLimit<InputOf<I>>;
  /** The work, with input already admitted and parsed. */
  run: (ctx: TenantCtx, input: InputOf<I>) => Promise<R>;
}

export interface Verb<I extends VerbInput, R, M extends Method> extends VerbDeclaration<I, R, M> {
  /** Scope, confinement, tier gate, input parse, then `run`: how any surface but the route calls it. */
  (ctx: TenantCtx, raw: unknown): Promise<R>;
  /** The scope a restricted key needs to call it. */
  readonly scope: string;
  /** Throws the refusal the caller would get before any input is read (scope, confinement, tier). */
  admit(ctx: TenantCtx): void;
  /** Whether the caller would be admitted: for a page that shows a gate rather than meeting it. */
  allows(ctx: TenantCtx): boolean;
  /** The work of admitted, parsed input with the verb's checks and limit: what a route's handler runs. */
  perform(ctx: TenantCtx, input: InputOf<I>): Promise<R>;
}

/** The order the router validates a route's parts in, and the name each failure gives its target. */
const PARTS = [
  ['query', 'query'],
  ['params', 'param'],
  ['body', 'json'],
] as const;

/** Declares a verb; see the file's comment. */
export function defineVerb<const M extends Method, I extends VerbInput, R>(declared: VerbDeclaration<I, R, M>): Verb<I, R, M> {
  const scope = requiredScope(declared.name, declared.method, declared.scopeFamily);
  const admit = (ctx: TenantCtx) => {
    refuseOutOfScope(ctx.auth.restriction, declared.name, scope, declared.confinable === true);
    if (declared.feature) requireFeature(ctx.tier, declared.feature);
  };
  const perform = async (ctx: TenantCtx, input: InputOf<I>): Promise<R> => {
    await declared.check?.(ctx, input);
    const { limit } = declared;
    // A tier without a maximum counts nothing and waits on no lock.
    if (!limit || limit.max(ctx.tier) === null) return declared.run(ctx, input);
    return write(ctx, async (work) => {
      await enforceLimit(limit, work, input);
      return declared.run(work.ctx, input);
    });
  };
  const call = async (ctx: TenantCtx, raw: unknown) => {
    admit(ctx);
    return perform(ctx, parseInput(declared, raw) as InputOf<I>);
  };
  const allows = (ctx: TenantCtx) => {
    try {
      admit(ctx);
      return true;
    } catch {
      return false;
    }
  };
  // A function's own `name` is read-only: the operationId replaces it by definition.
  const { name, ...rest } = declared;
  Object.defineProperty(call, 'name', { value: name });
  return Object.assign(call, rest, { scope, admit, allows, perform }) as unknown as Verb<I, R, M>;
}

/**
 * A limit enforced inside a unit of work: its lock taken, then its count refused over the maximum.
 * Verbs do this for their declared limit; a surface that mints what a verb's limit counts (the OAuth
 * consent page mints a restricted key) calls it with that same declaration, never a copy.
 */
export async function enforceLimit<In>(limit: VerbLimit<In>, work: Work<TenantCtx>, input: In): Promise<void> {
  if (limit.max(work.ctx.tier) === null) return;
  await work.lock(limit.lock(work.ctx));
  await refuseOverLimit(limit, work.tx, work.ctx, input);
}

async function refuseOverLimit<In>(limit: VerbLimit<In>, tx: Tx, ctx: TenantCtx, input: In): Promise<void> {
  const max = limit.max(ctx.tier)!;
  if (limit.adds && !(await limit.adds(tx, ctx, input))) return;
  const current = await limit.count(tx, ctx);
  if (current < max) return;
  throw limitReached(
    limit.message(max, ctx.tier),
    { metric: limit.metric, current, limit: max, plan: ctx.tier, resets_at: null },
    { now: ctx.now, upgradeUrl: ctx.services.config.UPGRADE_URL, ...(limit.code ? { code: limit.code } : {}) },
  );
}

/** The limit as `/openapi.json` states it (`x-limit`): what is counted and the most per tier. */
// biome-ignore lint/suspicious/noExplicitAny: any limit, whatever its input
const limitDocument = (limit: VerbLimit<any>) => ({
  metric: limit.metric,
  code: limit.code ?? 'svc_ram.v1.tier.limit_exceeded',
  max: Object.fromEntries(TIERS.map((tier) => [tier, limit.max(tier)])),
});

/** Each part's schema applied to the raw input, with the refusal the route's validation gives. */
function parseInput({ input, hook }: { input: VerbInput; hook?: ValidationHook }, raw: unknown): Record<string, unknown> {
  const parsed: Record<string, unknown> = {};
  for (const [part, target] of PARTS) {
    const schema = input[part];
    if (!schema) continue;
    const result = schema.safeParse(raw ?? {});
    if (result.success) {
      Object.assign(parsed, result.data);
      continue;
    }
    hook?.({ success: false, target, error: result.error });
    throw inputFailure(result.error, target);
  }
  return parsed;
}

/**
 * What a route takes from its verb: the operationId, method, gate, confinement and the request's
 * schemas, so the route cannot declare a rule the verb does not hold (spread into `keyRoute`).
 */
// biome-ignore lint/suspicious/noExplicitAny: any verb, whatever its input and result
export function routeOf<V extends Verb<any, any, Method>>(verb: V) {
  const { params, query, body } = verb.input as VerbInput;
  return {
    operationId: verb.name,
    method: verb.method as V['method'],
    ...(verb.scopeFamily ? { scopeFamily: verb.scopeFamily } : {}),
    ...(verb.feature ? { feature: verb.feature } : {}),
    ...(verb.confinable ? { confinable: true as const } : {}),
    ...(verb.limit ? { 'x-limit': limitDocument(verb.limit) } : {}),
    request: {
      ...(params ? { params } : {}),
      ...(query ? { query } : {}),
      ...(body ? { body: jsonBody(body) } : {}),
    } as RequestOf<V['input']>,
  };
}

/**
 * A route's handler body: the input the router already validated with the verb's own schemas, and
 * the checks its middleware already made, so the verb's checks, limit and work run without parsing twice.
 */
// biome-ignore lint/suspicious/noExplicitAny: any verb, whatever its input and result
export function runFromRoute<V extends Verb<any, any, Method>>(verb: V, c: Context<AppEnv>): ReturnType<V['run']> {
  const input: Record<string, unknown> = {};
  for (const [part, target] of PARTS) if ((verb.input as VerbInput)[part]) Object.assign(input, c.req.valid(target as never));
  return verb.perform(ctxOf(c), input) as ReturnType<V['run']>;
}
