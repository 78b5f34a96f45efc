import { ConfigError, parseConfig } from '../shared/platform/contract/config';
import { createLogger } from '../shared/platform/data/log';
import { logConfigWarnings } from '../shared/platform/http/startup';
import { openPglite, openPostgres } from '../shared/node/database';
import { baseUrl, developmentOperatorToken, firstRunBanner, OPERATOR_API_OFF_HINT } from '../shared/node/first-run';
import { listen } from '../shared/node/http-server';
import { createNodeServices } from '../shared/node/services';
import { gracefulStop, trackResponses } from '../shared/node/shutdown';
import { startTracing } from '../shared/node/tracing';
import { VERSION } from '../shared/platform/contract/services';
import { buildApp } from './app';
import { jobHandlers, maintenanceTasks } from './registry';

/** Node entry point: `npm start` serves; `npm run db:migrate` only applies migrations. */
async function main() {
  let config = parseConfig(process.env);
  const log = createLogger(config.LOG_LEVEL);

  if (process.argv[2] === 'migrate') {
    const database = config.DATABASE_URL
      ? openPostgres(config.DATABASE_URL, 1, { shortcuts: config.DB_DRIVER_SHORTCUTS })
      : await openPglite({ dataDir: config.DATA_DIR, durable: config.PGLITE_FSYNC, shortcuts: config.DB_DRIVER_SHORTCUTS });
    const applied = await database.migrate();
    log.info('migrations', { applied, storage: database.storage });
    await database.close();
    return;
  }

  logConfigWarnings(config, log);
  const devToken = developmentOperatorToken(config);
  if (devToken) config = { ...config, ADMIN_TOKEN: devToken };
  const tracing = config.OTEL_EXPORTER_OTLP_ENDPOINT ? startTracing(config.OTEL_EXPORTER_OTLP_ENDPOINT, config.OTEL_SERVICE_NAME, VERSION) : null;
  const node = await createNodeServices(config, {
    log,
    jobHandlers: jobHandlers(config, log),
    maintenance: maintenanceTasks,
    ...(tracing ? { tracing: tracing.tracing } : {}),
  });
  node.runner.start();
  const app = buildApp(() => node.services);
  const { server, address } = await listen(app.fetch, { host: config.HOST, port: config.PORT });
  trackResponses(server);
  const url = baseUrl(config.HOST, address.port);
  log.info('engram listening', {
    url,
    storage: node.services.storage,
    data_dir: node.services.storage === 'embedded' ? config.DATA_DIR : undefined,
    redis: Boolean(config.REDIS_URL),
    docs: `${url}/docs`,
  });
  // Deliberately on the console, not in the log: the one-time token is the point of this message.
  if (devToken) console.log(firstRunBanner(url, devToken));
  else if (!config.ADMIN_TOKEN) log.info(OPERATOR_API_OFF_HINT);

  let stopping = false;
  const shutdown = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    log.info('shutting down', { signal, grace_ms: config.SHUTDOWN_GRACE_MS });
    const { forced } = await gracefulStop(server, node, config.SHUTDOWN_GRACE_MS);
    await tracing?.shutdown(); // flushes the spans still batched
    log.info('stopped', { forced });
    process.exit(0);
  };
  process.on('SIGINT', () => void shutdown('SIGINT'));
  process.on('SIGTERM', () => void shutdown('SIGTERM'));
}

main().catch((err) => {
  if (err instanceof ConfigError) {
    console.error(err.message);
    process.exit(2);
  }
  console.error(err);
  process.exit(1);
});
