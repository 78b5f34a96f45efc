/**
 * Every failed call throws an EngramError. An answer of the API carries its one error body
 * (docs/errors.md: `{error, code, status, message, request_id, details?}`); a call that never got
 * an answer, after its retries, is `status: 0` with code `NETWORK_ERROR` (or `TIMEOUT`, `ABORTED`).
 */
export class EngramError extends Error {
  override readonly name = 'EngramError';
  /** The HTTP status, or 0 when no answer arrived. */
  readonly status: number;
  /** The API's error code (`NOT_FOUND`, `VALIDATION_ERROR`, ...), or `NETWORK_ERROR`, `TIMEOUT`, `ABORTED`. */
  readonly code: string;
  /** `request_id` of the body or the `X-Request-Id` header: quote it when asking the operator. */
  readonly requestId: string | null;
  /** Per-field details of a validation error, when the API sent them. */
  readonly details: unknown;
  /** The whole error body (a `BLOCKED` action carries the action; a limit refusal its `usage`). */
  readonly body: Record<string, unknown> | null;
  /** Seconds the API asked to wait (`Retry-After`), when it said. */
  readonly retryAfter: number | null;

  constructor(init: {
    status: number;
    code: string;
    message: string;
    requestId?: string | null;
    details?: unknown;
    body?: Record<string, unknown> | null;
    retryAfter?: number | null;
    cause?: unknown;
  }) {
    super(init.message, init.cause === undefined ? undefined : { cause: init.cause });
    this.status = init.status;
    this.code = init.code;
    this.requestId = init.requestId ?? null;
    this.details = init.details;
    this.body = init.body ?? null;
    this.retryAfter = init.retryAfter ?? null;
  }
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
  return new EngramError({
    status: res.status,
    code: str(body?.code) ?? str(body?.error) ?? `HTTP_${res.status}`,
    message: str(body?.message) ?? (text.slice(0, 200) || `HTTP ${res.status}`),
    requestId: str(body?.request_id) ?? res.headers.get('x-request-id'),
    details: body?.details,
    body,
    retryAfter: retryAfterSeconds(res.headers.get('retry-after')),
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
