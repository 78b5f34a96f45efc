import type { Db } from '../db';
import { COMMIT_WITH, type CommitWith, hooksOf, SEND_WITH_NEXT, type SendWithNext, SHORTCUTS } from './hooks';
import { type Compiled, replaceTransaction, type SessionClass, type TransactionClass, transactionOver } from './internals';
import { placeLiterals, sqlLiteral } from './literals';

/**
 * drizzle's transactions on a node-postgres-shaped pool (node-postgres on Node, Neon's Pool on
 * Workers), two round trips shorter: BEGIN goes out with the first statement and COMMIT with the
 * last (`COMMIT_WITH`, hooks.ts), each pair as one simple-protocol message. Every round trip saved is
 * a send and a wake-up on both sides (on two cores about a quarter of a millisecond of CPU each), and
 * from a Worker a network hop to Neon. A store's last statement takes the tenant's audit chain head:
 * with its COMMIT, the head is held while it runs and commits, not also while its answer travels
 * back, waits for this process's event loop, and COMMIT travels out.
 *
 * The statement in such a message is, with `prepare`, `EXECUTE name(literals)`, its text prepared
 * once per connection (SQL PREPARE, so its plan stays cached as a bound statement's would; a
 * rollback does not undo it); without (Workers: a pool lives for one request, nothing would be
 * prepared twice), its text with the literals written in.
 *
 * A statement whose rows nothing needs at once can wait for the next (`SEND_WITH_NEXT`, hooks.ts), and
 * travel in its message: a store's writes go with its last statement and COMMIT, so a store takes
 * two round trips (BEGIN and the probe; the writes, the tail and COMMIT); a filtered search, whose
 * first statement waits for its second, one. A waiting statement goes out before any statement asked
 * for after it (with BEGIN if none went before), and on its own if nothing follows in the same turn
 * of the event loop.
 *
 * Statements the handle gets while the first is on its way queue behind it, in order; anything it
 * is asked to run after the commit fails loudly instead of running outside the transaction. With a
 * transaction config (isolation level), drizzle's own transaction runs.
 */
