// The README's five lines: `npx tsc -p sdk/example` type-checks them against the built package
// (`npm run sdk:build` first); run them with ENGRAM_API_KEY and ENGRAM_URL set.
import { Engram, EngramError } from 'engram-sdk';

const engram = new Engram({ apiKey: process.env.ENGRAM_API_KEY ?? '', baseUrl: process.env.ENGRAM_URL ?? 'http://127.0.0.1:8787' });
await engram.memories.store({ observation: 'The user prefers dark roast coffee', tags: ['coffee'] });
const { memories } = await engram.memories.search({ q: 'what coffee does the user like?', limit: 3 });
for (const m of memories) console.log(m.score.toFixed(2), m.observation);

// Every memory, page after page.
for await (const memory of engram.memories.list({ tags: 'coffee', limit: 50 })) console.log(memory.uuid);

try {
  await engram.memories.get('urn:uuid:00000000-0000-7000-8000-000000000000');
} catch (err) {
  if (err instanceof EngramError) console.log(err.status, err.code, err.requestId);
}
