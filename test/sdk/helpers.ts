import { Engram, type FetchLike } from '../../sdk/src/index';
import type { TestEngine } from '../harness';

export const BASE = 'http://engram.test';

/** The in-process app as the SDK's fetch: real routes, middleware and database, no socket. */
export const engineFetch =
  (engine: TestEngine): FetchLike =>
  (url, init) =>
    engine.app.fetch(new Request(url, init)) as Promise<Response>;

/** A client of the in-process app for `key`, with short retry waits unless told otherwise. */
export function sdkFor(engine: TestEngine, key: string, opts: { fetch?: FetchLike; maxRetries?: number } = {}) {
  return new Engram({ apiKey: key, baseUrl: BASE, fetch: opts.fetch ?? engineFetch(engine), maxRetries: opts.maxRetries });
}
