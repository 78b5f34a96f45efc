import type { ContentfulStatusCode } from 'hono/utils/http-status';

interface CodeEntry {
  /** The status the code is answered with, unless `also` names the case. */
  status: ContentfulStatusCode;
  /**
   * Whether the same request may succeed if sent again unchanged (a transient failure or a limit
   * that resets): every error answer says it in `x-should-retry` (shouldRetryHeader), and the SDK
   * retries by it.
   */
  retryable: boolean;
  /** Other statuses the contract gives the code, each with the cases it is answered for. */
  also?: readonly { status: ContentfulStatusCode; when: string }[];
  /** When the service answers it. */
  meaning: string;
  /** What a client should do about it. */
  action: string;
}

/**
 * Every error code the service answers, with its HTTP status (and, where the contract gives a code
 * another status for some cases, those in `also`). A code that is not here does not compile. docs/errors.md and each operation's `x-error-codes` in /openapi.json are generated from
 * this table (test/openapi.test.ts fails when the document drifts from it).
 */
export const errorCodes = {
  VALIDATION_ERROR: {
    status: 400,
    retryable: false,
    meaning: 'A field is missing, unknown, of the wrong type or out of range; `details` names each field.',
    action: 'Fix the request as `details` says; do not retry it unchanged.',
    also: [
      {
        status: 422,
        when: 'An invalid webhook (POST /v1/webhooks, PUT /v1/webhooks/{webhook_id}: a URL that is not HTTPS or not public, no events); an `Idempotency-Key` reused with a different request.',
      },
    ],
  },
  INVALID_TOKEN: {
    status: 400,
    retryable: false,
    meaning: 'A verification, invitation or share token (or invitation id) is expired, used or unknown.',
    action: 'Ask for a new token or invitation.',
  },
  CONFIRMATION_MISMATCH: {
    status: 400,
    retryable: false,
    meaning: "DELETE /v1/account with a `confirm` that is not the account's e-mail address; nothing was changed.",
    action: "Send the account's e-mail address in `confirm`.",
  },
  TRACE_NOT_COMPLETED: {
    status: 400,
    retryable: false,
    meaning: 'Verify on a trace that is still active.',
    action: 'Complete the trace first (POST /v1/traces/{trace_id}/complete).',
  },
  'svc_ram.v1.control.invalid_policy': {
    status: 400,
    retryable: false,
    meaning: 'The policy body is invalid (unparsable JSON or YAML, missing fields, a bad pattern); `details` names each field.',
    action: 'Fix the policy as `details` says.',
  },
  'control.invalid_decision': {
    status: 400,
    retryable: false,
    meaning: 'An approval decision other than `approve` or `deny`; the body also carries `alias: "svc_ram.v1.control.invalid_decision"`.',
    action: 'Send `approve` or `deny`.',
  },
  'svc_ram.v1.control.invalid_violations_param': {
    status: 400,
    retryable: false,
    meaning: "A bad `since` or `until` on an agent's violations; `field` names it.",
    action: 'Send ISO 8601 times with `since` not after `until`.',
  },
  UNAUTHORIZED: {
    status: 401,
    retryable: false,
    meaning: 'The API key is missing, malformed, unknown, revoked or expired.',
    action: 'Send `Authorization: Bearer <key>` with a live key.',
  },
  FORBIDDEN: {
    status: 403,
    retryable: false,
    meaning:
      'No access to the space, team or share (not its owner or admin, or a read-only member); or a restricted key without the scope the call needs (`required_scope` names it).',
    action: 'Ask the owner for access, or use a key with `required_scope`; do not retry.',
  },
  OWNER_ONLY: { status: 403, retryable: false, meaning: "Only the space's owner may change or delete it.", action: "Use the owner's key." },
  FEATURE_NOT_AVAILABLE: {
    status: 403,
    retryable: false,
    meaning: 'The tier lacks the feature; `required_tier` and `current_tier` say which tier has it.',
    action: 'Upgrade to `required_tier`.',
  },
  TIER_REQUIRED: {
    status: 403,
    retryable: false,
    meaning: 'The tier refusal of the audit export; carries `required_tier` and `current_tier`.',
    action: 'Upgrade to `required_tier`.',
  },
  BLOCKED: {
    status: 403,
    retryable: false,
    meaning: 'A policy blocked the action; the body is the error fields plus the whole action with `status: "blocked"` and `policy_result`.',
    action: 'Do not perform the action; read `policy_result.violations`.',
  },
  'svc_ram.v1.tier.feature_required': {
    status: 403,
    retryable: false,
    meaning: 'The tier lacks a control-plane feature (`draft_policies`, `agent_scoped_policies`, the team or enterprise approval mode).',
    action: 'Upgrade to `required_tier`.',
  },
  'svc_ram.v1.tier.limit_exceeded': {
    status: 403,
    retryable: false,
    meaning: 'A count the tier caps is at its limit (custom policies, webhooks); `usage` has `current` and `limit`, `resets_at` null.',
    action: 'Delete or disable one, or upgrade (`upgrade_url`).',
  },
  'svc_ram.v1.control.cannot_delete_builtin': {
    status: 403,
    retryable: false,
    meaning: 'Built-in policies cannot be deleted.',
    action: 'Disable enforcement another way (shadow mode) instead.',
  },
  'svc_ram.v1.experimental.disabled': {
    status: 403,
    retryable: false,
    meaning: 'The experimental surface is off on this deployment.',
    action: 'Ask the operator to set `SVC_ENABLE_EXPERIMENTAL=1`.',
  },
  NOT_FOUND: {
    status: 404,
    retryable: false,
    meaning: "No such resource for this tenant, whatever the id's shape (another tenant's id answers the same), or no such route.",
    action: 'Check the id; do not retry.',
  },
  'svc_ram.v1.control.policy_not_found': {
    status: 404,
    retryable: false,
    meaning: 'No policy of that name at that scope.',
    action: 'Check the name and `agent_id`.',
  },
  'svc_ram.v1.control.approval_not_found': {
    status: 404,
    retryable: false,
    meaning: 'Unknown approval, never pending, or not yours to decide.',
    action: 'Check the approval id (GET /v1/approvals lists pending ones).',
  },
  'actions.not_found': { status: 404, retryable: false, meaning: 'No audit trail for that action id.', action: 'Check the action id.' },
  METHOD_NOT_ALLOWED: {
    status: 405,
    retryable: false,
    meaning: 'The path exists but not with this method; `Allow` lists the methods.',
    action: 'Use a method from `Allow`.',
  },
  CONFLICT: {
    status: 409,
    retryable: false,
    meaning: 'A duplicate with `on_conflict: reject`, a concurrent write, a decision too early, or the same `Idempotency-Key` still running.',
    action: 'Read the message; retry after `retry_after` when it is set.',
  },
  'svc_ram.v1.control.approval_already_decided': {
    status: 409,
    retryable: false,
    meaning: 'The approval was already decided; `approval_status` says how.',
    action: 'Do not decide again.',
  },
  PAYLOAD_TOO_LARGE: {
    status: 413,
    retryable: false,
    meaning: 'The body is larger than 1 MiB (100 MB for POST /v1/import).',
    action: 'Send less (split a batch or the file).',
  },
  BUNDLE_INTEGRITY_FAILED: {
    status: 422,
    retryable: false,
    meaning:
      'POST /v1/import?format=bundle with a file whose header, trailer line count or SHA-256 does not match (truncated, edited or not a bundle); nothing was written.',
    action: 'Export the bundle again (GET /v1/export/bundle) and import that file unchanged.',
  },
  UNSUPPORTED_MEDIA_TYPE: {
    status: 415,
    retryable: false,
    meaning: 'The body is not JSON.',
    action: 'Send `Content-Type: application/json` with a JSON body.',
  },
  INVALID_RANGE: { status: 422, retryable: false, meaning: 'A range starts after it ends; `details` names the fields.', action: 'Swap or fix the bounds.' },
  GATE_FAILED: {
    status: 422,
    retryable: false,
    meaning: "The eval's health score is below `min_score`; the whole eval is in `eval`.",
    action: 'Stop the deploy, or lower `min_score`.',
  },
  RATE_LIMITED: {
    status: 429,
    retryable: true,
    meaning:
      'A rate limit or a quota that resets is used up (monthly api_calls, memories, rollbacks; daily eval runs; eval baselines; open event streams); `usage` has `current`, `limit`, `plan`, `resets_at`.',
    action: 'Wait `Retry-After` seconds (or until `usage.resets_at`), or upgrade (`upgrade_url`).',
  },
  INTERNAL_ERROR: {
    status: 500,
    retryable: true,
    meaning: 'An unexpected error; the server log has it under the request id.',
    action: 'Retry later; report the `request_id` if it persists.',
  },
  REQUIRES_POSTGRES: {
    status: 501,
    retryable: false,
    meaning: 'The feature needs the relational backend (Postgres).',
    action: 'Use a deployment on Postgres.',
  },
  UPSTREAM_ERROR: { status: 502, retryable: true, meaning: 'A provider (the embedding provider) answered with an error.', action: 'Retry later.' },
  SERVICE_UNAVAILABLE: {
    status: 503,
    retryable: true,
    meaning: 'A dependency is unavailable (the database, an embedding provider, a signing key).',
    action: 'Retry after `Retry-After`.',
  },
} as const satisfies Record<string, CodeEntry>;

