/**
 * Where a search's time went, for its `Server-Timing` header (docs/memories.md#server-timing):
 * `embed` (the query's embedding), `db` (candidate, text and bookkeeping reads), `rank` (fusion,
 * neighbours and recency) and `rerank` (only when a reranker was asked). The embedding runs beside
 * the keyword read, so the parts may overlap and add up to more than the request.
 */
export class SearchTimings {
  private readonly spent = new Map<string, number>();

  /** Awaits `work` and adds its duration under `name`. */
  async time<T>(name: 'embed' | 'db' | 'rank' | 'rerank', work: Promise<T> | (() => Promise<T>)): Promise<T> {
    const started = performance.now();
    try {
      return await (typeof work === 'function' ? work() : work);
    } finally {
      this.spent.set(name, (this.spent.get(name) ?? 0) + (performance.now() - started));
    }
  }

  /** `embed;dur=1.2, db;dur=3.4, rank;dur=0.1`: each part measured, in milliseconds. */
  header(): string {
    return ['embed', 'db', 'rank', 'rerank']
      .filter((name) => this.spent.has(name))
      .map((name) => `${name};dur=${(this.spent.get(name) ?? 0).toFixed(1)}`)
      .join(', ');
  }
}

const timingsOf = new WeakMap<object, SearchTimings>();

/** Ties a search answer to its timings; the route reads them back for the header. */
export function withTimings<T extends object>(answer: T, timings: SearchTimings): T {
  timingsOf.set(answer, timings);
  return answer;
}

/** The `Server-Timing` value of a search answer (empty when it was not timed). */
export const serverTimingOf = (answer: object): string => timingsOf.get(answer)?.header() ?? '';
