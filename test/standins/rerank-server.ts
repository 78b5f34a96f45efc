// A Cohere-compatible rerank endpoint (POST /v1/rerank) with a deterministic scorer: the share of
// the query's words a document contains. A test stand-in, not product code: it lets search rerank
// without a network (RERANK_PROVIDER=cohere, RERANK_BASE_URL=http://127.0.0.1:<port>), and its
// `behave` switch makes it slow, down (connections dropped), failing (503) or nonsensical. Loopback only.
//   npx tsx test/standins/rerank-server.ts        # port from RERANK_PORT, default 8789
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { pathToFileURL } from 'node:url';
import { readBody } from './read-body';

export type RerankBehaviour = 'ok' | 'slow' | 'down' | 'failing' | 'nonsense';

export interface RerankServer {
  port: number;
  /** The base URL for RERANK_BASE_URL. */
  url: string;
  /** Requests answered or refused, and the last one's bearer token and model. */
  readonly seen: { requests: number; authorization?: string; model?: string; documents?: number };
  behave(behaviour: RerankBehaviour, opts?: { delayMs?: number }): void;
  close(): Promise<void>;
}

const words = (text: string) => new Set(text.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? []);

/** The share of the query's distinct words that `document` contains, in [0,1]. */
export function overlapScore(query: string, document: string): number {
  const wanted = words(query);
  if (!wanted.size) return 0;
  const have = words(document);
  let shared = 0;
  for (const w of wanted) if (have.has(w)) shared += 1;
  return shared / wanted.size;
}

function reply(res: http.ServerResponse, status: number, body: unknown) {
  res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
}

export async function startRerankServer({ port = 0 }: { port?: number } = {}): Promise<RerankServer> {
  let behaviour: RerankBehaviour = 'ok';
  let delayMs = 0;
  const seen: RerankServer['seen'] = { requests: 0 };
  const server = http.createServer(async (req, res) => {
    const path = new URL(req.url ?? '/', 'http://x').pathname.replace(/\/+$/, '');
    if (req.method !== 'POST' || path !== '/v1/rerank') return reply(res, 404, { message: `no route for ${req.method} ${path}` });
    seen.requests += 1;
    seen.authorization = req.headers.authorization;
    if (behaviour === 'down') return req.socket.destroy();
    let body: { query?: unknown; documents?: unknown; top_n?: unknown; model?: unknown };
    try {
      const raw = await readBody(req);
      if (!raw) return;
      body = JSON.parse(raw.toString('utf8'));
    } catch {
      return reply(res, 400, { message: 'body is not JSON' });
    }
    const { query, documents } = body;
    if (typeof query !== 'string' || !Array.isArray(documents) || !documents.every((d) => typeof d === 'string')) {
      return reply(res, 400, { message: 'query must be a string and documents a list of strings' });
    }
    seen.model = typeof body.model === 'string' ? body.model : undefined;
    seen.documents = documents.length;
    if (behaviour === 'slow' || delayMs) await new Promise((r) => setTimeout(r, delayMs || 5_000));
    if (res.destroyed) return;
    if (behaviour === 'failing') return reply(res, 503, { message: 'overloaded' });
    if (behaviour === 'nonsense') return reply(res, 200, { results: [{ index: documents.length + 3, relevance_score: 'high' }] });
    const topN = typeof body.top_n === 'number' ? body.top_n : documents.length;
    const results = documents
      .map((d, index) => ({ index, relevance_score: overlapScore(query, d) }))
      .sort((a, b) => b.relevance_score - a.relevance_score || a.index - b.index)
      .slice(0, topN);
    reply(res, 200, { id: crypto.randomUUID(), results, meta: { billed_units: { search_units: 1 } } });
  });

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', resolve);
  });
  const bound = (server.address() as AddressInfo).port;
  return {
    port: bound,
    url: `http://127.0.0.1:${bound}`,
    seen,
    behave(next, opts = {}) {
      behaviour = next;
      delayMs = opts.delayMs ?? 0;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const server = await startRerankServer({ port: Number(process.env.RERANK_PORT ?? 8789) });
  console.log(`rerank (word overlap) at ${server.url}/v1/rerank`);
  const stop = () => void server.close().then(() => process.exit(0));
  process.on('SIGINT', stop);
  process.on('SIGTERM', stop);
}
