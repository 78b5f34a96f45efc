// An OpenAI-compatible embeddings endpoint (POST /v1/embeddings) serving the offline Universal
// Sentence Encoder lite (512-d) that the Node deployment embeds with. A development stand-in, not
// product code: it lets the worker under `wrangler dev` run real semantic search without a network
// (EMBEDDING_PROVIDER=openai, EMBEDDING_BASE_URL=http://127.0.0.1:<port>/v1). Loopback only.
//   npx tsx test/standins/embeddings-server.ts        # port from EMBEDDINGS_PORT, default 8788
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { pathToFileURL } from 'node:url';
import { useEmbedder, warmUpUse } from '../../shared/node/embed-use';

export const EMBEDDINGS_MODEL = 'universal-sentence-encoder-lite';
const MAX_BODY = 4 * 1024 * 1024;
const MAX_INPUTS = 2048;

export interface EmbeddingsServer {
  port: number;
  url: string;
  close(): Promise<void>;
}

function reply(res: http.ServerResponse, status: number, body: unknown) {
  res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
}
const failure = (message: string, type = 'invalid_request_error') => ({ error: { message, type } });

export async function startEmbeddingsServer({ port = 0 }: { port?: number } = {}): Promise<EmbeddingsServer> {
  await warmUpUse(); // about half a second, once: the first request should not pay for it
  const embedder = useEmbedder();

  const server = http.createServer((req, res) => {
    const path = new URL(req.url ?? '/', 'http://x').pathname.replace(/\/+$/, '');
    if (req.method === 'GET' && path === '/v1/models') {
      return reply(res, 200, { object: 'list', data: [{ id: EMBEDDINGS_MODEL, object: 'model', owned_by: 'local' }] });
    }
    if (req.method !== 'POST' || path !== '/v1/embeddings') return reply(res, 404, failure(`no route for ${req.method} ${path}`));
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (c: Buffer) => {
      size += c.length;
      if (size > MAX_BODY) req.destroy();
      else chunks.push(c);
    });
    req.on('end', async () => {
      let body: { input?: unknown; model?: unknown; dimensions?: unknown };
      try {
        body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
      } catch {
        return reply(res, 400, failure('body is not JSON'));
      }
      const input = typeof body.input === 'string' ? [body.input] : body.input;
      if (!Array.isArray(input) || input.length === 0 || input.length > MAX_INPUTS || !input.every((t) => typeof t === 'string')) {
        return reply(res, 400, failure(`input must be a string or 1..${MAX_INPUTS} strings`));
      }
      if (body.dimensions !== undefined && body.dimensions !== embedder.dimension) {
        return reply(res, 400, failure(`this model has ${embedder.dimension} dimensions`));
      }
      try {
        const vectors = await embedder.embed(input);
        const tokens = input.reduce((n, t) => n + t.split(/\s+/).filter(Boolean).length, 0);
        reply(res, 200, {
          object: 'list',
          data: vectors.map((embedding, index) => ({ object: 'embedding', index, embedding })),
          model: typeof body.model === 'string' ? body.model : EMBEDDINGS_MODEL,
          usage: { prompt_tokens: tokens, total_tokens: tokens },
        });
      } catch (err) {
        reply(res, 500, failure(err instanceof Error ? err.message : String(err), 'server_error'));
      }
    });
  });

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', resolve);
  });
  const bound = (server.address() as AddressInfo).port;
  return {
    port: bound,
    url: `http://127.0.0.1:${bound}/v1`,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections(); // keep-alive sockets from the worker's fetch would hold it open
      }),
  };
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const server = await startEmbeddingsServer({ port: Number(process.env.EMBEDDINGS_PORT ?? 8788) });
  console.log(`embeddings (${EMBEDDINGS_MODEL}, 512-d) at ${server.url}/embeddings`);
  const stop = () => void server.close().then(() => process.exit(0));
  process.on('SIGINT', stop);
  process.on('SIGTERM', stop);
}
