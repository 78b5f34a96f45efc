import { Duplex } from 'node:stream';
import type { PGlite } from '@electric-sql/pglite';
import pg from 'pg';

/**
 * node-postgres talking to an in-process PGlite over the Postgres wire protocol: each connection
 * is a stream whose messages go to `PGlite.execProtocolRaw` and whose answers come back as a
 * server's would. With it, code written for a node-postgres pool (the short transactions of
 * shared/platform/data/driver/) runs in `npm test` with nothing but Node.
 *
 * PGlite has one session, so the pool has one connection, and a connection's end does what a
 * server does when one closes: rolls back what it left open and forgets what it prepared.
 */
export function pglitePool(db: PGlite): pg.Pool {
  const pool = new pg.Pool({ max: 1, user: 'postgres', database: 'postgres', stream: () => new PgliteConnection(db) });
  pool.on('error', () => undefined);
  return pool;
}

const TERMINATE = 0x58; // 'X'
const READY_FOR_QUERY = 0x5a; // 'Z'

class PgliteConnection extends Duplex {
  private pending = Buffer.alloc(0);
  private started = false;
  /** The transaction status of the last ReadyForQuery: I (idle), T (in a transaction), E (failed one). */
  private status = 'I';
  /** Exchanges with PGlite, one after another, in the order the client wrote them. */
  private turn: Promise<void> = Promise.resolve();

  constructor(private readonly db: PGlite) {
    super();
  }

  // What node-postgres calls on a socket.
  connect() {
    process.nextTick(() => this.emit('connect'));
    return this;
  }
  setNoDelay() {
    return this;
  }
  setKeepAlive() {
    return this;
  }
  ref() {
    return this;
  }
  unref() {
    return this;
  }

  override _read() {}

  override _write(chunk: Buffer, _encoding: BufferEncoding, done: (err?: Error) => void) {
    this.pending = Buffer.concat([this.pending, chunk]);
    const messages: Buffer[] = [];
    let terminated = false;
    for (;;) {
      // The startup message has no type byte; every later one has one before its length.
      const header = this.started ? 5 : 4;
      if (this.pending.length < header) break;
      const length = this.pending.readInt32BE(header - 4) + header - 4;
      if (this.pending.length < length) break;
      const message = this.pending.subarray(0, length);
      this.pending = this.pending.subarray(length);
      if (this.started && message[0] === TERMINATE) terminated = true;
      else messages.push(message);
      this.started = true;
    }
    if (messages.length) this.exchange(Buffer.concat(messages));
    if (terminated) this.turn.then(() => this.push(null));
    done();
  }

  override _final(done: (err?: Error) => void) {
    this.cleanUp().then(() => done(), done);
  }

  override _destroy(err: Error | null, done: (err?: Error | null) => void) {
    this.cleanUp().then(
      () => done(err),
      () => done(err),
    );
  }

  private exchange(message: Buffer) {
    this.turn = this.turn.then(async () => {
      // Exclusive: PGlite's own query() sends its messages over several calls, which these must not split.
      const answer = Buffer.from(await this.db.runExclusive(() => this.db.execProtocolRaw(new Uint8Array(message))));
      for (let at = 0; at + 5 <= answer.length; at += 1 + answer.readInt32BE(at + 1)) {
        if (answer[at] === READY_FOR_QUERY) this.status = String.fromCharCode(answer[at + 5]);
      }
      if (answer.length) this.push(answer);
    });
  }

  private cleaned = false;
  /** What a server does for a closed connection: its open transaction rolled back, its prepared statements gone. */
  private cleanUp(): Promise<void> {
    if (this.cleaned) return this.turn;
    this.cleaned = true;
    this.turn = this.turn.then(async () => {
      if (this.status !== 'I') await this.db.exec('ROLLBACK');
      await this.db.exec('DEALLOCATE ALL');
    });
    return this.turn;
  }
}
