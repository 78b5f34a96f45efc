/**
 * Erasure of many memories at once, measured through the API (app.request, no sockets): N memories
 * stored through the batch path (100 a call), then erased by their tag in one POST /v1/erasures,
 * a dry run first (the same selection and counting, nothing written). Time and memories/s of each,
 * in the same run. Embedded PGlite by default; DATABASE_URL (and REDIS_URL) to run on Postgres.
 *   npx tsx test/bench/erasure.ts [--memories N]
 */
import { f0, f1, inProcessEngram, table, timed } from './lib';

const arg = (name: string, fallback: number) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? Number(process.argv[i + 1]) : fallback;
};
const MEMORIES = arg('memories', 10_000);
const BATCH = 100;

async function main() {
  const { node, call, newTenant } = await inProcessEngram();
  const tenant = await newTenant();
  const key = tenant.api_key;
  await node.services.signingKey(); // generated now, not inside a measurement
  // Another tenant's memories under the same tag: the erasure must leave them, and pass them by.
  const bystander = await newTenant();
  await call('POST', '/v1/memories/batch', bystander.api_key, {
    memories: Array.from({ length: BATCH }, (_, i) => ({ observation: `Bystander note ${i}`, tags: ['subject:42'] })),
  });

  const text = (i: number) => `Subject 42 note ${i}: ordered item ${i % 97} on day ${i % 31}, shipped to warehouse ${i % 13}.`;
  const [, storeMs] = await timed(async () => {
    for (let i = 0; i < MEMORIES; i += BATCH) {
      const memories = Array.from({ length: Math.min(BATCH, MEMORIES - i) }, (_, j) => ({ observation: text(i + j), tags: ['subject:42'] }));
      await call('POST', '/v1/memories/batch', key, { memories });
    }
  });
  const [dry, dryMs] = await timed(() => call('POST', '/v1/erasures', key, { tags: ['subject:42'], reason: 'bench', dry_run: true }));
  const [receipt, eraseMs] = await timed(() => call('POST', '/v1/erasures', key, { tags: ['subject:42'], reason: 'bench' }));
  if (dry.memory_ids.length !== MEMORIES || receipt.memory_ids.length !== MEMORIES)
    throw new Error(`expected ${MEMORIES} erased, got ${receipt.memory_ids.length}`);
  const left = await call('GET', '/v1/memories?limit=1', bystander.api_key);
  if (left.total !== BATCH) throw new Error('the bystander lost memories');

  const rate = (ms: number) => f0(MEMORIES / (ms / 1000));
  console.log(`\n${MEMORIES} memories, ${node.services.storage} storage, counts ${JSON.stringify(receipt.counts)}\n`);
  console.log(
    table(
      ['step', 'time (s)', 'memories/s'],
      [
        [`store (batch, ${BATCH} a call)`, f1(storeMs / 1000), rate(storeMs)],
        ['erase, dry run', f1(dryMs / 1000), rate(dryMs)],
        ['erase', f1(eraseMs / 1000), rate(eraseMs)],
      ],
    ),
  );
  await node.close();
}

await main();
