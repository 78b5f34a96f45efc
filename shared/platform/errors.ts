import type { ContentfulStatusCode } from 'hono/utils/http-status';

/** Codes with a fixed HTTP status; control-plane codes (svc_ram.v1...) pass their status explicitly. */
export const errorStatus = {
  VALIDATION_ERROR: 400,
  INVALID_TOKEN: 400,
  TRACE_NOT_COMPLETED: 400,
  UNAUTHORIZED: 401,
  FORBIDDEN: 403,
  OWNER_ONLY: 403,
  FEATURE_NOT_AVAILABLE: 403,
  TIER_REQUIRED: 403,
  NOT_FOUND: 404,
  METHOD_NOT_ALLOWED: 405,
  CONFLICT: 409,
  PAYLOAD_TOO_LARGE: 413,
  UNSUPPORTED_MEDIA_TYPE: 415,
  INVALID_RANGE: 422,
  RATE_LIMITED: 429,
  INTERNAL_ERROR: 500,
  REQUIRES_POSTGRES: 501,
  UPSTREAM_ERROR: 502,
  SERVICE_UNAVAILABLE: 503,
} as const satisfies Record<string, ContentfulStatusCode>;

export type ErrorCode = keyof typeof errorStatus;

export interface ErrorDetail {
  path: string;
  message: string;
}

/** The one error type of the service. `extra` is merged into the body (usage, required_tier, ...). */
export class AppError extends Error {
  readonly status: ContentfulStatusCode;
  constructor(
    readonly code: ErrorCode | (string & {}),
    message: string,
    readonly extra: Record<string, unknown> & { details?: ErrorDetail[] } = {},
    status?: ContentfulStatusCode,
  ) {
    super(message);
    this.name = 'AppError';
    this.status = status ?? errorStatus[code as ErrorCode] ?? 500;
  }
}

export const notFound = (what: string) => new AppError('NOT_FOUND', `${what} not found`);

export const validationError = (path: string, message: string) =>
  new AppError('VALIDATION_ERROR', `${path}: ${message}`, { details: [{ path, message }] });

export const conflict = (message: string, extra: Record<string, unknown> = {}) => new AppError('CONFLICT', message, extra);

export const forbidden = (message: string) => new AppError('FORBIDDEN', message);

/** 422 INVALID_RANGE: `start` lies after `end` (field names as the caller sent them). */
export const invalidRange = (start: string, end: string, relation = 'must not be after') =>
  new AppError('INVALID_RANGE', `${start} ${relation} ${end}`, { details: [{ path: start, message: `${relation} ${end}` }] });

export interface ErrorBody {
  error: string;
  code: string;
  status: number;
  message: string;
  request_id: string;
  details?: ErrorDetail[];
  [extra: string]: unknown;
}

export function errorBody(err: AppError, requestId: string): ErrorBody {
  return {
    ...err.extra,
    error: err.message,
    code: err.code,
    status: err.status,
    message: err.message,
    request_id: requestId,
  };
}
