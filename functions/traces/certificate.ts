import canonicalize from 'canonicalize';
import { SIGNATURE_ALGORITHM } from '../../shared/platform/contract/trace-signing';
import type { StepRow, TraceRow } from './queries';

/** A step as a certificate lists it; its content is bound through `integrity_hash`. */
export interface CertifiedStep {
  step_index: number;
  type: StepRow['type'];
  integrity_hash: string;
  chain_hash: string;
}

type Sealed = Pick<TraceRow, 'id' | 'agentId' | 'description' | 'tags' | 'status' | 'stepCount' | 'certificateVersion'> & {
  integrityRootHash: string;
  signature: string;
  keyId: string;
  signedAt: Date;
};

/**
 * Every field of a certificate but `certificate_signature` and the step contents an
 * `include_content` certificate adds (docs/change-control.md#the-hashes): what
 * `certificate_signature` covers, as the JCS bytes of this object, so no field a verifier shows
 * can change without breaking a signature.
 */
export function certificateBody(trace: Sealed, publicKey: string, steps: CertifiedStep[]) {
  return {
    certificate_version: trace.certificateVersion,
    trace_id: trace.id,
    agent_id: trace.agentId,
    description: trace.description,
    tags: trace.tags,
    status: trace.status,
    step_count: trace.stepCount,
    integrity_root_hash: trace.integrityRootHash,
    signature: trace.signature,
    signature_algorithm: SIGNATURE_ALGORITHM,
    signed_at: trace.signedAt.toISOString(),
    key_id: trace.keyId,
    public_key: publicKey,
    steps,
  };
}

/** The bytes `certificate_signature` signs: RFC 8785 (JCS) of the body. */
export const certificateBytes = (body: ReturnType<typeof certificateBody>) => canonicalize(body)!;
