/**
 * engram's own statements, replayed raw, for test/bench/peers.ts: the bound a store's PostgreSQL
 * work puts under it, whatever engram's Node side does.
 *
 * Recording: every message engram's node-postgres connections send to its database while the
 * recorder runs (`pg.Client.prototype.query`, wrapped once for the process; bench code only), in
 * the order sent, with the connection that sent it, the call it was sent for (an AsyncLocalStorage
 * around each store and search; none: background, such as the request gate's counter flush), and
 * the answers that had arrived when it went out.
 *
 * Replay: on a copy of engram's database taken before the first recorded message (`CREATE DATABASE
 * ... TEMPLATE`, so the recorded ids, chain heads and hashes go in without conflicts), one plain
 * `pg.Client` per connection engram used, each sending its counterpart's messages as they were
 * (text, parameters, statement name: a simple-protocol message stays one, multi-statement scripts
 * included; a named statement is parsed once per connection as engram's was). A message waits for
 * the answers that had arrived before it was sent, and for nothing else, so the replay keeps the
 * recording's order without adding waits of its own. No HTTP, no engram code; Redis calls are not
 * replayed. Each replayed call is timed from its first message to its last answer, background
 * messages go out at their place in between, unwaited.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import pg from 'pg';
import { f0, f1, f2, pct, table } from './lib';

export interface Message {
  /** Which of engram's connections sent it (in order of first use). */
  conn: number;
  config: { text: string; values?: unknown[]; name?: string; rowMode?: 'array'; types?: unknown };
  /** The call it was sent for; null: background. */
  call: number | null;
  /** Messages whose answers arrived after the previous message went out and before this one did. */
  after: number[];
  /** Whether it succeeded when recorded (a PREPARE the server refuses is engram's to handle). */
  ok: boolean;
  /** Its error when it failed. */
  error?: string;
}

export interface Call {
  kind: 'store' | 'search';
  /** Until it has answered: what its context sends later (a timer it started, a queue it began draining) is background. */
  open: boolean;
  messages: number[];
  /** What engram's call answered (hits of a search): the replay reports the same. */
  result: number;
}

type Query = (this: pg.Client, ...args: unknown[]) => unknown;

export class StatementRecorder {
  readonly messages: Message[] = [];
  readonly calls: Call[] = [];
  private readonly inCall = new AsyncLocalStorage<number>();
  private readonly connections = new WeakMap<object, number>();
  private readonly ignored = new WeakSet<object>();
  private answered: number[] = [];
  private recording = false;
  connectionCount = 0;

  /** Records the connections to `database` (its name) once `start` is called. */
  constructor(private readonly database: string) {
    const original = pg.Client.prototype.query as unknown as Query;
    const recorder = this;
    (pg.Client.prototype as unknown as { query: Query }).query = function (this: pg.Client, ...args: unknown[]) {
      if (!recorder.recording || (this as { database?: string }).database !== recorder.database || recorder.ignored.has(this))
        return original.apply(this, args);
      return recorder.record(this, original, args);
    };
  }

  start() {
    this.recording = true;
  }

  /** Stops recording, and AsyncLocalStorage's hooks on every promise of the process with it. */
  stop() {
    this.recording = false;
    this.inCall.disable();
  }

  /** A client of the bench's own on that database (ANALYZE): not engram's, not recorded. */
  ignore(client: pg.Client) {
    this.ignored.add(client);
  }

  /** Runs one of engram's calls, its messages recorded as this call's. */
  async call(kind: Call['kind'], fn: () => Promise<number | undefined>): Promise<number | undefined> {
    if (!this.recording) return fn();
    const id = this.calls.push({ kind, open: true, messages: [], result: 0 }) - 1;
    try {
      const result = await this.inCall.run(id, fn);
      this.calls[id].result = result ?? 0;
      return result;
    } finally {
      this.calls[id].open = false;
    }
  }

  private record(client: pg.Client, original: Query, args: unknown[]) {
    const [config, values, callback] = args as [string | Record<string, any>, unknown, unknown];
    const c = typeof config === 'string' ? { text: config } : config;
    if (typeof c.submit === 'function') throw new Error('a submittable query (a cursor): the statement replay cannot send it again');
    let conn = this.connections.get(client);
    if (conn === undefined) this.connections.set(client, (conn = this.connectionCount++));
    const params = (c.values ?? (typeof values === 'function' ? undefined : values)) as unknown[] | undefined;
    const inCall = this.inCall.getStore();
    const call = inCall !== undefined && this.calls[inCall].open ? inCall : null;
    const i =
      this.messages.push({
        conn,
        config: { text: c.text, values: params?.slice(), name: c.name, rowMode: c.rowMode, types: c.types },
        call,
        after: this.answered.splice(0),
        ok: true,
      }) - 1;
    if (call !== null) this.calls[call].messages.push(i);
    // Before the caller hears of the answer, so whatever it sends next lists this one as arrived.
    const settle = (ok: boolean, err?: unknown) => {
      this.messages[i].ok = ok;
      if (!ok) this.messages[i].error = err instanceof Error ? err.message : String(err);
      this.answered.push(i);
    };
    const cb = typeof values === 'function' ? values : typeof callback === 'function' ? callback : null;
    if (cb) {
      const wrapped = (err: unknown, res: unknown) => {
        settle(!err, err);
        (cb as (e: unknown, r: unknown) => void)(err, res);
      };
      return original.apply(client, typeof values === 'function' ? [config, wrapped] : [config, values, wrapped]);
    }
    const result = original.apply(client, args) as Promise<unknown>;
    result.then(
      () => settle(true),
      (err) => settle(false, err),
    );
    return result;
  }
}

