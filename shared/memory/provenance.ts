import type { TenantCtx } from '../platform/contract/context';
import { forbidden } from '../platform/contract/errors';

/**
 * Provenance and trust of a memory (docs/memories.md#provenance-and-trust). The server sets them on
 * every write from the key and the way in; a caller may only choose among what its key allows and
 * add a `ref` of its own.
 */
export const SOURCE_KINDS = ['user', 'agent', 'tool', 'import', 'share', 'system'] as const;
export type SourceKind = (typeof SOURCE_KINDS)[number];
export const SOURCE_VIAS = ['api', 'mcp', 'console', 'import', 'job'] as const;
export type SourceVia = (typeof SOURCE_VIAS)[number];
/** Highest first: `verified` (the account's own people), `agent` (agent keys), `external`. */
export const TRUST_LEVELS = ['verified', 'agent', 'external'] as const;
export type Trust = (typeof TRUST_LEVELS)[number];
/** What a store body may claim in `source.kind`. */
export const CLAIMABLE_KINDS = ['user', 'agent', 'tool'] as const;
export const MAX_SOURCE_REF = 512;

export interface Source {
  kind: SourceKind;
  via: SourceVia;
  key_id: string | null;
  agent_id: string | null;
  ref: string | null;
}

const TRUST_OF: Record<SourceKind, Trust> = {
  user: 'verified',
  system: 'verified',
  agent: 'agent',
  tool: 'external',
  import: 'external',
  share: 'external',
};

export const trustOf = (kind: SourceKind): Trust => TRUST_OF[kind];

const rank = (t: Trust) => TRUST_LEVELS.indexOf(t);

/** The lowest of some trust levels: a memory derived from others is trusted no more than the least of them. */
export const minTrust = (...levels: Trust[]): Trust => levels.reduce((low, t) => (rank(t) > rank(low) ? t : low), 'verified');

/** Whether `t` is at least `floor`. */
export const atLeast = (t: Trust, floor: Trust) => rank(t) <= rank(floor);

/** The trust levels at least `floor`, for an `IN (...)` filter. */
export const levelsAtLeast = (floor: Trust): Trust[] => TRUST_LEVELS.filter((t) => atLeast(t, floor));

/**
 * The source of a write by this key: an unrestricted key (the account's own people) writes `user`
 * and may say `tool` or `agent`; a restricted key is an agent's and writes `agent`, or `tool` when
 * it says so, never `user`. The way in is the request's (MCP, the console) or `fallbackVia`.
 */
export function sourceFor(
  ctx: TenantCtx,
  claim: { kind?: (typeof CLAIMABLE_KINDS)[number]; ref?: string } | undefined,
  agentId: string | null,
  fallbackVia: SourceVia = 'api',
): Source {
  const restricted = !!ctx.auth.restriction;
  const claimed = claim?.kind;
  if (restricted && claimed === 'user') throw forbidden('A restricted key writes as an agent: source.kind may be agent or tool, not user');
  const kind: SourceKind = claimed ?? (restricted ? 'agent' : 'user');
  return { kind, via: (ctx.via as SourceVia | undefined) ?? fallbackVia, key_id: ctx.auth.keyId, agent_id: agentId, ref: claim?.ref ?? null };
}

/**
 * The source of a memory written into another account's store (a write share, a team space): the
 * owner did not write it, so it is `share` and trusted as external, whatever the writer's key.
 */
export const sharedInto = (s: Source): Source => ({ ...s, kind: 'share' });

/** The source of an imported memory: what the file said it came from is only its `ref`. */
export const importSource = (ctx: TenantCtx, agentId: string | null, ref: string | null): Source => ({
  kind: 'import',
  via: 'import',
  key_id: ctx.auth.keyId,
  agent_id: agentId,
  ref,
});

/** The parts of a memory row provenance needs. */
interface Provenanced {
  tenant_id: string;
  source_kind: SourceKind;
  source_key_id: string | null;
  trust: Trust;
}

/**
 * A memory as `readerTenantId` sees it: one of another account (read through a share or a space it
 * opened to the reader) is `share` and `external` to the reader, whatever it was to its owner, and
 * names no key of that account. Every read answer (list, get, search, context, MCP) goes through it.
 */
export function seenBy<R extends Provenanced>(readerTenantId: string, row: R): R {
  if (row.tenant_id === readerTenantId) return row;
  return { ...row, source_kind: 'share', source_key_id: null, trust: 'external' };
}
