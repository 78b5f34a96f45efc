import type { components } from './generated/openapi.js';

/** Every code the API answers (the error table, docs/errors.md), as the OpenAPI document lists them. */
export type APIErrorCode = components['schemas']['Error']['code'];
/** What a call that never got an answer says instead. */
export type ConnectionErrorCode = 'NETWORK_ERROR' | 'TIMEOUT' | 'ABORTED';
/** The code of an EngramError: the API's, the client's, or `HTTP_<status>` for an answer that was not the error body (a proxy's page). */
export type ErrorCode = APIErrorCode | ConnectionErrorCode | `HTTP_${number}`;

interface ErrorInit {
  status: number;
  code: ErrorCode;
  message: string;
  requestId?: string | null;
  details?: unknown;
  body?: Record<string, unknown> | null;
  retryAfter?: number | null;
  headers?: Headers | null;
  cause?: unknown;
}

/**
 * Every failed call throws an EngramError, of the subclass its status names (`NotFoundError`,
 * `RateLimitError`, ...; the same classes as openai-node). An answer of the API carries its one
 * error body (docs/errors.md: `{error, code, status, message, request_id, details?}`); a call that
 * never got an answer, after its retries, is an `APIConnectionError` with `status: 0` and code
 * `NETWORK_ERROR` (or `APIConnectionTimeoutError` with `TIMEOUT`; `APIUserAbortError` with `ABORTED`).
 */
export class EngramError extends Error {
  override name = 'EngramError';
  /** The HTTP status, or 0 when no answer arrived. */
  readonly status: number;
  /** The API's error code (`NOT_FOUND`, `VALIDATION_ERROR`, ...), or `NETWORK_ERROR`, `TIMEOUT`, `ABORTED`. */
  readonly code: ErrorCode;
  /** `request_id` of the body or the `X-Request-Id` header: quote it when asking the operator. */
  readonly requestId: string | null;
  /** Per-field details of a validation error, when the API sent them. */
  readonly details: unknown;
  /** The whole error body (a `BLOCKED` action carries the action; a limit refusal its `usage`). */
  readonly body: Record<string, unknown> | null;
  /** Seconds the API asked to wait (`Retry-After`), when it said. */
  readonly retryAfter: number | null;
  /** The answer's headers (`x-should-retry`, `RateLimit`, ...), null when no answer arrived. */
  readonly headers: Headers | null;

  constructor(init: ErrorInit) {
    super(init.message, init.cause === undefined ? undefined : { cause: init.cause });
    this.status = init.status;
    this.code = init.code;
    this.requestId = init.requestId ?? null;
    this.details = init.details;
    this.body = init.body ?? null;
    this.retryAfter = init.retryAfter ?? null;
    this.headers = init.headers ?? null;
  }
}

/** 400: the request is malformed (VALIDATION_ERROR, INVALID_TOKEN, ...). */
export class BadRequestError extends EngramError {
  override name = 'BadRequestError';
}
/** 401: the API key is missing, unknown, revoked or expired. */
export class AuthenticationError extends EngramError {
  override name = 'AuthenticationError';
}
/** 403: no access, a missing scope or tier, a blocked action. */
export class PermissionDeniedError extends EngramError {
  override name = 'PermissionDeniedError';
}
/** 404: no such resource for this tenant (or no such route). */
export class NotFoundError extends EngramError {
  override name = 'NotFoundError';
}
/** 409: a duplicate, a concurrent write, a decision already made. */
export class ConflictError extends EngramError {
  override name = 'ConflictError';
}
/** 422: well-formed but refused (INVALID_RANGE, GATE_FAILED, a reused Idempotency-Key, ...). */
export class UnprocessableEntityError extends EngramError {
  override name = 'UnprocessableEntityError';
}
/** 429: a rate limit or a quota that resets; `retryAfter` says when. */
export class RateLimitError extends EngramError {
  override name = 'RateLimitError';
}
/** 5xx: the server or a dependency failed. */
export class InternalServerError extends EngramError {
  override name = 'InternalServerError';
}
/** No answer arrived (after the retries): status 0, code NETWORK_ERROR. */
export class APIConnectionError extends EngramError {
  override name = 'APIConnectionError';
}
/** No answer within `timeoutMs` (after the retries): code TIMEOUT. */
export class APIConnectionTimeoutError extends APIConnectionError {
  override name = 'APIConnectionTimeoutError';
}
/** The caller's `signal` aborted the call: code ABORTED. */
export class APIUserAbortError extends EngramError {
  override name = 'APIUserAbortError';
}

const BY_STATUS: Record<number, new (init: ErrorInit) => EngramError> = {
  400: BadRequestError,
  401: AuthenticationError,
  403: PermissionDeniedError,
  404: NotFoundError,
  409: ConflictError,
  422: UnprocessableEntityError,
  429: RateLimitError,
};

/** The error of an answer with `status`: its class by status (>= 500: InternalServerError; others: EngramError). */
export function errorOfStatus(init: ErrorInit): EngramError {
  const Class = BY_STATUS[init.status] ?? (init.status >= 500 ? InternalServerError : EngramError);
  return new Class(init);
}

/** Builds the error of a non-2xx answer from its body (JSON or not). */
export async function errorFromResponse(res: Response): Promise<EngramError> {
  const text = await res.text().catch(() => '');
  let body: Record<string, unknown> | null = null;
  try {
    const parsed = JSON.parse(text);
    if (parsed && typeof parsed === 'object' && !Array.isArray(parsed)) body = parsed as Record<string, unknown>;
  } catch {}
  const str = (v: unknown) => (typeof v === 'string' && v ? v : null);
  return errorOfStatus({
    status: res.status,
    code: (str(body?.code) ?? str(body?.error) ?? `HTTP_${res.status}`) as ErrorCode,
    message: str(body?.message) ?? (text.slice(0, 200) || `HTTP ${res.status}`),
    requestId: str(body?.request_id) ?? res.headers.get('x-request-id'),
    details: body?.details,
    body,
    retryAfter: retryAfterSeconds(res.headers.get('retry-after')),
    headers: res.headers,
  });
}

/** `Retry-After` as seconds from now: delta-seconds or an HTTP date; null when absent or unreadable. */
export function retryAfterSeconds(value: string | null, now = Date.now()): number | null {
  if (!value) return null;
  const trimmed = value.trim();
  if (/^\d+(\.\d+)?$/.test(trimmed)) return Number(trimmed);
  const at = Date.parse(trimmed);
  return Number.isNaN(at) ? null : Math.max(0, (at - now) / 1000);
}