export type ErrorCode = keyof typeof errorCodes;

/** Other spellings of a code the contract names; the body carries the alias in `alias`. */
export const errorAliases = {
  'svc_ram.v1.control.invalid_decision': 'control.invalid_decision',
} as const satisfies Record<string, ErrorCode>;

export const statusOf = (code: ErrorCode): ContentfulStatusCode => errorCodes[code].status;

/** A status the table gives `code`: its own, or one of its `also`. */
export type StatusOf<C extends ErrorCode> =
  | (typeof errorCodes)[C]['status']
  | ((typeof errorCodes)[C] extends { also: readonly { status: infer S }[] } ? S : never);

/** Every status the table gives `code`, its own first. */
export const statusesOf = (code: ErrorCode): ContentfulStatusCode[] => {
  const entry: CodeEntry = errorCodes[code];
  return [entry.status, ...(entry.also ?? []).map((a) => a.status)];
};

/** The codes answered with `status`. */
export interface ErrorDetail {
  path: string;
  message: string;
}

/** The one error type of the service. `extra` is merged into the body (usage, required_tier, ...). */
export class AppError<C extends ErrorCode = ErrorCode> extends Error {
  readonly status: ContentfulStatusCode;
  /** Overrides the table's `retryable` for this one answer (a keyed request still in progress: CONFLICT, yet the retry gets the answer). */
  retryable?: boolean;
  /** `status`: one of the code's `also` statuses, for the cases the table names; else its own. */
  constructor(
    readonly code: C,
    message: string,
    readonly extra: Record<string, unknown> & { details?: ErrorDetail[] } = {},
    status?: StatusOf<C>,
  ) {
    super(message);
    this.name = 'AppError';
    this.status = (status as ContentfulStatusCode | undefined) ?? statusOf(code);
  }

