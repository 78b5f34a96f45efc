import { type BodyOf, type CallOptions, type QueryOf, Resource } from './base.js';

/** Signed reasoning traces (traces.*, docs/change-control.md). */
export class Traces extends Resource {
  start(body: BodyOf<'traces.start'>, opts?: CallOptions) {
    return this.op('traces.start', [], { ...opts, body });
  }

  addStep(traceId: string, body: BodyOf<'traces.addStep'>, opts?: CallOptions) {
    return this.op('traces.addStep', [traceId], { ...opts, body });
  }

  /** Seals and signs the trace. */
  complete(traceId: string, opts?: CallOptions) {
    return this.op('traces.complete', [traceId], opts);
  }

  get(traceId: string, query?: QueryOf<'traces.get'>, opts?: CallOptions) {
    return this.op('traces.get', [traceId], { ...opts, query });
  }

  list(query?: QueryOf<'traces.list'>, opts?: CallOptions) {
    return this.paged('traces.list', [], query, opts);
  }

  /** Server-side verification; `verifyTraceCertificate` checks a certificate without the server. */
  verify(traceId: string, opts?: CallOptions) {
    return this.op('traces.verify', [traceId], opts);
  }

  /** `{ include_content: 'true' }` adds each step's content, which `verifyTraceCertificate` then rehashes. */
  certificate(traceId: string, query?: QueryOf<'traces.certificate'>, opts?: CallOptions) {
    return this.op('traces.certificate', [traceId], { ...opts, query });
  }

  publicKey(opts?: CallOptions) {
    return this.op('traces.publicKey', [], opts);
  }
}

/** Point-in-time rollback of memories (rollback.*). */
export class Rollback extends Resource {
  preview(query: QueryOf<'rollback.preview'>, opts?: CallOptions) {
    return this.op('rollback.preview', [], { ...opts, query });
  }

  run(body: BodyOf<'rollback.run'>, opts?: CallOptions) {
    return this.op('rollback.run', [], { ...opts, body });
  }

  history(query?: QueryOf<'rollback.history'>, opts?: CallOptions) {
    return this.paged('rollback.history', [], query, opts);
  }
}

/** The tamper-evident audit chain (audit.*). */
export class Audit extends Resource {
  list(query?: QueryOf<'audit.list'>, opts?: CallOptions) {
    return this.paged('audit.list', [], query, opts);
  }

  verify(opts?: CallOptions) {
    return this.op('audit.verify', [], opts);
  }

  /** The export as text (CSV, JSON or NDJSON by `format`). */
  export(query?: QueryOf<'audit.export'>, opts?: CallOptions): Promise<string> {
    return this.opAs<string, 'audit.export'>('audit.export', [], { ...opts, query, text: true });
  }

  summary(query?: QueryOf<'audit.summary'>, opts?: CallOptions) {
    return this.op('audit.summary', [], { ...opts, query });
  }
}

/** What memory looked like at any time (replay.*). */
export class Replay extends Resource {
  timeline(query?: QueryOf<'replay.timeline'>, opts?: CallOptions) {
    return this.paged('replay.timeline', [], query, opts);
  }

  /** The memories live at `at`, paged by memory (edges come with each page). */
  snapshot(query: QueryOf<'replay.snapshot'>, opts?: CallOptions) {
    return this.paged('replay.snapshot', [], query, opts);
  }

  diff(query: QueryOf<'replay.diff'>, opts?: CallOptions) {
    return this.op('replay.diff', [], { ...opts, query });
  }

  memory(memoryId: string, opts?: CallOptions) {
    return this.op('replay.memory', [memoryId], opts);
  }

  recall(query: QueryOf<'replay.recall'>, opts?: CallOptions) {
    return this.op('replay.recall', [], { ...opts, query });
  }
}

/** Compensation plans for actions that left the system (compensations.*). */
export class Compensations extends Resource {
  preview(body: BodyOf<'compensations.preview'>, opts?: CallOptions) {
    return this.op('compensations.preview', [], { ...opts, body });
  }

  list(query?: QueryOf<'compensations.list'>, opts?: CallOptions) {
    return this.paged('compensations.list', [], query, opts);
  }

  get(id: string, opts?: CallOptions) {
    return this.op('compensations.get', [id], opts);
  }

  acknowledge(id: string, index: number, body: BodyOf<'compensations.acknowledge'>, opts?: CallOptions) {
    return this.op('compensations.acknowledge', [id, index], { ...opts, body });
  }
}
