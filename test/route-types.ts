/**
 * The response body a test receives, typed from the route it calls. The app's own type forgets its
 * routes (each family's router is an `OpenAPIHono<AppEnv>`, mounted in a loop), so the map is built
 * from the route definitions each family exports from its routes.ts (the operator API's from its
 * index.ts). A path such as
 * `/v1/memories/{id}` becomes the pattern `/v1/memories/${string}`; a request path that fits several
 * patterns takes the most specific (`/v1/memories/search` over `/v1/memories/{id}`), and a path that
 * fits none gets `unknown`, which the test narrows itself. Type-only imports: nothing here runs.
 */
import type { z } from '@hono/zod-openapi';
import type * as actions from '../functions/actions/routes';
import type * as admin from '../functions/admin/index';
import type * as audit from '../functions/audit/routes';
import type * as compensations from '../functions/compensations/routes';
import type * as cortex from '../functions/cortex/routes';
import type * as erasures from '../functions/erasures/routes';
import type * as evals from '../functions/eval/routes';
import type * as events from '../functions/events/routes';
import type * as keys from '../functions/keys/routes';
import type * as knowledge from '../functions/knowledge/routes';
import type * as memories from '../functions/memories/routes';
import type * as policies from '../functions/policies/routes';
import type * as replay from '../functions/replay/routes';
import type * as rollback from '../functions/rollback/routes';
import type * as runtime from '../functions/runtime/routes';
import type * as shares from '../functions/shares/routes';
import type * as spaces from '../functions/spaces/routes';
import type * as system from '../functions/system/routes';
import type * as teams from '../functions/teams/routes';
import type * as traces from '../functions/traces/routes';
import type * as usage from '../functions/usage/routes';
import type * as webhooks from '../functions/webhooks/routes';
import type { ErrorSchema } from '../shared/platform/http/openapi';

/**
 * The one error body every refusal carries (shared/platform/http/openapi.ts), with the extra fields a
 * refusal may add (`errorBody` spreads them in, e.g. `existing_ids` on a duplicate).
 */
export type ErrorBody = z.output<typeof ErrorSchema> & { [extra: string]: unknown };

type Modules =
  | typeof actions
  | typeof admin
  | typeof audit
  | typeof compensations
  | typeof cortex
  | typeof erasures
  | typeof evals
  | typeof events
  | typeof keys
  | typeof knowledge
  | typeof memories
  | typeof policies
  | typeof replay
  | typeof rollback
  | typeof runtime
  | typeof shares
  | typeof spaces
  | typeof system
  | typeof teams
  | typeof traces
  | typeof usage
  | typeof webhooks;

type RouteLike = { method: string; path: string; responses: object };
/** Every exported route definition (helpers and constants a routes.ts also exports drop out). */
type Routes = Modules extends infer M ? (M extends unknown ? Extract<M[keyof M], RouteLike> : never) : never;

/** `/v1/memories/{id}` (and Hono's `/v1/memories/:id`) as `/v1/memories/${string}`. */
export type PathPattern<P extends string> = P extends `${infer A}{${string}}${infer B}`
  ? `${A}${string}${PathPattern<B>}`
  : P extends `${infer A}:${string}/${infer B}`
    ? `${A}${string}/${PathPattern<B>}`
    : P extends `${infer A}:${string}`
      ? `${A}${string}`
      : P;

type JsonOf<R> = R extends { content: { 'application/json': { schema: infer S extends z.ZodType } } } ? z.output<S> : never;
type SuccessStatus = 200 | 201 | 202 | 204;
/**
 * The body a route declares for its first success status (refusals are typed as `ErrorBody` where
 * read): 201 for a store that may also answer 202 (a memory held for review), which a test reading
 * that answer casts.
 */
type FirstSuccess<R extends RouteLike> = SuccessStatus extends infer S ? (S extends keyof R['responses'] ? S : never) : never;
type Lowest<S> = [200] extends [S & 200] ? 200 : [201] extends [S & 201] ? 201 : [202] extends [S & 202] ? 202 : S;
type SuccessBody<R extends RouteLike> = [Lowest<FirstSuccess<R>>] extends [never]
  ? never
  : JsonOf<R['responses'][Lowest<FirstSuccess<R>> & keyof R['responses']]>;

type Entry<R> = R extends RouteLike ? { method: Uppercase<R['method']>; pattern: PathPattern<R['path']>; body: SuccessBody<R> } : never;
type Entries = Entry<Routes>;

type Candidates<M extends string, P extends string> = Entries extends infer E
  ? E extends Entries
    ? Uppercase<M> extends E['method']
      ? P extends E['pattern'] | `${E['pattern']}?${string}`
        ? E
        : never
      : never
    : never
  : never;

/** Drops a candidate when another candidate's pattern is a narrower case of it. */
type MostSpecific<C extends Entries, All extends Entries = C> = C extends Entries
  ? [Exclude<All, C> extends infer O ? (O extends Entries ? (O['pattern'] extends C['pattern'] ? O : never) : never) : never] extends [never]
    ? C
    : never
  : never;

/** The declared success body of `method path`, or `unknown` when no route of the table fits. */
export type BodyOf<M extends string, P extends string> = [Candidates<M, P>] extends [never] ? unknown : MostSpecific<Candidates<M, P>>['body'];

/** The body of a request: `T` when the test names it, else the one the route declares. */
export type Typed<T, M extends string, P extends string> = [T] extends [never] ? BodyOf<M, P> : T;
