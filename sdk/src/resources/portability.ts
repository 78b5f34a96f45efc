import { type BodyOf, type CallOptions, type QueryOf, Resource } from './base.js';

/** The whole-account bundle and imports (portability.*, docs/portability.md). */
export class Portability extends Resource {
  /** GET /v1/export/bundle (portability.exportBundle) as a byte stream, read as it arrives. */
  async exportBundle(opts?: CallOptions): Promise<ReadableStream<Uint8Array>> {
    const res = await this.opAs<Response, 'portability.exportBundle'>('portability.exportBundle', [], { ...opts, raw: true });
    return res.body as ReadableStream<Uint8Array>;
  }

  /**
   * POST /v1/import (portability.import): a bundle, a JSONL file or a mem0 export, sent as it is. A
   * retry is safe: what an earlier attempt stored is skipped by its source id. A file of more than
   * 10,000 lines answers at `status: "running"`: follow it with `getImport(id)`.
   */
  import(file: string | Blob | Uint8Array<ArrayBuffer>, query: QueryOf<'portability.import'>, opts?: CallOptions) {
    return this.op('portability.import', [], { ...opts, query, file });
  }

  /** GET /v1/imports/{import_id} (portability.getImport): the import's progress and counts. */
  getImport(importId: string, opts?: CallOptions) {
    return this.op('portability.getImport', [importId], opts);
  }

  /** GET /v1/imports (portability.listImports), newest first; iterate with `for await` for every page. */
  listImports(query?: QueryOf<'portability.listImports'>, opts?: CallOptions) {
    return this.paged('portability.listImports', [], query, opts);
  }
}

/**
 * Erasure: memories erased everywhere engram keeps them, with a signed receipt each
 * (erasures.*; `verifyErasureReceipt` checks a receipt without the server).
 */
export class Erasures extends Resource {
  /** POST /v1/erasures (erasures.create): erase what the body selects; answers the receipt. */
  create(body: BodyOf<'erasures.create'>, opts?: CallOptions) {
    return this.op('erasures.create', [], { ...opts, body });
  }

  /** GET /v1/erasures (erasures.list): the receipts, newest first; iterate for every page. */
  list(query?: QueryOf<'erasures.list'>, opts?: CallOptions) {
    return this.paged('erasures.list', [], query, opts);
  }

  /** GET /v1/erasures/{erasure_id} (erasures.get): one receipt. */
  get(erasureId: string, opts?: CallOptions) {
    return this.op('erasures.get', [erasureId], opts);
  }

  /** DELETE /v1/account (erasures.account): delete the account and erase all its data; `confirm` is its e-mail address. */
  deleteAccount(body: BodyOf<'erasures.account'>, opts?: CallOptions) {
    return this.op('erasures.account', [], { ...opts, body });
  }
}
