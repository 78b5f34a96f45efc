import type { APIPromise } from '../api-promise.js';
import { type BodyOf, type CallOptions, type QueryOf, Resource, type ResultOf } from './base.js';

/** Memories: store, search, page, update and export (docs/memories.md). */
export class Memories extends Resource {
  /**
   * POST /v1/memories (memories.store): the stored memory (201). Where a memory policy holds the
   * write for review the answer is instead 202 `{status: 'pending_review', approval_id, memory_id,
   * policy_result}` (docs/governed-memories.md): an account with memory policies checks
   * `'approval_id' in result`, or calls `storeOrHold`, typed with both answers.
   */
  store(body: BodyOf<'memories.store'>, opts?: CallOptions) {
    return this.storeOrHold(body, opts) as unknown as APIPromise<Extract<ResultOf<'memories.store'>, { id: string }>>;
  }

  /** POST /v1/memories (memories.store), typed with both answers: stored (201) or held for review (202). */
  storeOrHold(body: BodyOf<'memories.store'>, opts?: CallOptions) {
    return this.op('memories.store', [], { ...opts, body });
  }

  /**
   * POST /v1/memories/batch (memories.storeBatch): up to 100, each with its own result. The
   * document types the items loosely; each is a `memories.store` body.
   */
  storeMany(memories: BodyOf<'memories.store'>[], opts?: CallOptions) {
    return this.op('memories.storeBatch', [], { ...opts, body: { memories } as unknown as BodyOf<'memories.storeBatch'> });
  }

  /** GET /v1/memories (memories.list): iterate every memory, or `.page()` for one page. */
  list(query?: QueryOf<'memories.list'>, opts?: CallOptions) {
    return this.paged('memories.list', [], query, opts);
  }

  /** GET /v1/memories/{id} (memories.get). */
  get(id: string, opts?: CallOptions) {
    return this.op('memories.get', [id], opts);
  }

  /** PATCH /v1/memories/{id} (memories.update). */
  update(id: string, body: BodyOf<'memories.update'>, opts?: CallOptions) {
    return this.op('memories.update', [id], { ...opts, body });
  }

  /** DELETE /v1/memories/{id} (memories.delete). */
  delete(id: string, opts?: CallOptions) {
    return this.op('memories.delete', [id], opts);
  }

  /** GET /v1/memories/search (memories.search): ranked, one answer (no pages). */
  search(query: QueryOf<'memories.search'>, opts?: CallOptions) {
    return this.op('memories.search', [], { ...opts, query });
  }

  /** GET /v1/memories/export (memories.export): the export as text (JSON, CSV or Markdown by `format`). */
  export(query?: QueryOf<'memories.export'>, opts?: CallOptions): Promise<string> {
    return this.opAs<string, 'memories.export'>('memories.export', [], { ...opts, query, text: true });
  }

  /** The same export as a byte stream, read as it arrives: no timeout once the answer started, no whole-file string. */
  async exportStream(query?: QueryOf<'memories.export'>, opts?: CallOptions): Promise<ReadableStream<Uint8Array>> {
    const res = await this.opAs<Response, 'memories.export'>('memories.export', [], { ...opts, query, raw: true });
    return res.body as ReadableStream<Uint8Array>;
  }

  /** GET /v1/context/now (memories.contextNow). */
  contextNow(opts?: CallOptions) {
    return this.op('memories.contextNow', [], opts);
  }
}

/** Context spaces (spaces.*). */
export class Spaces extends Resource {
  create(body: BodyOf<'spaces.create'>, opts?: CallOptions) {
    return this.op('spaces.create', [], { ...opts, body });
  }

  list(query?: QueryOf<'spaces.list'>, opts?: CallOptions) {
    return this.paged('spaces.list', [], query, opts);
  }

  get(spaceId: string, opts?: CallOptions) {
    return this.op('spaces.get', [spaceId], opts);
  }

  update(spaceId: string, body: BodyOf<'spaces.update'>, opts?: CallOptions) {
    return this.op('spaces.update', [spaceId], { ...opts, body });
  }

  delete(spaceId: string, opts?: CallOptions): Promise<void> {
    return this.opAs<void, 'spaces.delete'>('spaces.delete', [spaceId], opts);
  }

  /** GET /v1/context-spaces/{space_id}/memories (spaces.memories), paged. */
  memories(spaceId: string, query?: QueryOf<'spaces.memories'>, opts?: CallOptions) {
    return this.paged('spaces.memories', [spaceId], query, opts);
  }
}

/** Share links for spaces and tags (shares.*). */
export class Shares extends Resource {
  create(body: BodyOf<'shares.create'>, opts?: CallOptions) {
    return this.op('shares.create', [], { ...opts, body });
  }

  list(opts?: CallOptions) {
    return this.op('shares.list', [], opts);
  }

  checkToken(token: string, opts?: CallOptions) {
    return this.op('shares.checkToken', [token], opts);
  }

  join(body: BodyOf<'shares.join'>, opts?: CallOptions) {
    return this.op('shares.join', [], { ...opts, body });
  }

  rotate(token: string, opts?: CallOptions) {
    return this.op('shares.rotate', [token], opts);
  }

  revoke(token: string, opts?: CallOptions): Promise<void> {
    return this.opAs<void, 'shares.revoke'>('shares.revoke', [token], opts);
  }
}

/** The knowledge graph: triples, entities and paths between them (knowledge.*). */
export class Graph extends Resource {
  createTriple(body: BodyOf<'knowledge.createTriple'>, opts?: CallOptions) {
    return this.op('knowledge.createTriple', [], { ...opts, body });
  }

  triples(query?: QueryOf<'knowledge.listTriples'>, opts?: CallOptions) {
    return this.paged('knowledge.listTriples', [], query, opts);
  }

  getTriple(tripleId: string, opts?: CallOptions) {
    return this.op('knowledge.getTriple', [tripleId], opts);
  }

  deleteTriple(tripleId: string, opts?: CallOptions) {
    return this.op('knowledge.deleteTriple', [tripleId], opts);
  }

  entities(query?: QueryOf<'knowledge.listEntities'>, opts?: CallOptions) {
    return this.paged('knowledge.listEntities', [], query, opts);
  }

  getEntity(entityId: string, query?: QueryOf<'knowledge.getEntity'>, opts?: CallOptions) {
    return this.op('knowledge.getEntity', [entityId], { ...opts, query });
  }

  deleteEntity(entityId: string, opts?: CallOptions) {
    return this.op('knowledge.deleteEntity', [entityId], opts);
  }

  paths(query: QueryOf<'knowledge.paths'>, opts?: CallOptions) {
    return this.op('knowledge.paths', [], { ...opts, query });
  }
}
