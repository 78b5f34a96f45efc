/**
 * `npm run openapi:snapshot`: rewrites test/openapi.snapshot.json from the served /openapi.json and
 * docs/errors.md from the error table. test/openapi.test.ts fails when either differs from what
 * the code serves, so every change of the contract shows in review.
 */
import { writeFileSync } from 'node:fs';
import { buildApp } from '../functions/app';
import { openPglite } from '../shared/node/database';
import { createNodeServices } from '../shared/node/services';
import { parseConfig } from '../shared/platform/contract/config';
import { errorsMarkdown } from '../shared/platform/contract/error-docs';
import { createLogger } from '../shared/platform/data/log';
import { ERRORS_DOC_PATH, SNAPSHOT_PATH, snapshotOf } from './openapi-snapshot-file';

const config = parseConfig({ DATA_DIR: 'memory://', EMBEDDING_PROVIDER: 'hash', LOG_LEVEL: 'silent', SVC_ENABLE_EXPERIMENTAL: '1' });
const node = await createNodeServices(config, { database: await openPglite({ dataDir: 'memory://' }), log: createLogger('silent') });
try {
  const res = await buildApp(() => node.services).request('/openapi.json');
  if (res.status !== 200) throw new Error(`GET /openapi.json answered ${res.status}`);
  writeFileSync(SNAPSHOT_PATH, snapshotOf(await res.json()));
  writeFileSync(ERRORS_DOC_PATH, errorsMarkdown());
  console.log(`wrote ${SNAPSHOT_PATH} and ${ERRORS_DOC_PATH}`);
} finally {
  await node.close();
}
