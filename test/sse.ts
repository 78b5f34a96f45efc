/**
 * A small Server-Sent Events reader for the tests (in-process, workerd and over HTTP alike; no Node
 * imports): parses the response body into messages as they arrive. The test client (client.ts)
 * hangs up on event streams; tests that read one open it with `app.request`/`fetch` and wrap the
 * body here.
 */
export interface SseMessage {
  id?: string;
  event?: string;
  data?: string;
  /** Comment lines (`: keepalive`), without the colon and space. */
  comments: string[];
}

export class SseTimeout extends Error {}

export class SseReader {
  private readonly reader: ReadableStreamDefaultReader<Uint8Array>;
  private readonly decoder = new TextDecoder();
  private buffer = '';
  private pending: Promise<ReadableStreamReadResult<Uint8Array>> | null = null;
  private queue: SseMessage[] = [];
  ended = false;

  constructor(body: ReadableStream<Uint8Array>) {
    this.reader = body.getReader();
  }

  /** The next message (an event, or with `comments` also a comment-only block); throws SseTimeout after `timeoutMs`, null when the stream ended. */
  async next(opts: { timeoutMs?: number; comments?: boolean } = {}): Promise<SseMessage | null> {
    const deadline = Date.now() + (opts.timeoutMs ?? 5_000);
    for (;;) {
      const i = this.queue.findIndex((m) => opts.comments || m.data !== undefined);
      if (i >= 0) {
        const [m] = this.queue.splice(0, i + 1).slice(-1);
        return m;
      }
      if (this.ended) return null;
      const left = deadline - Date.now();
      if (left <= 0) throw new SseTimeout(`no event within ${opts.timeoutMs ?? 5_000} ms`);
      this.pending ??= this.reader.read();
      let timer: ReturnType<typeof setTimeout> | undefined;
      const result = await Promise.race([this.pending, new Promise<null>((resolve) => (timer = setTimeout(() => resolve(null), left)))]);
      clearTimeout(timer);
      if (result === null) continue;
      this.pending = null;
      if (result.done) {
        this.ended = true;
        this.parse(`${this.decoder.decode()}\n\n`);
      } else this.parse(this.decoder.decode(result.value, { stream: true }));
    }
  }

  /** The next `n` events. */
  async events(n: number, timeoutMs = 5_000): Promise<SseMessage[]> {
    const out: SseMessage[] = [];
    while (out.length < n) {
      const m = await this.next({ timeoutMs });
      if (!m) throw new Error(`the stream ended after ${out.length} of ${n} events`);
      out.push(m);
    }
    return out;
  }

  /** Resolves with the events that arrive within `ms` (none expected, usually). */
  async quiet(ms: number): Promise<SseMessage[]> {
    const out: SseMessage[] = [];
    const until = Date.now() + ms;
    for (;;) {
      const left = until - Date.now();
      if (left <= 0) return out;
      try {
        const m = await this.next({ timeoutMs: left });
        if (!m) return out;
        out.push(m);
      } catch (err) {
        if (err instanceof SseTimeout) return out;
        throw err;
      }
    }
  }

  /** Hangs up, as a client that goes away. */
  async close(): Promise<void> {
    this.ended = true;
    await this.reader.cancel().catch(() => undefined);
  }

  private parse(text: string) {
    this.buffer += text.replace(/\r\n?/g, '\n');
    let end: number;
    while ((end = this.buffer.indexOf('\n\n')) >= 0) {
      const block = this.buffer.slice(0, end);
      this.buffer = this.buffer.slice(end + 2);
      if (!block) continue;
      const m: SseMessage = { comments: [] };
      for (const line of block.split('\n')) {
        if (line.startsWith(':')) {
          m.comments.push(line.slice(1).trimStart());
          continue;
        }
        const colon = line.indexOf(':');
        const field = colon < 0 ? line : line.slice(0, colon);
        const value = colon < 0 ? '' : line.slice(colon + 1).replace(/^ /, '');
        if (field === 'data') m.data = m.data === undefined ? value : `${m.data}\n${value}`;
        else if (field === 'id') m.id = value;
        else if (field === 'event') m.event = value;
      }
      this.queue.push(m);
    }
  }
}
