/**
 * One more server process for test/bench/http.ts (`--instances 2`): a bare Hono hello-world and an
 * engram server wired like functions/node.ts on the DATABASE_URL and REDIS_URL it is given, each
 * with the same request tallies as the bench's own. Prints one JSON line with both URLs, then
 * serves until its parent closes stdin.
 */
import { serve, type ServerType } from '@hono/node-server';
import { Hono } from 'hono';
import { buildApp } from '../../functions/app';
import { parseConfig } from '../../shared/platform/contract/config';
import { createNodeServices } from '../../shared/node/services';

type Fetch = (req: Request, env: unknown) => Response | Promise<Response>;
const listen = (fetch: Fetch) =>
  new Promise<{ server: ServerType; url: string }>((resolve) => {
    const server = serve({ fetch, port: 0, hostname: '127.0.0.1' }, (info) => resolve({ server, url: `http://127.0.0.1:${info.port}` }));
  });

const config = parseConfig({
  PORT: '0',
  DATABASE_URL: process.env.DATABASE_URL,
  REDIS_URL: process.env.REDIS_URL,
  ADMIN_TOKEN: process.env.BENCH_ADMIN_TOKEN,
  LOG_LEVEL: 'silent',
  RATE_LIMIT_SCALE: '1000',
});
const node = await createNodeServices(config);
node.runner.start();
const app = buildApp(() => node.services);
const tally = { arrived: 0, served: 0, inFlight: 0 };
const bare = await listen(new Hono().get('/', (c) => c.text('ok')).fetch);
const engram = await listen(async (req, env) => {
  if (req.url.endsWith('/__bench/tally')) return Response.json(tally);
  const usagePath = req.url.endsWith('/v1/usage');
  if (usagePath) tally.arrived++;
  tally.inFlight++;
  try {
    const res = await app.fetch(req, env as never);
    if (usagePath && res.status < 300) tally.served++;
    return res;
  } finally {
    tally.inFlight--;
  }
});
console.log(JSON.stringify({ bare: bare.url, engram: engram.url }));
process.stdin.resume();
process.stdin.on('end', async () => {
  bare.server.close();
  engram.server.close();
  (engram.server as { closeAllConnections?: () => void }).closeAllConnections?.();
  await node.close();
  process.exit(0);
});
