import type { z } from '@hono/zod-openapi';
import type { TenantCtx } from '../../shared/platform/contract/context';
import { verifySignature } from '../../shared/platform/contract/trace-signing';
import { certificateBody, certificateBytes } from './certificate';
import { chainHash, digestOf, EMPTY_ROOT, integrityHash } from './hashing';
import * as q from './queries';
import type { Discrepancy } from './schemas';
import { sealedOnly, traceFor } from './service';

type Found = z.infer<typeof Discrepancy>;
const BATCH = 500;

/**
 * Recomputes a sealed trace from its stored rows. Each step is checked on its own (its fields hash
 * to its integrity hash; it links to the step before; its chain hash is the hash of that link and
 * its integrity hash), so a discrepancy names the step that was changed rather than every step
 * after it; then the indexes, the count and the root, then both signatures with the key of key_id
 * (the root's, and from certificate version 2 the certificate's, over the fields as stored now).
 */
export async function verifyTrace(ctx: TenantCtx, input: { traceId: string }) {
  const trace = sealedOnly(await traceFor(ctx, input.traceId));
  const digest = digestOf(ctx.services);
  const found: Found[] = [];
  const at = (step: q.StepRow | null, problem: Found['problem'], detail: string) =>
    found.push({ step_index: step?.stepIndex ?? null, step_id: step?.id ?? null, problem, detail });

  let expected = 0;
  let previousChain: string | null = null;
  let seen = 0;
  for (let after = -1; ; ) {
    const batch = await q.stepsAfter(ctx.db, ctx.tenantId, trace.id, after, BATCH);
    for (const step of batch) {
      seen++;
      if (step.stepIndex > expected) {
        const gap = step.stepIndex - expected === 1 ? `step ${expected} is missing` : `steps ${expected} to ${step.stepIndex - 1} are missing`;
        found.push({ step_index: expected, step_id: null, problem: 'missing_step', detail: gap });
      }
      const fields = {
        trace_id: trace.id,
        step_index: step.stepIndex,
        type: step.type,
        content: step.content,
        metadata: step.metadata,
        created_at: step.createdAt,
      };
      if ((await integrityHash(digest, fields, trace.certificateVersion)) !== step.integrityHash) {
        at(step, 'integrity_hash_mismatch', 'its fields do not hash to the stored integrity hash: the step was changed after it was recorded');
      }
      if (step.previousChainHash !== previousChain) {
        at(
          step,
          'previous_chain_hash_mismatch',
          step.stepIndex === 0 ? 'the first step must not name a previous chain hash' : 'does not link to the chain hash of the step before it',
        );
      }
      if ((await chainHash(digest, step.previousChainHash, step.integrityHash)) !== step.chainHash) {
        at(step, 'chain_hash_mismatch', 'is not the SHA-256 of previous_chain_hash + integrity_hash');
      }
      previousChain = step.chainHash;
      expected = step.stepIndex + 1;
    }
    if (batch.length < BATCH) break;
    after = batch[batch.length - 1].stepIndex;
  }

  if (seen !== trace.stepCount || expected !== trace.stepCount) {
    if (expected < trace.stepCount)
      found.push({
        step_index: expected,
        step_id: null,
        problem: 'missing_step',
        detail: `the trace was sealed with ${trace.stepCount} steps; steps from ${expected} on are missing`,
      });
    else if (expected > trace.stepCount)
      found.push({
        step_index: trace.stepCount,
        step_id: null,
        problem: 'unexpected_step',
        detail: `the trace was sealed with ${trace.stepCount} steps; later steps were added`,
      });
    found.push({ step_index: null, step_id: null, problem: 'step_count_mismatch', detail: `${seen} steps stored, ${trace.stepCount} sealed` });
  }
  if ((previousChain ?? EMPTY_ROOT) !== trace.integrityRootHash) {
    found.push({ step_index: null, step_id: null, problem: 'root_hash_mismatch', detail: 'the last stored chain hash is not the sealed integrity_root_hash' });
  }
  const chainValid = found.length === 0;

  const publicKey = await q.publicKeyOf(ctx.db, trace.keyId);
  const signatureValid = publicKey !== null && (await verifySignature(publicKey, trace.integrityRootHash, trace.signature));
  if (!publicKey) found.push({ step_index: null, step_id: null, problem: 'signing_key_unknown', detail: `no public key on record for key_id ${trace.keyId}` });
  else if (!signatureValid)
    found.push({
      step_index: null,
      step_id: null,
      problem: 'signature_invalid',
      detail: 'the signature does not verify over integrity_root_hash with the key of key_id',
    });

  let certificateValid = true;
  if (publicKey && trace.certificateVersion >= 2) {
    const body = certificateBody(trace, publicKey, await q.stepHashes(ctx.db, ctx.tenantId, trace.id));
    certificateValid = trace.certificateSignature !== null && (await verifySignature(publicKey, certificateBytes(body), trace.certificateSignature));
    if (!certificateValid)
      found.push({
        step_index: null,
        step_id: null,
        problem: 'certificate_signature_invalid',
        detail: 'certificate_signature does not verify over the certificate as stored: its trace, agent, status, time or a step type was changed',
      });
  }

  return {
    trace_id: trace.id,
    valid: chainValid && signatureValid && certificateValid,
    chain_valid: chainValid,
    signature_valid: signatureValid && certificateValid,
    discrepancies: found.length ? found : null,
    step_count: trace.stepCount,
    key_id: trace.keyId,
  };
}
