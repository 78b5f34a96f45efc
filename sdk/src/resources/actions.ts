import { EngramError } from '../errors.js';
import { sleep } from '../transport.js';
import { type BodyOf, type CallOptions, type QueryOf, Resource, type ResultOf } from './base.js';

type ActionState = ResultOf<'actions.get'>;

/** Governed actions: submit, then act on the decision (actions.*, docs/change-control.md). */
export class Actions extends Resource {
  /**
   * POST /v1/actions (actions.submit). `allowed` and `pending_review` answer; a blocked action
   * throws an EngramError with code `BLOCKED` whose `body` is the whole action.
   */
  submit(body: BodyOf<'actions.submit'>, opts?: CallOptions) {
    return this.op('actions.submit', [], { ...opts, body });
  }

  /** POST /v1/actions/{connector}/{operation} (actions.submitConnector). */
  submitConnector(
    connector: 'github' | 'slack' | 'linear' | 'pagerduty' | 'http',
    operation: string,
    body: BodyOf<'actions.submitConnector'>,
    query?: QueryOf<'actions.submitConnector'>,
    opts?: CallOptions,
  ) {
    return this.op('actions.submitConnector', [connector, operation], { ...opts, body, query });
  }

  /** GET /v1/actions (actions.list): submitted actions, newest first; iterate the pages with `for await`. */
  list(query?: QueryOf<'actions.list'>, opts?: CallOptions) {
    return this.paged('actions.list', [], query, opts);
  }

  /** GET /v1/actions/{action_id} (actions.get): the action's current state. */
  status(actionId: string, opts?: CallOptions) {
    return this.op('actions.get', [actionId], opts);
  }

  explain(actionId: string, opts?: CallOptions) {
    return this.op('actions.explain', [actionId], opts);
  }

  /** POST /v1/actions/{action_id}/result (actions.result): what happened when the agent ran it. */
  reportResult(actionId: string, body: BodyOf<'actions.result'>, opts?: CallOptions) {
    return this.op('actions.result', [actionId], { ...opts, body });
  }

  /**
   * Polls the action until it leaves `pending_review` (approved, denied, expired, ...) and answers
   * that state; an EngramError `TIMEOUT` when `waitMs` (default 5 minutes) runs out first.
   */
  async waitForDecision(actionId: string, opts: CallOptions & { intervalMs?: number; waitMs?: number } = {}): Promise<ActionState> {
    const { intervalMs = 2_000, waitMs = 5 * 60_000, ...call } = opts;
    const until = Date.now() + waitMs;
    for (;;) {
      const state = await this.status(actionId, call);
      if (state.status !== 'pending_review') return state;
      if (Date.now() + intervalMs > until) {
        throw new EngramError({ status: 0, code: 'TIMEOUT', message: `Action ${actionId} was still pending review after ${waitMs} ms` });
      }
      await sleep(intervalMs, call.signal);
    }
  }

  dashboard(query?: QueryOf<'actions.dashboard'>, opts?: CallOptions) {
    return this.op('actions.dashboard', [], { ...opts, query });
  }

  violations(agentId: string, query?: QueryOf<'actions.agentViolations'>, opts?: CallOptions) {
    return this.paged('actions.agentViolations', [agentId], query, opts);
  }

  getSettings(opts?: CallOptions) {
    return this.op('actions.getSettings', [], opts);
  }

  putSettings(body: BodyOf<'actions.putSettings'>, opts?: CallOptions) {
    return this.op('actions.putSettings', [], { ...opts, body });
  }
}

/** Actions held for review, and their decisions (actions.approvals, actions.decide). */
export class Approvals extends Resource {
  list(query?: QueryOf<'actions.approvals'>, opts?: CallOptions) {
    return this.paged('actions.approvals', [], query, opts);
  }

  decide(approvalId: string, body: BodyOf<'actions.decide'>, opts?: CallOptions) {
    return this.op('actions.decide', [approvalId], { ...opts, body });
  }
}

/** Control policies (policies.*); `agentId` scopes a call to an agent's policies. */
export class Policies extends Resource {
  test(body: BodyOf<'policies.test'>, opts?: CallOptions) {
    return this.op('policies.test', [], { ...opts, body });
  }

  create(body: BodyOf<'policies.create'>, opts?: CallOptions) {
    return this.op('policies.create', [], { ...opts, body });
  }

  list(query?: QueryOf<'policies.list'>, opts?: CallOptions) {
    return this.op('policies.list', [], { ...opts, query });
  }

  get(name: string, query?: QueryOf<'policies.get'>, opts?: CallOptions) {
    return this.op('policies.get', [name], { ...opts, query });
  }

  replace(name: string, body: BodyOf<'policies.replace'>, query?: QueryOf<'policies.replace'>, opts?: CallOptions) {
    return this.op('policies.replace', [name], { ...opts, body, query });
  }

  delete(name: string, query?: QueryOf<'policies.delete'>, opts?: CallOptions) {
    return this.op('policies.delete', [name], { ...opts, query });
  }
}
