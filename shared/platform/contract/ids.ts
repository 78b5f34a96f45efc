import { randomBase62 } from './crypto';

/** Identifier prefixes (docs/architecture.md#identifiers). One closed map so prefixes never drift. */
const prefixes = {
  tenant: 'ten',
  key: 'key',
  token: 'tok',
  mail: 'mail',
  audit: 'aud',
  job: 'job',
  request: 'req',
  rollback: 'rb',
  trace: 'trc',
  step: 'stp',
  compensation: 'comp',
  team: 'team',
  invitation: 'inv',
  event: 'evt',
  webhook: 'wh',
  delivery: 'del',
  stream: 'stm',
  action: 'act',
  decision: 'dec',
  agent: 'agt',
  mission: 'msn',
  checkpoint: 'chk',
  capability: 'cap',
  intervention: 'itv',
  policy: 'pol',
  eval: 'eval',
  baseline: 'bl',
  erasure: 'ers',
  import: 'imp',
  grant: 'grt',
  client: 'oac',
} as const;

export type IdKind = keyof typeof prefixes;

const ID_LENGTH = 22;

export function newId(kind: IdKind): string {
  return `${prefixes[kind]}_${randomBase62(ID_LENGTH)}`;
}

/** What a well-formed id of `kind` looks like, for validation and documentation. */
export function idPattern(kind: IdKind): { pattern: RegExp; example: string } {
  return { pattern: new RegExp(`^${prefixes[kind]}_[0-9A-Za-z]{${ID_LENGTH}}$`), example: `${prefixes[kind]}_4f9Qw2b8Zr1LmT0aXcVe3K` };
}

export const URN_PREFIX = 'urn:uuid:';
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** Accepts `urn:uuid:<uuid>` or a bare uuid; returns the bare lowercase uuid, or null if malformed. */
export function parseUrn(value: string): string | null {
  const bare = value.startsWith(URN_PREFIX) ? value.slice(URN_PREFIX.length) : value;
  return UUID.test(bare) ? bare.toLowerCase() : null;
}

export const toUrn = (id: string) => `${URN_PREFIX}${id}`;

/** Secret API key: `sk_` + 43 base62 characters (about 256 bits). */
export function newApiKeySecret(): string {
  return `sk_${randomBase62(43)}`;
}

export const KEY_PREFIX_LENGTH = 12;
