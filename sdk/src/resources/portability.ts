import { paginate } from '../pages.js';
import { type CallOptions, type QueryOf, Resource, seg } from './base.js';

/** The whole-account bundle and imports (portability.*, docs/portability.md). */
export class Portability extends Resource {
  /** GET /v1/export/bundle (portability.exportBundle) as a byte stream, read as it arrives. */
  async exportBundle(opts?: CallOptions): Promise<ReadableStream<Uint8Array>> {
    const res = await this.transport.request<Response>('GET', '/v1/export/bundle', { ...opts, raw: true });
    return res.body as ReadableStream<Uint8Array>;
  }

  /**
   * POST /v1/import (portability.import): a bundle, a JSONL file or a mem0 export, sent as it is. A
   * retry is safe: what an earlier attempt stored is skipped by its source id. A file of more than
   * 10,000 lines answers at `status: "running"`: follow it with `getImport(id)`.
   */
  import(file: string | Blob | Uint8Array<ArrayBuffer>, query: QueryOf<'portability.import'>, opts?: CallOptions) {
    return this.call<'portability.import'>('POST', '/v1/import', { ...opts, query, file });
  }

  /** GET /v1/imports/{import_id} (portability.getImport): the import's progress and counts. */
  getImport(importId: string, opts?: CallOptions) {
    return this.call<'portability.getImport'>('GET', `/v1/imports/${seg(importId)}`, opts);
  }

  /** GET /v1/imports (portability.listImports), newest first; iterate with `for await` for every page. */
  listImports(query?: QueryOf<'portability.listImports'>, opts?: CallOptions) {
    return paginate('imports', query, (q) => this.call<'portability.listImports'>('GET', '/v1/imports', { ...opts, query: q }));
  }
}
