// `npm run worker:dev`: the worker under `wrangler dev`, offline, with local stand-ins for what it
// reaches in production. A development tool, not product code. In order:
//   1. Postgres + pgvector: DATABASE_URL if set, else the private instance .ci/services.sh starts
//      (or reuses) on 127.0.0.1:55432 (Debian 12 as root; the first start builds pgvector).
//   2. Migrations (the worker never migrates by itself).
//   3. The Neon WebSocket proxy stand-in, so @neondatabase/serverless reaches that Postgres.
//   4. Embeddings: the offline Universal Sentence Encoder behind a local OpenAI-compatible
//      /v1/embeddings (unless EMBEDDING_PROVIDER is set), so semantic search is real.
//   5. With REDIS_URL: the Upstash REST stand-in in front of it (else rate limits use Postgres).
//   6. The QStash stand-in (unless QSTASH_TOKEN is set): a commit's jobs (webhook deliveries, mail)
//      are called back at once, as in production, instead of waiting for the cron trigger.
//   7. The trace signing key: TRACE_SIGNING_KEY if set, else one generated on first start and kept
//      in DATA_DIR/trace-signing-key.pem (owner-only, git-ignored), so traces verify across restarts.
//   8. wrangler dev --local --test-scheduled with the bindings as --var (they win over .dev.vars).
// Env: PORT (8787), DATABASE_URL, REDIS_URL, ADMIN_TOKEN (random if unset, printed), EMBEDDINGS_PORT
// (8788), INSPECTOR_PORT (wrangler's default 9229), PUBLIC_URL, DATA_DIR (./.data). Every other
// setting of the service found in the environment (WEBHOOKS_ALLOW_INSECURE, LOG_LEVEL, ...) reaches
// the worker as a binding. Arguments go on to wrangler dev.
import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { join, resolve } from 'node:path';
import { openPostgres } from '../../shared/node/database';
import { KEY_FILE, keptSigningKeyPem } from '../../shared/node/signing-key';
import { configSchema } from '../../shared/platform/contract/config';
import { createLogger } from '../../shared/platform/data/log';
import { startFakeQstash } from './fake-qstash';
import { startEmbeddingsServer, EMBEDDINGS_MODEL } from './embeddings-server';
import { startNeonWsProxy } from './neon-ws-proxy';
import { startUpstashProxy } from './upstash-redis-proxy';

const ROOT = new URL('../..', import.meta.url).pathname;
const env = process.env;
const say = (line: string) => console.log(`[worker:dev] ${line}`);
const stops: Array<() => Promise<unknown>> = [];

/** Settings that describe this process, not the worker: they are not passed on as bindings. */
const NOT_FOR_THE_WORKER = new Set(['PORT', 'HOST', 'DATA_DIR', 'REDIS_URL', 'PGLITE_FSYNC', 'TRUST_PROXY']);

/** The service's settings present in the environment, as the worker's bindings. */
function settingsFromEnv(): Record<string, string> {
  return Object.fromEntries(
    Object.keys(configSchema.shape)
      .filter((name) => !NOT_FOR_THE_WORKER.has(name) && env[name] !== undefined)
      .map((name) => [name, env[name]!]),
  );
}

/**
 * .ci/services.sh prints only `export NAME=value` lines on stdout; on stderr (passed on) it says
 * whether it started Postgres and Redis or reused running ones. What it started is stopped again when
 * worker:dev stops (Ctrl-C, SIGTERM, a failed start); what it reused belongs to someone else.
 */
