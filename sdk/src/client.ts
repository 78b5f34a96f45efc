import type { APIPromise } from './api-promise.js';
import type { NamedSurface } from './generated/operations.js';
import { type EngramEvent, type StreamOptions, streamEvents } from './events.js';
import { Admin, Agents, Keys, Missions, Teams, Usage, Webhooks } from './resources/account.js';
import { Actions, Approvals, Policies } from './resources/actions.js';
import { Audit, Compensations, Replay, Rollback, Traces } from './resources/control.js';
import { Graph, Memories, Shares, Spaces } from './resources/memories.js';
import { Erasures, Portability } from './resources/portability.js';
import { Cortex, Evals, System } from './resources/quality.js';
import { type HttpMethod, type RequestSpec, Transport, type TransportOptions } from './transport.js';

export type EngramOptions = TransportOptions;

/**
 * The engram API client: one namespace per family of routes (sdk/src/names.ts names each
 * operation's method), every call typed from the OpenAPI document (sdk/src/generated/openapi.ts)
 * and sent by its generated method and path (sdk/src/generated/operations.ts). Every call answers
 * an APIPromise: `await` it for the result, `.withResponse()` for the headers too. Works wherever
 * `fetch` and WebCrypto exist.
 *
 * ```ts
 * const engram = new Engram({ apiKey: process.env.ENGRAM_API_KEY!, baseUrl: 'http://localhost:8787' });
 * await engram.memories.store({ observation: 'The user prefers dark roast' });
 * const { memories } = await engram.memories.search({ q: 'coffee' });
 * ```
 */
export class Engram {
  readonly memories: Memories;
  readonly spaces: Spaces;
  readonly shares: Shares;
  readonly graph: Graph;
  readonly traces: Traces;
  readonly rollback: Rollback;
  readonly audit: Audit;
  readonly replay: Replay;
  readonly compensations: Compensations;
  readonly actions: Actions;
  readonly approvals: Approvals;
  readonly policies: Policies;
  readonly teams: Teams;
  readonly webhooks: Webhooks;
  readonly agents: Agents;
  readonly missions: Missions;
  readonly usage: Usage;
  readonly keys: Keys;
  readonly admin: Admin;
  readonly evals: Evals;
  readonly cortex: Cortex;
  readonly system: System;
  readonly portability: Portability;
  readonly erasures: Erasures;
  readonly events: { stream(opts?: StreamOptions): AsyncGenerator<EngramEvent, void, undefined> };
  readonly #transport: Transport;

  constructor(opts: EngramOptions) {
    const t = (this.#transport = new Transport(opts));
    this.memories = new Memories(t);
    this.portability = new Portability(t);
    this.erasures = new Erasures(t);
    this.spaces = new Spaces(t);
    this.shares = new Shares(t);
    this.graph = new Graph(t);
    this.traces = new Traces(t);
    this.rollback = new Rollback(t);
    this.audit = new Audit(t);
    this.replay = new Replay(t);
    this.compensations = new Compensations(t);
    this.actions = new Actions(t);
    this.approvals = new Approvals(t);
    this.policies = new Policies(t);
    this.teams = new Teams(t);
    this.webhooks = new Webhooks(t);
    this.agents = new Agents(t);
    this.missions = new Missions(t);
    this.usage = new Usage(t);
    this.keys = new Keys(t);
    this.admin = new Admin(t);
    this.evals = new Evals(t);
    this.cortex = new Cortex(t);
    this.system = new System(t);
    this.events = { stream: (streamOpts) => streamEvents(t, streamOpts) };
  }

  /**
   * Any route, untyped: the same auth, retries, idempotency and errors as the namespaces. For a
   * route this SDK version does not wrap yet.
   */
  request<T = unknown>(method: HttpMethod, path: string, spec?: Omit<RequestSpec, 'raw'>): APIPromise<T> {
    return this.#transport.request<T>(method, path, spec);
  }
}

/**
 * Every method sdk/src/names.ts names exists on the client: `tsc -p sdk` fails otherwise (and
 * test/sdk-coverage.test.ts checks each sends its operation).
 */
type Bound<T extends { [N in keyof NamedSurface]: { [M in keyof NamedSurface[N]]: (...args: never[]) => unknown } }> = T;
// biome-ignore lint/correctness/noUnusedVariables: the check is the constraint itself.
type Checked = Bound<Engram>;
