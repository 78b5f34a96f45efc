import { traceSigningKeys } from '../../../schema';
import type { DbOrTx } from './db';
import type { SigningKey } from '../contract/trace-signing';

/**
 * Keeps the public half of a key that signs (a trace seal, an erasure receipt), once, so what it
 * signed verifies after it is rotated out.
 */
export async function registerKey(db: DbOrTx, key: SigningKey, algorithm: string, at: Date) {
  await db.insert(traceSigningKeys).values({ keyId: key.keyId, publicKey: key.publicKeyPem, algorithm, firstUsedAt: at }).onConflictDoNothing();
}
