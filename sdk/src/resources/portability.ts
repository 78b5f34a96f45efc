import { type CallOptions, type QueryOf, Resource } from './base.js';

/** The whole-account bundle and imports (portability.*, docs/portability.md). */
export class Portability extends Resource {
  /** GET /v1/export/bundle (portability.exportBundle) as a byte stream, read as it arrives. */
  async exportBundle(opts?: CallOptions): Promise<ReadableStream<Uint8Array>> {
    const res = await this.transport.request<Response>('GET', '/v1/export/bundle', { ...opts, raw: true });
    return res.body as ReadableStream<Uint8Array>;
  }

  /**
   * POST /v1/import (portability.import): a bundle, a JSONL file or a mem0 export, sent as it is. A
   * retry is safe: what an earlier attempt stored is skipped by its source id.
   */
  import(file: string | Blob | Uint8Array<ArrayBuffer>, query: QueryOf<'portability.import'>, opts?: CallOptions) {
    return this.call<'portability.import'>('POST', '/v1/import', { ...opts, query, file });
  }
}