  /** The same error answered with another of its code's statuses (the table's `also`). */
  withStatus(status: StatusOf<C>): AppError<C> {
    const copy = new AppError(this.code, this.message, this.extra, status);
    copy.stack = this.stack;
    return copy;
  }
}

/** The header every error answer carries: whether to send the same request again (docs/errors.md). */
export const SHOULD_RETRY_HEADER = 'x-should-retry';

/** `x-should-retry` of an error: the AppError's own say, else its code's `retryable`. */
export const shouldRetry = (err: AppError): boolean => err.retryable ?? (errorCodes[err.code] as CodeEntry).retryable;

/**
 * `x-should-retry` of an error answer whose code is unknown here (a body not built from an
 * AppError): its code's `retryable` when the body names a code of the table, else by status (429,
 * 502, 503 and 504 are transient; 500 as INTERNAL_ERROR).
 */
export function shouldRetryOf(status: number, code: unknown): boolean {
  if (typeof code === 'string' && code in errorCodes) return (errorCodes[code as ErrorCode] as CodeEntry).retryable;
  return status === 429 || status === 500 || status === 502 || status === 503 || status === 504;
}

export const notFound = (what: string) => new AppError('NOT_FOUND', `${what} not found`);

export const validationError = (path: string, message: string, status?: StatusOf<'VALIDATION_ERROR'>) =>
  new AppError('VALIDATION_ERROR', `${path}: ${message}`, { details: [{ path, message }] }, status);

