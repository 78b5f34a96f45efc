import type { MiddlewareHandler } from 'hono';
import type { AppEnv, AuthContext, KeyRestriction } from './context';
import { AppError } from './errors';

/**
 * Scopes of restricted keys. A scope is `<family>:read`, `<family>:write` (which implies read) or
 * `*`; the scope family of a route is the prefix of its operationId (`memories.search` →
 * `memories`) unless the route declares another (`keyRoute({ scopeFamily: 'approvals' })`): deciding
 * held actions and changing the account's control settings are powers of their own, which the
 * `actions:write` an agent needs to submit actions must not carry. A GET or HEAD needs read, any
 * other method write. The families are those of the keyed routes themselves: `keyRoute` states
 * each route's scope in its document (`x-required-scope`), and the app `buildApp` builds lists the
 * families of its routes (`AppRegistry.scopeFamilies`, shared/platform/http/metrics.ts), so a new family
 * is a scope the moment it has a keyed route, and two apps in one process share nothing.
 */

export const ALL_SCOPES = '*';

/**
 * What no scope grants (minting and rotating keys, revoking an unrestricted key): the
 * `required_scope` of those refusals.
 */
export const UNRESTRICTED = 'unrestricted';

const familyOf = (operationId: string) => operationId.slice(0, operationId.indexOf('.'));

/** Deciding held actions (POST /v1/approvals/{approval_id}/decision, runtime interventions, the console inbox). */
export const APPROVALS_WRITE = 'approvals:write';

/** Changing the account's approval and evaluation settings (PUT /v1/control/settings). */
export const SETTINGS_WRITE = 'settings:write';

/** The scope a call of the operation with this method needs: its declared family, else its operationId's prefix. */
export function requiredScope(operationId: string, method: string, scopeFamily: string = familyOf(operationId)): string {
  const m = method.toUpperCase();
  return `${scopeFamily}:${m === 'GET' || m === 'HEAD' ? 'read' : 'write'}`;
}

/** Whether the scopes grant `required` (`<family>:write` grants `<family>:read`). */
export function scopesAllow(scopes: readonly string[], required: string): boolean {
  if (scopes.includes(ALL_SCOPES) || scopes.includes(required)) return true;
  return required.endsWith(':read') && scopes.includes(`${required.slice(0, -':read'.length)}:write`);
}

/** Whether the caller may call a route that needs `required`: an unrestricted key may call any. */
export const mayUse = (auth: AuthContext, required: string) => !auth.restriction || scopesAllow(auth.restriction.scopes, required);

/** 403 FORBIDDEN naming the scope the key lacks, in the message and in `required_scope`. */
export const scopeRefusal = (required: string, message = `This restricted key lacks the scope ${required}`) =>
  new AppError('FORBIDDEN', message, { required_scope: required });

/** The refusal of what only an unrestricted key may do. */
export const unrestrictedOnly = (what: string) => scopeRefusal(UNRESTRICTED, `A restricted key cannot ${what}; use an unrestricted key`);

/** Throws the scope refusal unless the caller may use `required`: for verbs reached by more than one route. */
export function requireScope(auth: AuthContext, required: string): void {
  if (!mayUse(auth, required)) throw scopeRefusal(required);
}

/** Throws unless the caller's key is unrestricted. */
export function requireUnrestricted(auth: AuthContext, what: string): void {
  if (auth.restriction) throw unrestrictedOnly(what);
}

/**
 * The `required_scope` of a confined key's refusal (a key with `agent_id` or `space_ids`) on a
 * route that does not honour its confinement: such a route would reach the tenant's other memories
 * (rollback, replay, the audit log, the event stream, webhooks), so only an unconfined key may call it.
 */
export const UNCONFINED = 'unconfined';

/** Whether the key is confined to an agent or to spaces. */
export const isConfined = (restriction: KeyRestriction | undefined) => !!restriction && (restriction.agentId !== null || restriction.spaceIds !== null);

/**
 * The agent a confined key acts as: its own `agent_id` when it has one (another is 403, none is
 * that agent), else what the caller asked for.
 */
export function actingAgent(auth: AuthContext, requested: string | undefined, what = 'acts'): string | undefined {
  const agentId = auth.restriction?.agentId;
  if (!agentId) return requested;
  if (requested !== undefined && requested !== agentId) throw new AppError('FORBIDDEN', `This restricted key ${what} only as agent_id ${agentId}`);
  return agentId;
}

/**
 * Whether a record of `agentId` (an action, a trace) lies outside a key confined to another agent:
 * by-id routes answer it 404, as an unknown id, so a confined key learns nothing of other agents' ids.
 */
export const outsideAgent = (auth: AuthContext, agentId: string | null) => {
  const own = auth.restriction?.agentId;
  return !!own && agentId !== own;
};

/** Scope names that are not scopes (unknown family or access), for a 400 that names them. */
export function unknownScopes(scopes: readonly string[], families: ReadonlySet<string>): string[] {
  return scopes.filter((s) => {
    if (s === ALL_SCOPES) return false;
    const [family, access, ...rest] = s.split(':');
    return rest.length > 0 || !families.has(family) || (access !== 'read' && access !== 'write');
  });
}

const confinedRefusal = (operationId: string) =>
  scopeRefusal(
    UNCONFINED,
    `A key confined to an agent or to spaces cannot call ${operationId} (it reaches the tenant's other memories): that needs an unconfined key, without agent_id and space_ids`,
  );

/**
 * The scope check of every keyed route, after authentication: a restricted key without the
 * route's scope is 403 FORBIDDEN with `required_scope`; a confined key on a route that does not
 * honour its confinement (`confinable`) is 403 with `required_scope: "unconfined"`.
 */
export const scopeGate = (operationId: string, required: string, confinable: boolean): MiddlewareHandler<AppEnv> => {
  return async (c, next) => {
    refuseOutOfScope(c.get('auth')?.restriction, operationId, required, confinable);
    await next();
  };
};

/**
 * The scope check itself, for a route (`scopeGate`) and for a verb called from another surface
 * (shared/platform/http/verb.ts): the same refusals whichever way in.
 */
export function refuseOutOfScope(restriction: KeyRestriction | undefined, operationId: string, required: string, confinable: boolean): void {
  if (restriction && !scopesAllow(restriction.scopes, required)) throw scopeRefusal(required);
  if (!confinable && isConfined(restriction)) throw confinedRefusal(operationId);
}
