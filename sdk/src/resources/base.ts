import type { APIPromise } from '../api-promise.js';
import { operationTable } from '../generated/operations.js';
import { type PageQuery, Paginated } from '../pages.js';
import type { RequestSpec, Transport } from '../transport.js';
import type { BodyOf, CallOptions, OperationId, QueryOf, ResultOf } from '../types.js';

/** A path segment, escaped. */
export const seg = (value: string | number) => encodeURIComponent(String(value));

/** The path of operation `id` with its `{parameters}` filled, in template order, from `params`. */
export function pathOf(id: OperationId, params: readonly (string | number)[] = []): string {
  const entry = operationTable[id];
  const names: readonly string[] = entry.pathParams;
  if (names.length !== params.length) throw new TypeError(`engram: ${id} takes ${names.length} path parameter(s) (${names.join(', ')}), got ${params.length}`);
  let i = 0;
  return entry.path.replace(/\{[^}]+\}/g, () => seg(params[i++]!));
}

type Table = typeof operationTable;
/** The operations the generated table knows as paged lists. */
type PagedId = { [K in OperationId]: Table[K] extends { pageKey: string } ? K : never }[OperationId];
type PageKeyOf<K extends PagedId> = Table[K] extends { pageKey: infer P extends string } ? P : never;
type ItemOf<T, K extends string> = T extends { [P in K]?: readonly (infer I)[] | null } ? I : never;

/** What a call of operation `K` sends besides its path parameters. */
export type OpSpec<K extends OperationId> = { query?: QueryOf<K>; body?: BodyOf<K> } & CallOptions & Pick<RequestSpec, 'text' | 'file' | 'raw'>;

/**
 * A namespace of the client: each call names its operationId, and its HTTP method and path come
 * from the generated operation table (sdk/src/generated/operations.ts), so a call cannot drift
 * from the contract; query, body and result are typed from the OpenAPI document.
 */
export abstract class Resource {
  constructor(protected readonly transport: Transport) {}

  /** One call of operation `K` with its path parameters in template order. */
  protected op<K extends OperationId>(id: K, params: readonly (string | number)[] = [], spec: OpSpec<K> = {}): APIPromise<ResultOf<K>> {
    return this.transport.request<ResultOf<K>>(operationTable[id].method, pathOf(id, params), spec);
  }

  /**
   * A paged list operation `K`: a Paginated over the array its generated `pageKey` names, each
   * page one call with the next `offset`.
   */
  protected paged<K extends PagedId>(
    id: K,
    params: readonly (string | number)[],
    query: QueryOf<K> | undefined,
    opts?: CallOptions,
  ): Paginated<ResultOf<K> & object, ItemOf<ResultOf<K>, PageKeyOf<K>>> {
    const key: string = operationTable[id].pageKey;
    return new Paginated<ResultOf<K> & object, ItemOf<ResultOf<K>, PageKeyOf<K>>>(
      (offset) =>
        this.op(id, params, { ...opts, query: { ...query, ...(offset === undefined ? {} : { offset }) } as QueryOf<K> }) as APIPromise<ResultOf<K> & object>,
      (page) => ((page as Record<string, unknown>)[key] ?? []) as ItemOf<ResultOf<K>, PageKeyOf<K>>[],
      (query as PageQuery | undefined)?.offset ?? undefined,
    );
  }

  /** The same call answered as the caller asks (`T`: the export's text, the open stream's Response). */
  protected opAs<T, K extends OperationId = OperationId>(id: K, params: readonly (string | number)[] = [], spec: OpSpec<K> = {}): APIPromise<T> {
    return this.transport.request<T>(operationTable[id].method, pathOf(id, params), spec);
  }
}

export type { BodyOf, CallOptions, QueryOf, ResultOf };
