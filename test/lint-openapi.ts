/**
 * `npm run lint:openapi`: builds the app with the test configuration (embedded in-memory PGlite,
 * hash embeddings), fetches /openapi.json from it in-process and prints Redocly's lint of it with
 * the rules of test/redocly.yaml. Exits 1 when there is an error, like test/openapi.test.ts fails.
 */
import { buildApp } from '../functions/app';
import { openPglite } from '../shared/node/database';
import { createNodeServices } from '../shared/node/services';
import { parseConfig } from '../shared/platform/contract/config';
import { createLogger } from '../shared/platform/data/log';
import { lintOpenApi } from './openapi-lint';

const config = parseConfig({ DATA_DIR: 'memory://', EMBEDDING_PROVIDER: 'hash', LOG_LEVEL: 'silent' });
const node = await createNodeServices(config, { database: await openPglite({ dataDir: 'memory://' }), log: createLogger('silent') });
try {
  const res = await buildApp(() => node.services).request('/openapi.json');
  if (res.status !== 200) throw new Error(`GET /openapi.json answered ${res.status}`);
  const result = await lintOpenApi(await res.json());
  console.log(result.report);
  process.exitCode = result.errors.length ? 1 : 0;
} finally {
  await node.close();
}
