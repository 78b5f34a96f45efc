import { paginate } from '../pages.js';
import { type BodyOf, type CallOptions, type QueryOf, Resource, seg } from './base.js';

/** Memories: store, search, page, update and export (docs/memories.md). */
export class Memories extends Resource {
  /** POST /v1/memories (memories.store). */
  store(body: BodyOf<'memories.store'>, opts?: CallOptions) {
    return this.call<'memories.store'>('POST', '/v1/memories', { ...opts, body });
  }

  /**
   * POST /v1/memories/batch (memories.storeBatch): up to 100, each with its own result. The
   * document types the items loosely; each is a `memories.store` body.
   */
  storeMany(memories: BodyOf<'memories.store'>[], opts?: CallOptions) {
    return this.call<'memories.storeBatch'>('POST', '/v1/memories/batch', { ...opts, body: { memories } as unknown as BodyOf<'memories.storeBatch'> });
  }

  /** GET /v1/memories (memories.list): iterate every memory, or `.page()` for one page. */
  list(query?: QueryOf<'memories.list'>, opts?: CallOptions) {
    return paginate('memories', query, (q) => this.call<'memories.list'>('GET', '/v1/memories', { ...opts, query: q }));
  }

  /** GET /v1/memories/{id} (memories.get). */
  get(id: string, opts?: CallOptions) {
    return this.call<'memories.get'>('GET', `/v1/memories/${seg(id)}`, opts);
  }

  /** PATCH /v1/memories/{id} (memories.update). */
  update(id: string, body: BodyOf<'memories.update'>, opts?: CallOptions) {
    return this.call<'memories.update'>('PATCH', `/v1/memories/${seg(id)}`, { ...opts, body });
  }

  /** DELETE /v1/memories/{id} (memories.delete). */
  delete(id: string, opts?: CallOptions) {
    return this.call<'memories.delete'>('DELETE', `/v1/memories/${seg(id)}`, opts);
  }

  /** GET /v1/memories/search (memories.search): ranked, one answer (no pages). */
  search(query: QueryOf<'memories.search'>, opts?: CallOptions) {
    return this.call<'memories.search'>('GET', '/v1/memories/search', { ...opts, query });
  }

  /** GET /v1/memories/export (memories.export): the export as text (JSON, CSV or Markdown by `format`). */
  export(query?: QueryOf<'memories.export'>, opts?: CallOptions): Promise<string> {
    return this.transport.request<string>('GET', '/v1/memories/export', { ...opts, query, text: true });
  }

  /** The same export as a byte stream, read as it arrives: no timeout once the answer started, no whole-file string. */
  async exportStream(query?: QueryOf<'memories.export'>, opts?: CallOptions): Promise<ReadableStream<Uint8Array>> {
    const res = await this.transport.request<Response>('GET', '/v1/memories/export', { ...opts, query, raw: true });
    return res.body as ReadableStream<Uint8Array>;
  }

  /** GET /v1/context/now (memories.contextNow). */
  contextNow(opts?: CallOptions) {
    return this.call<'memories.contextNow'>('GET', '/v1/context/now', opts);
  }
}

/** Context spaces (spaces.*). */
export class Spaces extends Resource {
  create(body: BodyOf<'spaces.create'>, opts?: CallOptions) {
    return this.call<'spaces.create'>('POST', '/v1/context-spaces', { ...opts, body });
  }

  list(query?: QueryOf<'spaces.list'>, opts?: CallOptions) {
    return paginate('spaces', query, (q) => this.call<'spaces.list'>('GET', '/v1/context-spaces', { ...opts, query: q }));
  }

  get(spaceId: string, opts?: CallOptions) {
    return this.call<'spaces.get'>('GET', `/v1/context-spaces/${seg(spaceId)}`, opts);
  }

  update(spaceId: string, body: BodyOf<'spaces.update'>, opts?: CallOptions) {
    return this.call<'spaces.update'>('PUT', `/v1/context-spaces/${seg(spaceId)}`, { ...opts, body });
  }

  delete(spaceId: string, opts?: CallOptions): Promise<void> {
    return this.transport.request<void>('DELETE', `/v1/context-spaces/${seg(spaceId)}`, opts);
  }

  /** GET /v1/context-spaces/{space_id}/memories (spaces.memories), paged. */
  memories(spaceId: string, query?: QueryOf<'spaces.memories'>, opts?: CallOptions) {
    return paginate('memories', query, (q) => this.call<'spaces.memories'>('GET', `/v1/context-spaces/${seg(spaceId)}/memories`, { ...opts, query: q }));
  }
}

/** Share links for spaces and tags (shares.*). */
export class Shares extends Resource {
  create(body: BodyOf<'shares.create'>, opts?: CallOptions) {
    return this.call<'shares.create'>('POST', '/v1/spaces/share', { ...opts, body });
  }

  list(opts?: CallOptions) {
    return this.call<'shares.list'>('GET', '/v1/spaces/shared', opts);
  }

  checkToken(token: string, opts?: CallOptions) {
    return this.call<'shares.checkToken'>('GET', `/v1/spaces/token/${seg(token)}`, opts);
  }

  join(body: BodyOf<'shares.join'>, opts?: CallOptions) {
    return this.call<'shares.join'>('POST', '/v1/spaces/join', { ...opts, body });
  }

  rotate(token: string, opts?: CallOptions) {
    return this.call<'shares.rotate'>('POST', `/v1/spaces/share/${seg(token)}/rotate`, opts);
  }

  revoke(token: string, opts?: CallOptions): Promise<void> {
    return this.transport.request<void>('DELETE', `/v1/spaces/share/${seg(token)}`, opts);
  }
}

/** The knowledge graph: triples, entities and paths between them (knowledge.*). */
export class Graph extends Resource {
  createTriple(body: BodyOf<'knowledge.createTriple'>, opts?: CallOptions) {
    return this.call<'knowledge.createTriple'>('POST', '/v1/knowledge/triples', { ...opts, body });
  }

  triples(query?: QueryOf<'knowledge.listTriples'>, opts?: CallOptions) {
    return paginate('triples', query, (q) => this.call<'knowledge.listTriples'>('GET', '/v1/knowledge/triples', { ...opts, query: q }));
  }

  getTriple(tripleId: string, opts?: CallOptions) {
    return this.call<'knowledge.getTriple'>('GET', `/v1/knowledge/triples/${seg(tripleId)}`, opts);
  }

  deleteTriple(tripleId: string, opts?: CallOptions) {
    return this.call<'knowledge.deleteTriple'>('DELETE', `/v1/knowledge/triples/${seg(tripleId)}`, opts);
  }

  entities(query?: QueryOf<'knowledge.listEntities'>, opts?: CallOptions) {
    return paginate('entities', query, (q) => this.call<'knowledge.listEntities'>('GET', '/v1/knowledge/entities', { ...opts, query: q }));
  }

  getEntity(entityId: string, query?: QueryOf<'knowledge.getEntity'>, opts?: CallOptions) {
    return this.call<'knowledge.getEntity'>('GET', `/v1/knowledge/entities/${seg(entityId)}`, { ...opts, query });
  }

  deleteEntity(entityId: string, opts?: CallOptions) {
    return this.call<'knowledge.deleteEntity'>('DELETE', `/v1/knowledge/entities/${seg(entityId)}`, opts);
  }

  paths(query: QueryOf<'knowledge.paths'>, opts?: CallOptions) {
    return this.call<'knowledge.paths'>('GET', '/v1/knowledge/paths', { ...opts, query });
  }
}