/**
 * The recorded calls sent again to `url` (a copy of engram's database as it was when recording
 * started), in order: `store` and `search` each replay the next recorded call, which must be of
 * that kind (test/bench/peers.ts calls them exactly as it called engram).
 */
export async function statementReplay(recorder: StatementRecorder, url: string) {
  const { messages, calls } = recorder;
  const clients = await Promise.all(
    Array.from({ length: recorder.connectionCount }, async () => {
      const c = new pg.Client({ connectionString: url });
      await c.connect();
      return c;
    }),
  );
  const answers: Promise<void>[] = [];
  /** Each message's round trip, ms: from its sending to its answer. */
  const took: number[] = [];
  const failures: string[] = [];
  let sent = 0;
  let next = 0;
  const send = async (upTo: number) => {
    for (; sent <= upTo; sent++) {
      const m = messages[sent];
      if (m.after.length) await Promise.all(m.after.map((j) => answers[j]));
      const i = sent;
      const t0 = performance.now();
      answers[i] = (clients[m.conn].query(m.config as pg.QueryConfig) as Promise<unknown>).then(
        () => {
          took[i] = performance.now() - t0;
          if (!m.ok) failures.push(`message ${i} succeeded, failed when recorded: ${m.config.text.slice(0, 80)}`);
        },
        (err: Error) => {
          took[i] = performance.now() - t0;
          if (m.ok) failures.push(`message ${i} failed (${err.message}), succeeded when recorded: ${m.config.text.slice(0, 80)}`);
        },
      );
    }
  };
  const replay = async (kind: Call['kind']) => {
    const call = calls[next++];
    if (call?.kind !== kind) throw new Error(`replay: call ${next - 1} is a ${call?.kind ?? 'call never recorded'}, not a ${kind}`);
    if (call.messages.length) {
      await send(call.messages[call.messages.length - 1]);
      await Promise.all(call.messages.map((i) => answers[i]));
    }
    if (failures.length) throw new Error(`the replay parted from the recording: ${failures.join('; ')}`);
    return call.result;
  };
  const background = messages.filter((m) => m.call === null).length;
  const per = (kind: Call['kind']) => {
    const of = calls.filter((c) => c.kind === kind);
    return of.length ? of.reduce((n, c) => n + c.messages.length, 0) / of.length : 0;
  };
  return {
    name: "engram's statements, raw (plain pg clients: no HTTP, no engram code, no Redis)",
    /** What was replayed: messages per call and in the background, connections. */
    summary: {
      storeMessages: per('store'),
      searchMessages: per('search'),
      background,
      connections: clients.length,
      calls: calls.length,
      /** Messages that failed when recorded (and so, the replay checks, when replayed), by error. */
      failed: [...new Set(messages.filter((m) => !m.ok).map((m) => m.error))],
    },
    store: async () => {
      await replay('store');
    },
    search: async () => replay('search'),
    /** Sends every message before message `n` and waits for their answers (what the database had when message `n` was sent). */
    before: async (n: number) => {
      await send(n - 1);
      await Promise.all(answers);
      if (failures.length) throw new Error(`the replay parted from the recording: ${failures.join('; ')}`);
    },
    /**
     * The messages of calls `from` to `to` (exclusive) by shape (literals elided), with their round
     * trips in the replay; `prepared`: what each prepared statement name stands for.
     */
    messages: (from: number, to: number) => {
      const byShape = new Map<string, number[]>();
      const used = new Set<string>(); // `${connection}:${name}` of the prepared statements they execute
      for (const call of calls.slice(from, to))
        for (const i of call.messages) {
          const key = shape(messages[i]);
          byShape.set(key, [...(byShape.get(key) ?? []), took[i]]);
          for (const [, name] of messages[i].config.text.matchAll(/EXECUTE (\w+)\(/g)) used.add(`${messages[i].conn}:${name}`);
        }
      const prepared = new Map<string, string>();
      for (const m of messages) {
        const p = /^PREPARE (\w+) AS\s+([\s\S]*)$/.exec(m.config.text);
        if (!p || !used.has(`${m.conn}:${p[1]}`)) continue;
        const text = p[2].replace(/\s+/g, ' ').slice(0, 70);
        // Names are per connection: one that stands for another text elsewhere says which connection.
        prepared.set(prepared.has(p[1]) && prepared.get(p[1]) !== text ? `${p[1]} (connection ${m.conn})` : p[1], text);
      }
      return { calls: to - from, byShape, prepared };
    },
    /** Waits for the messages sent (what follows the last replayed call is left to `before` and replayClients). */
    close: async () => {
      await Promise.all(answers);
      await Promise.all(clients.map((c) => c.end()));
      if (failures.length) throw new Error(`the replay parted from the recording: ${failures.join('; ')}`);
    },
  };
}

/** A message with its literals and parameter lists elided: what it sends, not which values. */
function shape(m: Message) {
  const text = m.config.text
    .replace(/E'(?:[^'\\]|''|\\.)*'/g, '?')
    .replace(/\((?:\?|NULL)(?:, (?:\?|NULL))*\)/g, '(…)')
    .replace(/\s+/g, ' ')
    .trim();
  return `${m.config.name ? `${m.config.name} (named, bound parameters): ` : ''}${text.length > 80 ? `${text.slice(0, 80)}…` : text}`;
}

