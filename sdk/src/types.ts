import type { operations } from './generated/openapi.js';

/** Every operation of the API by its operationId (test/openapi.snapshot.json). */
export type OperationId = keyof operations;
export type { components, operations, paths } from './generated/openapi.js';

type JsonOf<R> = R extends { content: { 'application/json': infer B } } ? B : R extends { content?: never } ? undefined : unknown;
type Responses<K extends OperationId> = operations[K]['responses'];
type Success<K extends OperationId> = keyof Responses<K> & (200 | 201 | 202 | 204);

/** The query parameters of an operation (an empty object when it has none). */
export type QueryOf<K extends OperationId> = operations[K] extends { parameters: { query?: infer Q } }
  ? [Q] extends [never | undefined]
    ? Record<string, never>
    : NonNullable<Q>
  : never;

/** The JSON request body of an operation. */
export type BodyOf<K extends OperationId> = operations[K] extends { requestBody?: infer B } ? JsonOf<NonNullable<B>> : never;

/** What a successful call answers: the JSON body of its 2xx responses (undefined for 204). */
export type ResultOf<K extends OperationId> = { [S in Success<K>]: JsonOf<Responses<K>[S]> }[Success<K>];

/** Options every call takes. */
export interface CallOptions {
  /** Cancels the call (and its retries). */
  signal?: AbortSignal;
  /** Per-attempt timeout for this call; defaults to the client's `timeoutMs`. */
  timeoutMs?: number;
  /** The `Idempotency-Key` of a POST; by default a random UUID per call, the same on each retry. */
  idempotencyKey?: string;
  /** Extra request headers. */
  headers?: Record<string, string>;
}
