import { randomBytes } from 'node:crypto';
import { type Config, isLoopbackHost } from '../platform/contract/config';
import { type Feature, hasFeature, tiers } from '../platform/contract/tiers';

/**
 * The first run: plain `npm start` has no ADMIN_TOKEN, so nobody could read the verification mail
 * or create a tenant. When, and only when, the server keeps its data in the embedded store and
 * listens on a loopback address, it makes a one-time operator token for this process and prints
 * how to get a key with it. With DATABASE_URL, a non-loopback HOST or an ADMIN_TOKEN, nothing is made.
 */
export function developmentOperatorToken(config: Config): string | null {
  if (config.ADMIN_TOKEN || config.DATABASE_URL || !isLoopbackHost(config.HOST)) return null;
  return `dev_${randomBytes(24).toString('base64url')}`;
}

export function baseUrl(host: string, port: number): string {
  const h = host.includes(':') && !host.startsWith('[') ? `[${host}]` : host;
  return `http://${h}:${port}`;
}

/** Features a newcomer reaches for first, by the words the docs use; the banner names those free lacks. */
const NOTABLE: [Feature, string][] = [
  ['audit_verify', 'audit verify'],
  ['replay', 'replay'],
  ['traces', 'traces'],
  ['spaces', 'spaces'],
  ['sharing', 'sharing'],
  ['webhooks', 'webhooks'],
  ['teams', 'teams'],
];

/**
 * What a newcomer reads on the console: one command that returns an API key. It makes a Pro key,
 * because a free one (what a signup gets) answers 403 to much of what the docs show.
 */
export function firstRunBanner(url: string, token: string): string {
  const email = `dev-${randomBytes(3).toString('hex')}@example.com`;
  const free = tiers.free.limits;
  const lacks = NOTABLE.filter(([f]) => !hasFeature('free', f)).map(([, words]) => words);
  return [
    '',
    `engram is running at ${url} (embedded storage). Get an API key on the Pro tier:`,
    '',
    `  curl -s -XPOST ${url}/admin/v1/tenants -H 'authorization: Bearer ${token}' -H 'content-type: application/json' -d '{"email":"${email}","tier":"pro"}'`,
    '',
    `Then call the API with it: curl -s ${url}/v1/usage -H 'authorization: Bearer sk_...'   Docs: ${url}/docs`,
    `A free key ("tier":"free", what POST /v1/keys signups get) answers 403 to ${lacks.join(', ')} and more,`,
    `with ${free.rollbacks} rollbacks a month${free.custom_policies === 0 ? ' and no custom policies' : ''}; GET /v1/usage lists its features.`,
    'The operator token above was made for this process only (ADMIN_TOKEN is unset, storage is embedded and',
    'the address is loopback); it changes at every start. Set ADMIN_TOKEN to choose your own.',
    '',
  ].join('\n');
}

/** Printed instead when the operator API stays off, so the 404s under /admin say why. */
export const OPERATOR_API_OFF_HINT = 'Operator API disabled (ADMIN_TOKEN unset): set ADMIN_TOKEN to create tenants and read stored mail at /admin/v1/*.';
