import { serve } from '@hono/node-server';
import { ConfigError, parseConfig } from '../shared/config';
import { createLogger } from '../shared/log';
import { openPglite, openPostgres } from '../shared/node/database';
import { createNodeServices } from '../shared/node/services';
import { buildApp } from './app';
import { jobHandlers, maintenanceTasks } from './registry';

/** Node entry point: `npm start` serves; `npm run db:migrate` only applies migrations. */
async function main() {
  const config = parseConfig(process.env);
  const log = createLogger(config.LOG_LEVEL);

  if (process.argv[2] === 'migrate') {
    const database = config.DATABASE_URL ? openPostgres(config.DATABASE_URL, 1) : await openPglite({ dataDir: config.DATA_DIR });
    const applied = await database.migrate();
    log.info('migrations', { applied, storage: database.storage });
    await database.close();
    return;
  }

  const node = await createNodeServices(config, { log, jobHandlers: jobHandlers(config, log), maintenance: maintenanceTasks });
  node.runner.start();
  const app = buildApp(() => node.services);
  const server = serve({ fetch: app.fetch, port: config.PORT }, (info) => {
    log.info('engram listening', {
      url: `http://localhost:${info.port}`,
      storage: node.services.storage,
      data_dir: node.services.storage === 'embedded' ? config.DATA_DIR : undefined,
      redis: Boolean(config.REDIS_URL),
      docs: `http://localhost:${info.port}/docs`,
    });
  });

  let stopping = false;
  const shutdown = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    log.info('shutting down', { signal });
    server.close();
    await node.close();
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
