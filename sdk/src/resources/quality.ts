import { type BodyOf, type CallOptions, type QueryOf, Resource } from './base.js';

/** Retrieval evaluations and deploy gates (eval.*). */
export class Evals extends Resource {
  run(body?: BodyOf<'eval.run'>, opts?: CallOptions) {
    return this.op('eval.run', [], { ...opts, body });
  }

  /** Throws EngramError `GATE_FAILED` when the health score is below `min_score`. */
  gate(body: BodyOf<'eval.gate'>, opts?: CallOptions) {
    return this.op('eval.gate', [], { ...opts, body });
  }

  history(query?: QueryOf<'eval.history'>, opts?: CallOptions) {
    return this.paged('eval.history', [], query, opts);
  }

  drift(query?: QueryOf<'eval.drift'>, opts?: CallOptions) {
    return this.op('eval.drift', [], { ...opts, query });
  }

  createBaseline(body: BodyOf<'eval.createBaseline'>, opts?: CallOptions) {
    return this.op('eval.createBaseline', [], { ...opts, body });
  }

  baselines(opts?: CallOptions) {
    return this.op('eval.listBaselines', [], opts);
  }

  deleteBaseline(baselineId: string, opts?: CallOptions): Promise<void> {
    return this.opAs<void, 'eval.deleteBaseline'>('eval.deleteBaseline', [baselineId], opts);
  }
}

/** Background memory upkeep and its insights (cortex.*). */
export class Cortex extends Resource {
  getConfig(opts?: CallOptions) {
    return this.op('cortex.getConfig', [], opts);
  }

  patchConfig(body: BodyOf<'cortex.patchConfig'>, opts?: CallOptions) {
    return this.op('cortex.patchConfig', [], { ...opts, body });
  }

  putConfig(body: BodyOf<'cortex.putConfig'>, opts?: CallOptions) {
    return this.op('cortex.putConfig', [], { ...opts, body });
  }

  status(opts?: CallOptions) {
    return this.op('cortex.status', [], opts);
  }

  run(query?: QueryOf<'cortex.run'>, opts?: CallOptions) {
    return this.op('cortex.run', [], { ...opts, query });
  }

  insights(query?: QueryOf<'cortex.insights'>, opts?: CallOptions) {
    return this.paged('cortex.insights', [], query, opts);
  }
}

/** Liveness, health and the caller's status (system.*). */
export class System extends Resource {
  /** GET /healthz (system.liveness): the process answers, nothing else checked. */
  liveness(opts?: CallOptions) {
    return this.op('system.liveness', [], opts);
  }

  /** GET /metrics (system.metrics): the Prometheus text of the process, when the deployment exposes it. */
  metrics(opts?: CallOptions): Promise<string> {
    return this.opAs<string, 'system.metrics'>('system.metrics', [], { ...opts, text: true });
  }

  health(opts?: CallOptions) {
    return this.op('system.health', [], opts);
  }

  status(opts?: CallOptions) {
    return this.op('system.status', [], opts);
  }
}
