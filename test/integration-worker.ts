import { inject } from 'vitest';
import { workerDatabaseName } from './global-setup';

/**
 * Before each integration file: its worker's own database and Redis database number
 * (`test/global-setup.ts`, "copyPerWorker"). Set from the servers the run was given, every time,
 * because a worker runs many files in one process.
 */
const { databaseUrl, redisUrl } = inject('integrationServers');
const workerId = Number(process.env.VITEST_POOL_ID ?? '1');
const database = new URL(databaseUrl);
database.pathname = `/${workerDatabaseName(database.pathname.slice(1), workerId)}`;
const redis = new URL(redisUrl);
redis.pathname = `/${workerId}`;
process.env.TEST_DATABASE_URL = database.toString();
process.env.TEST_REDIS_URL = redis.toString();
