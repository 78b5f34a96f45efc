import type { TestProject } from 'vitest/node';
import { openPostgres } from '../../shared/node/database';
import { startFakeQstash } from '../standins/fake-qstash';
import { startNeonWsProxy } from '../standins/neon-ws-proxy';
import { startRerankServer } from '../standins/rerank-server';
import { startUpstashProxy } from '../standins/upstash-redis-proxy';
import { generateSigningKeyPem } from '../../shared/platform/contract/trace-signing';

/**
 * Node side of the Workers smoke suite, run once before any project starts: migrate the real
 * database, start the three stand-ins for hosted services on free loopback ports, and provide the
 * worker's bindings. The workerd project turns them into miniflare bindings (vitest.config.ts reads
 * them with the plugin's `inject`); the wrangler-dev test passes them as `--var`s.
 */
export default async function setup(project: TestProject) {
  const databaseUrl = process.env.TEST_DATABASE_URL;
  const redisUrl = process.env.TEST_REDIS_URL;
  if (!databaseUrl || !redisUrl) {
    throw new Error(
      'The Workers smoke suite needs TEST_DATABASE_URL (Postgres 15 + pgvector) and TEST_REDIS_URL. Start private ones with\n' +
        '  out=$(bash .ci/services.sh) && eval "$out" && TEST_DATABASE_URL=$DATABASE_URL TEST_REDIS_URL=$REDIS_URL npm run test:workers',
    );
  }

  const database = openPostgres(databaseUrl, 1);
  try {
    await database.migrate();
  } finally {
    await database.close();
  }

  const upstashToken = `upstash-${crypto.randomUUID()}`;
  const qstashToken = `qstash-${crypto.randomUUID()}`;
  const currentSigningKey = `sig_current_${crypto.randomUUID()}`;
  const nextSigningKey = `sig_next_${crypto.randomUUID()}`;

  const started: Array<{ close(): Promise<void> }> = [];
  const closeAll = async () => {
    await Promise.allSettled(started.reverse().map((s) => s.close()));
  };
  try {
    const neon = await startNeonWsProxy();
    started.push(neon);
    // One test's own, so that what it counts is only its requests (test files run side by side).
    const countingNeon = await startNeonWsProxy();
    started.push(countingNeon);
    const upstash = await startUpstashProxy({ redisUrl, token: upstashToken });
    started.push(upstash);
    const qstash = await startFakeQstash({ token: qstashToken, currentSigningKey, nextSigningKey });
    started.push(qstash);
    const rerank = await startRerankServer();
    started.push(rerank);

    const bindings: WorkerBindings = {
      DATABASE_URL: databaseUrl,
      NEON_WS_PROXY: `127.0.0.1:${neon.port}`,
      TEST_COUNTING_NEON_WS_PROXY: `127.0.0.1:${countingNeon.port}`,
      TEST_RERANK_URL: rerank.url,
      UPSTASH_REDIS_REST_URL: upstash.url,
      UPSTASH_REDIS_REST_TOKEN: upstashToken,
      QSTASH_URL: qstash.url,
      QSTASH_TOKEN: qstashToken,
      QSTASH_CURRENT_SIGNING_KEY: currentSigningKey,
      QSTASH_NEXT_SIGNING_KEY: nextSigningKey,
      // Nothing serves the worker here, so QStash deliveries go nowhere (.invalid never resolves);
      // the wrangler-dev test replaces it with its own address. The Receiver only compares URLs.
      PUBLIC_URL: 'https://engram.invalid',
      ADMIN_TOKEN: `admin-${crypto.randomUUID()}`,
      LOG_LEVEL: 'silent',
      // No Workers AI account here; the deterministic provider stands in for it.
      EMBEDDING_PROVIDER: 'hash',
      // A secret as an operator would store it: the PEM on one line with literal \n (wrangler --var too).
      TRACE_SIGNING_KEY: (await generateSigningKeyPem()).trim().replace(/\n/g, '\\n'),
    };
    project.provide('workerBindings', bindings);
  } catch (err) {
    await closeAll();
    throw err;
  }
  return closeAll;
}

export interface WorkerBindings {
  DATABASE_URL: string;
  NEON_WS_PROXY: string;
  /** Not the worker's: a second Neon proxy stand-in, for test/workers/connections.test.ts (GET /stats counts). */
  TEST_COUNTING_NEON_WS_PROXY: string;
  /** Not the worker's: the rerank stand-in (Cohere wire), for test/workers/rerank.test.ts's RERANK_BASE_URL. */
  TEST_RERANK_URL: string;
  UPSTASH_REDIS_REST_URL: string;
  UPSTASH_REDIS_REST_TOKEN: string;
  QSTASH_URL: string;
  QSTASH_TOKEN: string;
  QSTASH_CURRENT_SIGNING_KEY: string;
  QSTASH_NEXT_SIGNING_KEY: string;
  PUBLIC_URL: string;
  ADMIN_TOKEN: string;
  LOG_LEVEL: string;
  EMBEDDING_PROVIDER: string;
  TRACE_SIGNING_KEY: string;
}

declare module 'vitest' {
  export interface ProvidedContext {
    workerBindings: WorkerBindings;
  }
}
