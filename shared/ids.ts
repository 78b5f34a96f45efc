import { randomBase62 } from './crypto';

/** Identifier prefixes (spec conventions plus DESIGN §4). One closed map so prefixes never drift. */
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
} as const;

export type IdKind = keyof typeof prefixes;

export function newId(kind: IdKind): string {
  return `${prefixes[kind]}_${randomBase62(22)}`;
}

/** Secret API key: `sk_` + 43 base62 characters (about 256 bits). */
export function newApiKeySecret(): string {
  return `sk_${randomBase62(43)}`;
}

export const KEY_PREFIX_LENGTH = 12;
