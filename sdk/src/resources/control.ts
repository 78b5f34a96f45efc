import { paginate } from '../pages.js';
import { type BodyOf, type CallOptions, type QueryOf, Resource, seg } from './base.js';

/** Signed reasoning traces (traces.*, docs/change-control.md). */
export class Traces extends Resource {
  start(body: BodyOf<'traces.start'>, opts?: CallOptions) {
    return this.call<'traces.start'>('POST', '/v1/traces', { ...opts, body });
  }

  addStep(traceId: string, body: BodyOf<'traces.addStep'>, opts?: CallOptions) {
    return this.call<'traces.addStep'>('POST', `/v1/traces/${seg(traceId)}/steps`, { ...opts, body });
  }

  /** Seals and signs the trace. */
  complete(traceId: string, opts?: CallOptions) {
    return this.call<'traces.complete'>('POST', `/v1/traces/${seg(traceId)}/complete`, opts);
  }

  get(traceId: string, query?: QueryOf<'traces.get'>, opts?: CallOptions) {
    return this.call<'traces.get'>('GET', `/v1/traces/${seg(traceId)}`, { ...opts, query });
  }

  list(query?: QueryOf<'traces.list'>, opts?: CallOptions) {
    return paginate('traces', query, (q) => this.call<'traces.list'>('GET', '/v1/traces', { ...opts, query: q }));
  }

  /** Server-side verification; `verifyTraceCertificate` checks a certificate without the server. */
  verify(traceId: string, opts?: CallOptions) {
    return this.call<'traces.verify'>('POST', `/v1/traces/${seg(traceId)}/verify`, opts);
  }

  /** `{ include_content: 'true' }` adds each step's content, which `verifyTraceCertificate` then rehashes. */
  certificate(traceId: string, query?: QueryOf<'traces.certificate'>, opts?: CallOptions) {
    return this.call<'traces.certificate'>('GET', `/v1/traces/${seg(traceId)}/certificate`, { ...opts, query });
  }

  publicKey(opts?: CallOptions) {
    return this.call<'traces.publicKey'>('GET', '/v1/traces/public-key', opts);
  }
}

/** Point-in-time rollback of memories (rollback.*). */
export class Rollback extends Resource {
  preview(query: QueryOf<'rollback.preview'>, opts?: CallOptions) {
    return this.call<'rollback.preview'>('GET', '/v1/rollback/preview', { ...opts, query });
  }

  run(body: BodyOf<'rollback.run'>, opts?: CallOptions) {
    return this.call<'rollback.run'>('POST', '/v1/rollback', { ...opts, body });
  }

  history(query?: QueryOf<'rollback.history'>, opts?: CallOptions) {
    return paginate('rollbacks', query, (q) => this.call<'rollback.history'>('GET', '/v1/rollback/history', { ...opts, query: q }));
  }
}

/** The tamper-evident audit chain (audit.*). */
export class Audit extends Resource {
  list(query?: QueryOf<'audit.list'>, opts?: CallOptions) {
    return paginate('entries', query, (q) => this.call<'audit.list'>('GET', '/v1/audit', { ...opts, query: q }));
  }

  verify(opts?: CallOptions) {
    return this.call<'audit.verify'>('GET', '/v1/audit/verify', opts);
  }

  /** The export as text (CSV, JSON or NDJSON by `format`). */
  export(query?: QueryOf<'audit.export'>, opts?: CallOptions): Promise<string> {
    return this.transport.request<string>('GET', '/v1/audit/export', { ...opts, query, text: true });
  }

  summary(query?: QueryOf<'audit.summary'>, opts?: CallOptions) {
    return this.call<'audit.summary'>('GET', '/v1/audit/summary', { ...opts, query });
  }
}

/** What memory looked like at any time (replay.*). */
export class Replay extends Resource {
  timeline(query?: QueryOf<'replay.timeline'>, opts?: CallOptions) {
    return paginate('entries', query, (q) => this.call<'replay.timeline'>('GET', '/v1/replay/timeline', { ...opts, query: q }));
  }

  /** The memories live at `at`, paged by memory (edges come with each page). */
  snapshot(query: QueryOf<'replay.snapshot'>, opts?: CallOptions) {
    return paginate('memories', query, (q) => this.call<'replay.snapshot'>('GET', '/v1/replay/snapshot', { ...opts, query: q }));
  }

  diff(query: QueryOf<'replay.diff'>, opts?: CallOptions) {
    return this.call<'replay.diff'>('GET', '/v1/replay/diff', { ...opts, query });
  }

  memory(memoryId: string, opts?: CallOptions) {
    return this.call<'replay.memory'>('GET', `/v1/replay/memory/${seg(memoryId)}`, opts);
  }

  recall(query: QueryOf<'replay.recall'>, opts?: CallOptions) {
    return this.call<'replay.recall'>('GET', '/v1/replay/recall', { ...opts, query });
  }
}

/** Compensation plans for actions that left the system (compensations.*). */
export class Compensations extends Resource {
  preview(body: BodyOf<'compensations.preview'>, opts?: CallOptions) {
    return this.call<'compensations.preview'>('POST', '/v1/compensations/preview', { ...opts, body });
  }

  list(query?: QueryOf<'compensations.list'>, opts?: CallOptions) {
    return paginate('compensations', query, (q) => this.call<'compensations.list'>('GET', '/v1/compensations', { ...opts, query: q }));
  }

  get(id: string, opts?: CallOptions) {
    return this.call<'compensations.get'>('GET', `/v1/compensations/${seg(id)}`, opts);
  }

  acknowledge(id: string, index: number, body: BodyOf<'compensations.acknowledge'>, opts?: CallOptions) {
    return this.call<'compensations.acknowledge'>('PATCH', `/v1/compensations/${seg(id)}/actions/${seg(index)}`, { ...opts, body });
  }
}
