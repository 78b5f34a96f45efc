/**
 * Group commit for writes that queue on one row per key anyway (a tenant's audit chain head): up to
 * `parallel` runs of a key go at once, each caller alone; callers that arrive while that many are in
 * progress wait for one to end and then run together, in arrival order, up to `max` at a time. So a
 * burst of writes commits in a few transactions instead of taking turns on the lock one by one, the
 * parts of their transactions before the lock still overlap, and a lone write waits for nothing.
 *
 * `run` answers one result per item, in order; if it throws, every item of that run fails with it.
 * A queued run goes detached from the caller whose run ended before it.
 */
export class Coalescer<I, O> {
  private readonly keys = new Map<string, { running: number; waiting: Waiting<I, O>[] }>();

  constructor(
    private readonly run: (items: I[]) => Promise<O[]>,
    private readonly opts: { max: number; parallel: number },
  ) {}

  submit(key: string, item: I): Promise<O> {
    return new Promise<O>((resolve, reject) => {
      const waiting = { item, resolve, reject };
      let state = this.keys.get(key);
      if (!state) this.keys.set(key, (state = { running: 0, waiting: [] }));
      if (state.running >= this.opts.parallel) return void state.waiting.push(waiting);
      state.running++;
      void this.drain(key, state, [waiting]);
    });
  }

  private async drain(key: string, state: { running: number; waiting: Waiting<I, O>[] }, batch: Waiting<I, O>[]) {
    while (batch.length) {
      try {
        const results = await this.run(batch.map((w) => w.item));
        for (const [i, w] of batch.entries()) w.resolve(results[i]);
      } catch (err) {
        for (const w of batch) w.reject(err);
      }
      batch = state.waiting.splice(0, this.opts.max);
    }
    if (--state.running === 0) this.keys.delete(key);
  }
}

interface Waiting<I, O> {
  item: I;
  resolve: (result: O) => void;
  reject: (err: unknown) => void;
}
