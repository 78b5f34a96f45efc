import canonicalize from 'canonicalize';
import { type Digest, digestOf } from '../../shared/platform/contract/crypto';

export { type Digest, digestOf };

/**
 * The hashing of docs/architecture.md#trace-hashing, a public contract: anyone can recompute it without our code
 * (docs/change-control.md does it with openssl and sha256sum; test/traces.test.ts with node:crypto).
 *
 * A trace keeps the certificate version it was started with, so its steps hash one way to the end:
 * version 1 (traces started before certificates were signed whole) hashes
 * `{trace_id, step_index, type, content, metadata}`; version 2 adds the step's `created_at`.
 */
export const CERTIFICATE_VERSION = 2;

export interface HashedFields {
  trace_id: string;
  step_index: number;
  type: string;
  content: string;
  metadata: Record<string, unknown>;
  created_at: Date;
}

/** SHA-256 hex of the RFC 8785 (JSON Canonicalization Scheme) bytes of every field of the step. */
export const integrityHash = async (digest: Digest, step: HashedFields, version: number) => {
  const fields = { trace_id: step.trace_id, step_index: step.step_index, type: step.type, content: step.content, metadata: step.metadata };
  return digest(canonicalize(version >= 2 ? { ...fields, created_at: step.created_at.toISOString() } : fields)!);
};

/** SHA-256 hex of the UTF-8 string previous chain hash + integrity hash (the empty string before the first step). */
export const chainHash = async (digest: Digest, previous: string | null, integrity: string) => digest((previous ?? '') + integrity);

/** The root of a trace without steps: SHA-256 of the empty string. */
export const EMPTY_ROOT = 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855';