export function shortTransactions(db: Db, pool: Pool, driver: { Session: SessionClass; Transaction: TransactionClass; prepare: boolean }): void {
  const prepared = new WeakMap<Client, PreparedTexts>();
  replaceTransaction(
    db,
    (drizzleTransaction) =>
      (async (fn: (tx: never) => Promise<unknown>, config?: unknown) => {
        if (config) return drizzleTransaction(fn as never, config as never);
        const connection = await pool.connect();
        const client = inTurn(connection);
        let texts = prepared.get(connection);
        if (!texts) prepared.set(connection, (texts = { names: new Map(), made: 0 }));
        const inOneMessage = (text: string, params: readonly unknown[]) => oneMessageForm(client, driver.prepare ? texts : null, text, params);
        /** Settles once BEGIN and the first statement are queued on the client; null before the first statement. */
        let first: Promise<void> | null = null;
        let open = false; // BEGIN has been sent
        let committed = false;
        /** Statements waiting to travel with the next one (SEND_WITH_NEXT), in order. */
        const waiting: Waiting[] = [];
        /** Sends the waiting statements on their own, each the usual way; they queue on the client before anything asked after. */
        const sendWaiting = (sent = waiting.splice(0)) => {
          for (const w of sent)
            client.query(w.config, w.values).then(
              (r) => w.settle(null, (r as Result).rows),
              (err: Error) => w.settle(err),
            );
        };
        /** The one-message forms of `along`, or null when one of them has none. */
        const formsOf = async (along: Waiting[]) => {
          const forms = await Promise.all(along.map((w) => w.form));
          return forms.every((f) => f !== null) ? (forms as string[]) : null;
        };
        const query = (config: QueryConfig, values?: unknown[]): Promise<unknown> => {
          if (committed) return Promise.reject(new Error('this transaction has already committed with its last statement'));
          if (first)
            return first.then(() => {
              sendWaiting();
              return client.query(config, values);
            });
          let queued!: () => void;
          first = new Promise((resolve) => (queued = resolve));
          // Statements asked for before this one and waiting for it: after BEGIN, before it. (Rows in
          // array mode are this statement's choice, not theirs: then they go on their own.)
          const earlier = waiting.splice(0);
          return (async () => {
            try {
              const statement = await inOneMessage(config.text, values ?? []);
              const forms = config.rowMode ? null : await formsOf(earlier);
              open = true;
              if (!statement || !forms) {
                client.query('BEGIN').catch(() => undefined); // its failure fails the statement queued after it
                sendWaiting(earlier);
                const result = client.query(config, values);
                queued();
                return await result;
              }
              const sent = client.query({ text: ['BEGIN', ...forms, statement].join('; '), rowMode: config.rowMode, types: config.types }) as Promise<Result[]>;
              queued();
              const results = await sent.catch((err: Error) => {
                for (const w of earlier) w.settle(err);
                throw err;
              });
              for (const [i, w] of earlier.entries()) w.settle(null, results[1 + i].rows);
              return results[1 + earlier.length];
            } finally {
              queued();
            }
          })();
        };
        const tx = transactionOver(db, driver, { query });
        const hooks = hooksOf(tx);
        hooks[SHORTCUTS] = true;
        const commitWith: CommitWith = async (compiled: Compiled) => {
          await first;
          let along = waiting.splice(0);
          const forms = await formsOf(along);
          const statement = await inOneMessage(compiled.sql, compiled.params);
          if (!statement || !forms) {
            // Those that cannot travel in one message go first, the usual way (after BEGIN).
            if (!first && along.length) await query({ text: 'SELECT 1' }).catch(() => undefined);
            sendWaiting(along);
            along = [];
          }
          if (!statement) return null;
          const alone = !open; // nothing ran before it: BEGIN goes too
          open = true;
          const message = [...(alone ? ['BEGIN'] : []), ...along.map((_, i) => forms![i]), statement, 'COMMIT'].join('; ');
          let results: Result[];
          try {
            results = (await client.query(message)) as Result[];
          } catch (err) {
            // What the log may show of it (error-fields.ts): the statements' texts, their placeholders unfilled.
            if (err && typeof err === 'object' && !('query' in err))
              Object.assign(err, { query: [...along.map((w) => w.config.text), compiled.sql].join(';\n') });
            for (const w of along) w.settle(err as Error);
            throw err;
          }
          committed = true;
          const offset = alone ? 1 : 0;
          for (const [i, w] of along.entries()) w.settle(null, results[offset + i].rows);
          return results[offset + along.length].rows;
        };
        hooks[COMMIT_WITH] = commitWith;
        // A statement that nothing follows in this turn of the event loop (its caller awaits it first,
        // say) goes out on its own rather than waiting for ever: with BEGIN if it is the first.
        let lateSend: ReturnType<typeof setTimeout> | undefined;
        const sendLate = () => {
          lateSend = undefined;
          if (!waiting.length || committed) return;
          if (!first) void query({ text: 'SELECT 1' }).catch(() => undefined);
          else if (open) sendWaiting();
          else lateSend = setTimeout(sendLate, 0); // the first statement is on its way
        };
        const sendWithNext: SendWithNext = (compiled: Compiled, opts: { name?: string; planEachTime?: boolean } = {}) => {
          if (committed) return null;
          lateSend ??= setTimeout(sendLate, 0);
          return new Promise((resolve, reject) => {
            // Planned each time: its text with the literals in it; otherwise prepared once per connection.
            const form = opts.planEachTime ? oneMessageForm(client, null, compiled.sql, compiled.params) : inOneMessage(compiled.sql, compiled.params);
            waiting.push({
              config: { text: compiled.sql, name: opts.planEachTime ? undefined : opts.name },
              values: compiled.params,
              form,
              settle: (err, rows) => (err ? reject(err) : resolve(rows!)),
            });
          });
        };
        hooks[SEND_WITH_NEXT] = sendWithNext;
        let broken: Error | undefined;
        try {
          const result = await fn(tx as never);
          if (!first && waiting.length) await query({ text: 'SELECT 1' }); // only waiting statements: they go with BEGIN
          await first;
          sendWaiting();
          if (open && !committed) await client.query('COMMIT');
          return result;
        } catch (err) {
          for (const w of waiting.splice(0)) w.settle(new Error('the transaction ended before this statement was sent'));
          // After a failed `EXECUTE ...; COMMIT` the transaction is aborted, or ended if COMMIT itself
          // failed: ROLLBACK ends the first and is a no-op for the second.
          await first;
          if (open && !committed) await client.query('ROLLBACK').catch((e: Error) => (broken = e));
          throw err;
        } finally {
          clearTimeout(lateSend);
          connection.release(broken);
        }
      }) as Db['transaction'],
  );
  hooksOf(db)[SHORTCUTS] = true;
}

