export { APIPromise, type WithResponse } from './api-promise.js';
export { Engram, type EngramOptions } from './client.js';
export {
  APIConnectionError,
  APIConnectionTimeoutError,
  type APIErrorCode,
  APIUserAbortError,
  AuthenticationError,
  BadRequestError,
  ConflictError,
  EngramError,
  type ErrorCode,
  InternalServerError,
  NotFoundError,
  PermissionDeniedError,
  RateLimitError,
  UnprocessableEntityError,
} from './errors.js';
export type { EngramEvent, StreamOptions } from './events.js';
export { VERSION } from './generated/version.js';
export { type BlockMemory, MEMORY_BLOCK_CLOSE, MEMORY_BLOCK_OPEN, memoryBlock } from './memory-block.js';
export { Paginated } from './pages.js';
export type { FetchLike, HttpMethod } from './transport.js';
export type { BodyOf, CallOptions, components, OperationId, operations, paths, QueryOf, ResultOf } from './types.js';
export {
  type CertificateCheck,
  type ReceiptCheck,
  type TraceCertificate,
  verifyErasureReceipt,
  verifyTraceCertificate,
  verifyWebhook,
  type WebhookHeaders,
} from './verify.js';
export { unwrapWebhook, type WebhookEvent, type WebhookEventType, WebhookVerificationError } from './webhooks.js';