/** One row of test/bench/peers.ts's latency run: store times, CPU "this process / PostgreSQL" per call. */
interface Latency {
  storeMs: number[];
  cpu: string;
  inConversation: { ms: number[]; cpu: string };
}
type Replay = Awaited<ReturnType<typeof statementReplay>>;
/** What the report shows of a replay: its summary, and the timed stores' and searches' messages (`messages`). */
export type BoundReplay = { summary: Replay['summary']; stores: ReturnType<Replay['messages']>; searches: ReturnType<Replay['messages']> };

/**
 * The bound, as markdown: `rows` (the floor, the HTTP floor, the statements replayed raw, engram:
 * in that order) side by side, what share of engram's store the statements alone take, and the
 * replayed calls message by message.
 */
export function boundReport(rows: [string, Latency][], replay: BoundReplay) {
  const p50 = (xs: number[]) => pct(xs, 50);
  const out = [
    `\n### The bound: engram beside its own statements replayed raw and the floors (one client; p50 ms, CPU ms per call)\n`,
    table(
      ['what', 'store p50', 'CPU per store: this process / PostgreSQL', 'search p50 (one conversation)', 'CPU per search: this process / PostgreSQL'],
      rows.map(([n, l]) => [n, f2(p50(l.storeMs)), l.cpu, f2(p50(l.inConversation.ms)), l.inConversation.cpu]),
    ),
  ];
  const [, [, floor], [, raw], [, e]] = rows;
  const share = (part: number, whole: number) => `${f0((100 * part) / whole)}%`;
  const pgOf = (cpu: string) => Number(cpu.split(' / ')[1]); // NaN when PostgreSQL's CPU is not readable
  const { summary } = replay;
  out.push(
    `\nengram's statements alone: store p50 ${f2(p50(raw.storeMs))} of engram's ${f2(p50(e.storeMs))} ms (${share(p50(raw.storeMs), p50(e.storeMs))}), ` +
      `${f1(p50(raw.storeMs) / p50(floor.storeMs))}x the HTTP floor's; ` +
      (Number.isNaN(pgOf(e.cpu))
        ? "PostgreSQL's CPU not readable here"
        : `PostgreSQL CPU per store ${f2(pgOf(raw.cpu))} of ${f2(pgOf(e.cpu))} ms (${share(pgOf(raw.cpu), pgOf(e.cpu))})`) +
      `; search p50 ${f2(p50(raw.inConversation.ms))} of ${f2(p50(e.inConversation.ms))} ms. ` +
      `Replayed: ${f1(summary.storeMessages)} messages a store, ${f1(summary.searchMessages)} a search (each one round trip; warm-up calls included), ` +
      `${summary.background} background messages beside ${summary.calls} calls (engram's start, the request gate's counter flush: sent at their place, unwaited), ` +
      `on ${summary.connections} connection${summary.connections > 1 ? 's' : ''} as engram's pool used them; engram's Redis calls are not replayed.` +
      (summary.failed.length ? ` Failed when recorded and when replayed: ${summary.failed.join('; ')}.` : ''),
  );
  out.push(`\n### engram's store and search, message by message (the timed calls replayed raw; ms from sending to answer)\n`);
  const prepared = new Map<string, string>();
  const messageRows = (['store', 'search'] as const).flatMap((kind) => {
    const m = kind === 'store' ? replay.stores : replay.searches;
    for (const [name, text] of m.prepared) prepared.set(name, text);
    return [...m.byShape].map(([shape, ms]) => [kind, `\`${shape}\``, f2(ms.length / m.calls), f2(p50(ms)), f2(ms.reduce((a, b) => a + b, 0) / ms.length)]);
  });
  out.push(table(['call', 'message (literals elided)', 'per call', 'p50', 'mean'], messageRows));
  out.push(`\nPrepared (SQL PREPARE, once per connection): ${[...prepared].map(([n, t]) => `${n} = \`${t}…\``).join('; ')}`);
  return out.join('\n');
}
