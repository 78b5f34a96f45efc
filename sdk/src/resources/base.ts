import type { HttpMethod, RequestSpec, Transport } from '../transport.js';
import type { BodyOf, CallOptions, OperationId, QueryOf, ResultOf } from '../types.js';

/** A path segment, escaped. */
export const seg = (value: string | number) => encodeURIComponent(String(value));

/** A namespace of the client: its calls are typed by operationId and go through the one Transport. */
export abstract class Resource {
  constructor(protected readonly transport: Transport) {}

  /** One call of operation `K`: query, body and result typed from the OpenAPI document. */
  protected call<K extends OperationId>(
    method: HttpMethod,
    path: string,
    spec: { query?: QueryOf<K>; body?: BodyOf<K> } & CallOptions & Pick<RequestSpec, 'text' | 'file'> = {},
  ): Promise<ResultOf<K>> {
    return this.transport.request<ResultOf<K>>(method, path, spec);
  }
}

export type { BodyOf, CallOptions, QueryOf, ResultOf };