function ciServices(): Promise<{ DATABASE_URL: string; REDIS_URL?: string }> {
  say('DATABASE_URL unset: starting (or reusing) the private Postgres + pgvector from .ci/services.sh ...');
  return new Promise((resolve, reject) => {
    const child = spawn('bash', [join(ROOT, '.ci/services.sh')], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let log = '';
    child.stdout.on('data', (c) => (out += c));
    child.stderr.on('data', (c) => {
      log += c;
      process.stderr.write(c);
    });
    child.on('error', reject);
    // 'exit' can come before the last of stderr is read; 'close' would wait for a daemon that kept it open.
    const stderrRead = new Promise((r) => {
      child.stderr.once('end', r);
      setTimeout(r, 2_000).unref();
    });
    child.on('exit', async (code) => {
      await stderrRead;
      for (const service of ['postgres', 'redis'] as const)
        if (new RegExp(`^\\[services\\] ${service} started`, 'm').test(log)) stops.push(() => stopCiService(service));
      const vars = Object.fromEntries([...out.matchAll(/^export (\w+)=(.*)$/gm)].map((m) => [m[1], m[2]]));
      if (code !== 0 || !vars.DATABASE_URL) reject(new Error(`.ci/services.sh failed (exit ${code}); set DATABASE_URL to a Postgres with pgvector instead`));
      else resolve(vars as { DATABASE_URL: string; REDIS_URL?: string });
    });
  });
}

function stopCiService(service: 'postgres' | 'redis'): Promise<void> {
  return new Promise((resolve) => {
    const child = spawn('bash', [join(ROOT, '.ci/services.sh'), 'stop', service], { stdio: ['ignore', 'ignore', 'inherit'] });
    child.on('error', () => resolve());
    child.on('exit', () => resolve());
  });
}

async function main() {
  const port = Number(env.PORT ?? 8787);
  const services = env.DATABASE_URL ? { DATABASE_URL: env.DATABASE_URL, REDIS_URL: env.REDIS_URL } : await ciServices();
  const vars: Record<string, string> = { ...settingsFromEnv(), DATABASE_URL: services.DATABASE_URL };
  if (vars.WEBHOOKS_ALLOW_INSECURE) say(`WEBHOOKS_ALLOW_INSECURE=${vars.WEBHOOKS_ALLOW_INSECURE}: webhooks may call http:// and local addresses`);

  const database = openPostgres(services.DATABASE_URL, 1);
  try {
    const applied = await database.migrate();
    say(`migrations: ${applied.length ? applied.join(', ') : 'up to date'}`);
  } finally {
    await database.close();
  }

  const neon = await startNeonWsProxy();
  stops.push(() => neon.close());
  vars.NEON_WS_PROXY = `127.0.0.1:${neon.port}`;

  if (!env.EMBEDDING_PROVIDER) {
    const embeddings = await startEmbeddingsServer({ port: Number(env.EMBEDDINGS_PORT ?? 8788) });
    stops.push(() => embeddings.close());
    Object.assign(vars, { EMBEDDING_PROVIDER: 'openai', EMBEDDING_BASE_URL: embeddings.url, EMBEDDING_MODEL: EMBEDDINGS_MODEL, EMBEDDING_DIMENSIONS: '512' });
    say(`embeddings: ${EMBEDDINGS_MODEL} at ${embeddings.url}`);
  }

  if (services.REDIS_URL) {
    const token = randomBytes(16).toString('hex');
    const upstash = await startUpstashProxy({ redisUrl: services.REDIS_URL, token });
    stops.push(() => upstash.close());
    Object.assign(vars, { UPSTASH_REDIS_REST_URL: upstash.url, UPSTASH_REDIS_REST_TOKEN: token });
    say(`redis: ${services.REDIS_URL} through the Upstash REST stand-in at ${upstash.url}`);
  }

  vars.PUBLIC_URL = env.PUBLIC_URL ?? `http://127.0.0.1:${port}`;

  if (!env.QSTASH_TOKEN) {
    const keys = {
      token: randomBytes(16).toString('hex'),
      currentSigningKey: `sig_${randomBytes(16).toString('hex')}`,
      nextSigningKey: `sig_${randomBytes(16).toString('hex')}`,
    };
    const qstash = await startFakeQstash({ ...keys, port: Number(env.QSTASH_FAKE_PORT ?? 0) });
    stops.push(() => qstash.close());
    Object.assign(vars, {
      QSTASH_URL: qstash.url,
      QSTASH_TOKEN: keys.token,
      QSTASH_CURRENT_SIGNING_KEY: keys.currentSigningKey,
      QSTASH_NEXT_SIGNING_KEY: keys.nextSigningKey,
    });
    say(`qstash: the stand-in at ${qstash.url} calls ${vars.PUBLIC_URL} back for every job`);
  }

  if (!env.TRACE_SIGNING_KEY) {
    const dataDir = env.DATA_DIR && !env.DATA_DIR.includes('://') ? env.DATA_DIR : join(ROOT, '.data');
    const path = resolve(dataDir, KEY_FILE);
    const pem = await keptSigningKeyPem(path, createLogger('info'));
    // One line with literal \n, as an operator stores the secret (an argument keeps no newline safely).
    vars.TRACE_SIGNING_KEY = pem.trim().replace(/\n/g, '\\n');
    say(`trace signing key: ${path}`);
  }
  const adminToken = env.ADMIN_TOKEN ?? `dev-${randomBytes(18).toString('base64url')}`;
  vars.ADMIN_TOKEN = adminToken;

  const args = [
    join(ROOT, 'node_modules/wrangler/bin/wrangler.js'),
    'dev',
    '--local',
    '--test-scheduled',
    // wrangler runs in a process group of its own (below), where reading the terminal would stop it.
    '--show-interactive-dev-session=false',
    '--ip',
    '127.0.0.1',
    '--port',
    String(port),
    ...(env.INSPECTOR_PORT ? ['--inspector-port', env.INSPECTOR_PORT] : []),
    ...Object.entries(vars).flatMap(([k, v]) => ['--var', `${k}:${v}`]),
    ...process.argv.slice(2),
  ];
  say(`admin token: ${adminToken}`);
  say(`cron: curl 'http://127.0.0.1:${port}/__scheduled?cron=*/5+*+*+*+*'`);
  const wrangler: ChildProcess = spawn(process.execPath, args, {
    cwd: ROOT,
    stdio: ['ignore', 'inherit', 'inherit'],
    detached: true, // its own process group: one signal stops wrangler, esbuild and workerd
    env: { ...env, CLOUDFLARE_CF_FETCH_ENABLED: 'false', WRANGLER_SEND_METRICS: 'false' },
  });
  let stopping = false;
  const stopAll = async (code: number) => {
    // Ctrl-C signals this process and, when wrangler then exits, its exit calls here again.
    if (stopping) return;
    stopping = true;
    try {
      if (wrangler.exitCode === null && wrangler.signalCode === null) process.kill(-wrangler.pid!, 'SIGTERM');
    } catch {
      /* already gone */
    }
    await Promise.allSettled(stops.reverse().map((s) => s()));
    process.exit(code);
  };
  process.on('SIGINT', () => void stopAll(0));
  process.on('SIGTERM', () => void stopAll(0));
  wrangler.on('exit', (code) => void stopAll(code ?? 0));
}

main().catch(async (err) => {
  console.error(`[worker:dev] ${err instanceof Error ? err.message : String(err)}`);
  await Promise.allSettled(stops.reverse().map((s) => s()));
  process.exit(1);
});
