export { Engram, type EngramOptions } from './client.js';
export { EngramError } from './errors.js';
export type { EngramEvent, StreamOptions } from './events.js';
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
