import { type ErrorCode, errorAliases, errorCodes, statusesOf } from './errors';

/**
 * The error table published: in /openapi.json (each operation's `x-error-codes`, and each error
 * response names its codes) and in docs/errors.md. Both are generated from `errorCodes`, so neither
 * can drift from what the service answers.
 */

const ALL = Object.keys(errorCodes) as ErrorCode[];

/** The code an error status answers when its description names none. */
const defaults: Partial<Record<number, ErrorCode>> = {
  400: 'VALIDATION_ERROR',
  401: 'UNAUTHORIZED',
  403: 'FORBIDDEN',
  404: 'NOT_FOUND',
  405: 'METHOD_NOT_ALLOWED',
  409: 'CONFLICT',
  413: 'PAYLOAD_TOO_LARGE',
  415: 'UNSUPPORTED_MEDIA_TYPE',
  422: 'INVALID_RANGE',
  429: 'RATE_LIMITED',
  500: 'INTERNAL_ERROR',
  501: 'REQUIRES_POSTGRES',
  502: 'UPSTREAM_ERROR',
  503: 'SERVICE_UNAVAILABLE',
};

const escapeRegExp = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
const mentions = (text: string, code: string) => new RegExp(`(?<![\\w.])${escapeRegExp(code)}(?![\\w])`).test(text);

/**
 * The codes a response of `status` can carry: those its texts name (a code answered with `status`
 * only in some cases, its `also`, only when the response's own description, the first text, names
 * it), else the status's own; 400 is always also VALIDATION_ERROR.
 */
export function codesFor(status: number, texts: string[]): ErrorCode[] {
  const text = texts.join('\n');
  const named = ALL.filter((code) =>
    errorCodes[code].status === status ? mentions(text, code) : statusesOf(code).includes(status as never) && mentions(texts[0] ?? '', code),
  );
  const fallback = defaults[status];
  const codes = named.length ? named : fallback ? [fallback] : [];
  if (status === 400 && !codes.includes('VALIDATION_ERROR')) codes.unshift('VALIDATION_ERROR');
  return codes;
}

type Response = { description?: string; content?: Record<string, { schema?: unknown; example?: unknown }> };
type Operation = { description?: string; summary?: string; responses?: Record<string, Response>; 'x-error-codes'?: ErrorCode[] };

/** Adds `x-error-codes` to every operation and names the codes in each error response's description. */
export function withErrorCodes<T>(document: T): T {
  const paths = (document as { paths?: Record<string, Record<string, Operation>> }).paths ?? {};
  for (const item of Object.values(paths)) {
    for (const op of Object.values(item)) {
      if (!op || typeof op !== 'object' || !op.responses) continue;
      const all: ErrorCode[] = [];
      for (const [key, response] of Object.entries(op.responses)) {
        const status = Number(key);
        if (!(status >= 400)) continue;
        const codes = codesFor(status, [response.description ?? '', op.description ?? '']);
        for (const code of codes) if (!all.includes(code)) all.push(code);
        const listed = `Codes: ${codes.map((c) => `\`${c}\``).join(', ')}.`;
        if (codes.length && !response.description?.includes(listed)) response.description = `${response.description ?? 'Error'}. ${listed}`;
      }
      op['x-error-codes'] = all;
    }
  }
  return document;
}

const cell = (s: string) => s.replace(/\|/g, '\\|').replace(/\n/g, ' ');

/** docs/errors.md, generated: test/openapi.test.ts fails when the committed file differs. */
export function errorsMarkdown(): string {
  const rows = ALL.map((code) => {
    const e: { status: number; retryable: boolean; meaning: string; action: string; also?: readonly { status: number; when: string }[] } = errorCodes[code];
    const also = (e.also ?? []).map((a) => ` ${a.status}: ${a.when}`).join('');
    return `| \`${code}\` | ${[e.status, ...(e.also ?? []).map((a) => a.status)].join(', ')} | ${e.retryable ? 'yes' : 'no'} | ${cell(e.meaning + also)} | ${cell(e.action)} |`;
  });
  const aliases = Object.entries(errorAliases).map(([alias, code]) => `- \`${alias}\` is also written for \`${code}\` (the body carries it in \`alias\`).`);
  return [
    '# Error codes',
    '',
    '<!-- Generated from shared/platform/contract/errors.ts by `npm run openapi:snapshot`; test/openapi.test.ts fails when it differs. -->',
    '',
    'Every error answers one body: `{error, code, status, message, request_id, details?}`, with `X-Request-Id`.',
    'A limit refusal adds `usage: {metric, current, limit, plan, resets_at}`, `current_tier` and `upgrade_url`;',
    'a 429 also sends `Retry-After`. A tier refusal adds `required_tier` and `current_tier`. A restricted key',
    'refused for a missing scope adds `required_scope`. A blocked action',
    '(`BLOCKED`) is the error fields plus the whole action, whose `status` is `"blocked"`. Each operation of',
    '`/openapi.json` lists the codes it can answer in `x-error-codes`.',
    '',
    'Every error answer also carries `x-should-retry: true|false`: whether the same request, sent again',
    'unchanged, may succeed (the *retry* column; a keyed request still in progress, 409 with',
    '`Idempotency-Status: in-progress`, says `true`). The SDK retries by it, with backoff and jitter, honouring',
    '`Retry-After`; a POST keeps its `Idempotency-Key`, so a retried write happens once.',
    '',
    '| code | status | retry | meaning | what the client should do |',
    '|---|---|---|---|---|',
    ...rows,
    '',
    '## Aliases',
    '',
    ...aliases,
    '',
  ].join('\n');
}