/**
 * The connection with its statements sent in the order asked for, each once the one before it has
 * answered, as node-postgres's own queue sends them: queueing a statement behind one still running
 * is deprecated there (pg@9 drops the queue), and this code hands over several at once.
 */
function inTurn(connection: Client): Pick<Client, 'query'> {
  let previous: Promise<unknown> = Promise.resolve();
  return {
    query: (config, values) => {
      const send = () => connection.query(config, values);
      const answer = previous.then(send, send);
      previous = answer.catch(() => undefined);
      return answer;
    },
  };
}

/** Statements a connection keeps prepared for sending with BEGIN or COMMIT, at most (their texts come from a few fixed shapes). */
const MAX_PREPARED_STATEMENTS = 32;
/**
 * Parameters larger than this (as literals) go the usual way: escaping and parsing a literal costs
 * more than binding it, so a large batch of stores runs slower with them inline.
 */
const MAX_LITERALS = 16_384;

/**
 * A statement as it can travel in one message with BEGIN or COMMIT: without parameters, its text;
 * with them, `EXECUTE name(literals)` (`prepared`: this connection's prepared texts) or the text with
 * its literals written in (no `prepared`). Null when it cannot: a parameter with no literal form,
 * literals past MAX_LITERALS, the connection's quota of prepared texts spent, or a text PREPARE
 * refuses (it runs the usual way, and fails there if it is wrong).
 */
async function oneMessageForm(client: Pick<Client, 'query'>, prepared: PreparedTexts | null, text: string, params: readonly unknown[]): Promise<string | null> {
  if (!params.length) return text;
  if (params.reduce<number>((n, p) => n + (typeof p === 'string' ? p.length : 0), 0) > MAX_LITERALS) return null; // before escaping it all
  let literals: string[];
  try {
    literals = params.map(sqlLiteral);
  } catch {
    return null;
  }
  const args = literals.join(', ');
  if (args.length > MAX_LITERALS) return null;
  if (!prepared) return placeLiterals(text, literals);
  let name = prepared.names.get(text);
  if (!name) {
    if (prepared.names.size >= MAX_PREPARED_STATEMENTS) return null;
    // The name is taken before PREPARE goes out: two texts new to the connection, asked for in the
    // same turn (a store's probe and its link probe), get a name each, not one of them a failed PREPARE.
    const id = `engram_c${prepared.made++}`;
    name = client.query(`PREPARE ${id} AS ${text}`).then(
      () => id,
      () => {
        prepared.names.delete(text);
        return null;
      },
    );
    prepared.names.set(text, name);
  }
  const id = await name;
  return id && `EXECUTE ${id}(${args})`;
}

/** A connection's texts prepared for sending with BEGIN or COMMIT (their names, once PREPARE answers; null if it refused), and how many names it has given. */
interface PreparedTexts {
  names: Map<string, Promise<string | null>>;
  made: number;
}

/** A statement waiting for the next one (SEND_WITH_NEXT): how it runs alone, and its one-message form. */
interface Waiting {
  config: QueryConfig;
  values: unknown[];
  form: Promise<string | null>;
  settle(err: Error | null, rows?: unknown[]): void;
}

// The drivers' shapes, as far as this uses them.
type QueryConfig = { text: string; name?: string; rowMode?: 'array'; types?: unknown };
type Result = { rows: unknown[] };
interface Client {
  query(config: string | QueryConfig, values?: unknown[]): Promise<unknown>;
  release(err?: Error): void;
}
export interface Pool {
  connect(): Promise<Client>;
}
