import { paginate } from '../pages.js';
import { type BodyOf, type CallOptions, type QueryOf, Resource, seg } from './base.js';

/** Retrieval evaluations and deploy gates (eval.*). */
export class Evals extends Resource {
  run(body?: BodyOf<'eval.run'>, opts?: CallOptions) {
    return this.call<'eval.run'>('POST', '/v1/eval/run', { ...opts, body });
  }

  /** Throws EngramError `GATE_FAILED` when the health score is below `min_score`. */
  gate(body: BodyOf<'eval.gate'>, opts?: CallOptions) {
    return this.call<'eval.gate'>('POST', '/v1/eval/gate', { ...opts, body });
  }

  history(query?: QueryOf<'eval.history'>, opts?: CallOptions) {
    return paginate('entries', query, (q) => this.call<'eval.history'>('GET', '/v1/eval/history', { ...opts, query: q }));
  }

  drift(query?: QueryOf<'eval.drift'>, opts?: CallOptions) {
    return this.call<'eval.drift'>('GET', '/v1/eval/drift', { ...opts, query });
  }

  createBaseline(body: BodyOf<'eval.createBaseline'>, opts?: CallOptions) {
    return this.call<'eval.createBaseline'>('POST', '/v1/eval/baselines', { ...opts, body });
  }

  baselines(opts?: CallOptions) {
    return this.call<'eval.listBaselines'>('GET', '/v1/eval/baselines', opts);
  }

  deleteBaseline(baselineId: string, opts?: CallOptions): Promise<void> {
    return this.transport.request<void>('DELETE', `/v1/eval/baselines/${seg(baselineId)}`, opts);
  }
}

/** Background memory upkeep and its insights (cortex.*). */
export class Cortex extends Resource {
  getConfig(opts?: CallOptions) {
    return this.call<'cortex.getConfig'>('GET', '/v1/cortex/config', opts);
  }

  patchConfig(body: BodyOf<'cortex.patchConfig'>, opts?: CallOptions) {
    return this.call<'cortex.patchConfig'>('PATCH', '/v1/cortex/config', { ...opts, body });
  }

  putConfig(body: BodyOf<'cortex.putConfig'>, opts?: CallOptions) {
    return this.call<'cortex.putConfig'>('PUT', '/v1/cortex/config', { ...opts, body });
  }

  status(opts?: CallOptions) {
    return this.call<'cortex.status'>('GET', '/v1/cortex/status', opts);
  }

  run(query?: QueryOf<'cortex.run'>, opts?: CallOptions) {
    return this.call<'cortex.run'>('POST', '/v1/cortex/run', { ...opts, query });
  }

  insights(query?: QueryOf<'cortex.insights'>, opts?: CallOptions) {
    return paginate('insights', query, (q) => this.call<'cortex.insights'>('GET', '/v1/cortex/insights', { ...opts, query: q }));
  }
}

/** Liveness, health and the caller's status (system.*). */
export class System extends Resource {
  health(opts?: CallOptions) {
    return this.call<'system.health'>('GET', '/health', opts);
  }

  status(opts?: CallOptions) {
    return this.call<'system.status'>('GET', '/v1/status', opts);
  }
}