export const conflict = (message: string, extra: Record<string, unknown> = {}) => new AppError('CONFLICT', message, extra);

export const forbidden = (message: string) => new AppError('FORBIDDEN', message);

/** 422 INVALID_RANGE: `start` lies after `end` (field names as the caller sent them). */
export const invalidRange = (start: string, end: string, relation = 'must not be after') =>
  new AppError('INVALID_RANGE', `${start} ${relation} ${end}`, { details: [{ path: start, message: `${relation} ${end}` }] });

/** What a limit refusal says about the limit: the counter, where it stands, and when it resets (null: never by itself). */
export interface Usage {
  metric: string;
  current: number;
  limit: number;
  plan: string;
  resets_at: string | null;
}

/**
 * The one refusal for "a limit is reached". A quota that resets (monthly calls, memories and
 * rollbacks, daily eval runs) is 429 RATE_LIMITED with `Retry-After` until it resets. A count the
 * tier caps (custom policies, webhooks), which only a delete or an upgrade frees, is 403
 * `svc_ram.v1.tier.limit_exceeded`, unless the contract names RATE_LIMITED for it (eval baselines).
 * Both carry `usage`, `current_tier` and `upgrade_url`.
 */
export function limitReached(
  message: string,
  usage: Usage,
  opts: { now: Date; upgradeUrl: string; code?: 'RATE_LIMITED' | 'svc_ram.v1.tier.limit_exceeded' },
): AppError {
  const resets = usage.resets_at === null ? null : new Date(usage.resets_at);
  const code = opts.code ?? (resets ? 'RATE_LIMITED' : 'svc_ram.v1.tier.limit_exceeded');
  return new AppError(code, message, {
    usage,
    current_tier: usage.plan,
    upgrade_url: opts.upgradeUrl,
    ...(resets ? { retry_after: Math.max(1, Math.ceil((resets.getTime() - opts.now.getTime()) / 1000)) } : {}),
  });
}

/** The fields every error body has. */
export interface ErrorFieldsOfBody<C extends ErrorCode = ErrorCode> {
  error: string;
  code: C;
  message: string;
  request_id: string;
  details?: ErrorDetail[];
}

export interface ErrorBody extends ErrorFieldsOfBody {
  status: number;
  [extra: string]: unknown;
}

/**
 * The one error body. With `resource`, the body is also that resource (a blocked action): its
 * fields are added and its own `status` (a string, as on the resource's other answers) replaces
 * the HTTP status, which the response carries anyway.
 */
export function errorBody<C extends ErrorCode, R extends { status: string }>(
  err: AppError<C>,
  requestId: string | undefined,
  resource: R,
): ErrorFieldsOfBody<C> & R;
export function errorBody(err: AppError, requestId: string | undefined): ErrorBody;
export function errorBody(err: AppError, requestId: string | undefined, resource?: { status: string }): Record<string, unknown> {
  return {
    ...err.extra,
    ...resource,
    error: err.message,
    code: err.code,
    ...(resource ? {} : { status: err.status }),
    message: err.message,
    request_id: requestId ?? '',
  };
}
