import { z } from '@hono/zod-openapi';
import { STEP_TYPES, TRACE_STATUSES } from '../../schema/traces';
import { idPattern } from '../../shared/platform/contract/ids';
import { Metadata, PrefixedId } from '../../shared/platform/contract/params';
import { PageQuery, paging } from '../../shared/platform/data/pagination';
import { isoOrNull } from '../../shared/platform/contract/time';
import { SIGNATURE_ALGORITHM } from '../../shared/platform/contract/trace-signing';
import type { StepRow, TraceRow } from './queries';

export const MAX_CONTENT_BYTES = 64 * 1024;
/** A trace's steps are read, hashed and verified whole: past this many it should be split. */
export const MAX_STEPS = 10_000;
export const MAX_STEPS_PAGE = 1_000;

const utf8Bytes = (s: string) => new TextEncoder().encode(s).length;
const id = idPattern('trace');
const step = idPattern('step');
const HASH = 'a3f1c2d4e5b60718293a4b5c6d7e8f9012a3b4c5d6e7f8091a2b3c4d5e6f7081';
const CHAIN = '5b2e8c1d0f9a7e6d5c4b3a29180f7e6d5c4b3a29180f7e6d5c4b3a29180f7e6d';
// Examples only: a real signature is 684 base64 characters, a real key about 800.
const SIGNATURE = 'kR9vQm3tX0bYzL8wP2sJdF6hN1cA4eU7iO5gT9yB3nM0qW8rE2tY6uI1oP4aS7dF+Lh2Vw==';
const TIME = '2026-11-15T12:00:00.000Z';
const Id = z.string().openapi({ example: id.example });
const StepId = z.string().openapi({ example: step.example });
const Hash = (description: string) => z.string().openapi({ description, example: HASH });

export const TraceParams = z.object({ trace_id: PrefixedId('trace', 'The trace') });

const AgentId = z.string().trim().min(1).max(128).openapi({ example: 'billing-agent' });

export const StartBody = z
  .object({
    agent_id: AgentId,
    description: z.string().max(2_000).optional().openapi({ example: 'Refund order 42' }),
    tags: z
      .array(z.string().trim().min(1).max(50))
      .max(20)
      .default([])
      .openapi({ description: 'Up to 20 labels of 1 to 50 characters', example: ['refunds'] }),
  })
  .openapi('TraceStart', { example: { agent_id: 'refund-agent', description: 'Refund order 42', tags: ['refunds'] } });

export const StartedTrace = z.object({ trace_id: Id, status: z.literal('active'), created_at: z.string().openapi({ example: TIME }) }).openapi('TraceStarted');

export const StepBody = z
  .object({
    type: z.enum(STEP_TYPES).openapi({ description: 'What the step records; `ERROR` with `metadata.fatal: true` ends the trace as `failed`' }),
    content: z
      .string()
      .refine((s) => utf8Bytes(s) <= MAX_CONTENT_BYTES, `must be at most ${MAX_CONTENT_BYTES} bytes`)
      .openapi({ description: `The step's text, up to ${MAX_CONTENT_BYTES / 1024} KB`, example: 'POST /v1/refunds {"order": 42}' }),
    metadata: Metadata('Hashed with the step; `{}` when absent.', { tool: 'stripe', undo: 'Charge order 42 again' }).default({}),
  })
  .openapi('TraceStepInput', {
    example: { type: 'ACTION', content: 'POST /v1/refunds {"order": 42}', metadata: { tool: 'stripe', undo: 'Charge order 42 again' } },
  });

export const AddedStep = z
  .object({
    step_id: StepId,
    step_index: z.number().int().openapi({ description: 'Zero-based position in the trace' }),
    type: z.enum(STEP_TYPES),
    integrity_hash: Hash('SHA-256 hex of the RFC 8785 (JCS) bytes of {trace_id, step_index, type, content, metadata, created_at}'),
    integrity_chain_hash: z.string().openapi({ description: 'SHA-256 hex of previous chain hash + integrity_hash', example: CHAIN }),
    previous_chain_hash: z.string().nullable().openapi({ description: 'The chain hash this step extended; null for the first step', example: null }),
    was_interrupted: z.boolean().openapi({ description: 'Always false here: only the last step of a trace sealed as `interrupted` is flagged' }),
    trace_status: z.enum(TRACE_STATUSES).openapi({ description: '`failed` when this was a fatal ERROR step, else `active`' }),
    created_at: z.string().openapi({ example: TIME }),
  })
  .openapi('TraceStepAdded');

const Sealed = {
  integrity_root_hash: z
    .string()
    .nullable()
    .openapi({ description: "The last step's chain hash (SHA-256 of the empty string for a trace without steps); null while active", example: CHAIN }),
  signature: z
    .string()
    .nullable()
    .openapi({ description: 'Base64 RSA-PSS (SHA-256, MGF1-SHA-256, salt 32) over the UTF-8 bytes of integrity_root_hash', example: SIGNATURE }),
  signature_algorithm: z.literal(SIGNATURE_ALGORITHM).nullable(),
  key_id: z.string().nullable().openapi({ description: "Hex SHA-256 of the signing key's SPKI DER", example: HASH }),
  signed_at: z.string().nullable().openapi({ example: TIME }),
};

export const CompletedTrace = z
  .object({
    trace_id: Id,
    status: z.enum(TRACE_STATUSES),
    integrity_root_hash: Hash("The last step's chain hash").openapi({ example: CHAIN }),
    signature: z.string().openapi({ description: 'Base64 RSA-PSS signature over integrity_root_hash', example: SIGNATURE }),
    signature_algorithm: z.literal(SIGNATURE_ALGORITHM),
    key_id: Hash("Hex SHA-256 of the signing key's SPKI DER"),
    step_count: z.number().int(),
    signed_at: z.string().openapi({ example: TIME }),
  })
  .openapi('TraceCompleted');

export const TraceSchema = z
  .object({
    trace_id: Id,
    agent_id: z.string().openapi({ example: 'refund-agent' }),
    status: z.enum(TRACE_STATUSES),
    description: z.string().nullable().openapi({ example: 'Refund order 42' }),
    tags: z.array(z.string()).openapi({ example: ['refunds'] }),
    created_at: z.string().openapi({ example: TIME }),
    completed_at: z.string().nullable().openapi({ description: 'When the trace was sealed (completed, failed or interrupted)', example: TIME }),
    step_count: z.number().int(),
    ...Sealed,
  })
  .openapi('Trace');

export const ListQuery = PageQuery({ max: 100, default: 20 }).extend({
  agent_id: AgentId.optional().openapi({ description: 'Only traces of this agent' }),
  status: z.enum(TRACE_STATUSES).optional().openapi({ description: 'Only traces in this status' }),
});
export const ListPaging = paging({ totals: ['total'], hasMore: true });
export const TraceList = z.object({ traces: z.array(TraceSchema), ...ListPaging.fields }).openapi('TraceList');

export const StepSchema = z
  .object({
    step_id: StepId,
    step_index: z.number().int(),
    type: z.enum(STEP_TYPES),
    content: z.string().openapi({ example: 'POST /v1/refunds {"order": 42}' }),
    metadata: z.record(z.string(), z.unknown()).openapi({ example: { tool: 'stripe' } }),
    integrity_hash: Hash('SHA-256 hex of the JCS bytes of {trace_id, step_index, type, content, metadata, created_at}'),
    chain_hash: z.string().openapi({ example: CHAIN }),
    previous_chain_hash: z.string().nullable().openapi({ example: null }),
    was_interrupted: z.boolean().openapi({ description: 'The last step of a trace sealed as `interrupted`' }),
    created_at: z.string().openapi({ example: TIME }),
  })
  .openapi('TraceStep');

export const GetQuery = z.object({
  steps_offset: z.coerce.number().int().min(0).max(MAX_STEPS).default(0).openapi({ description: 'Skip this many steps' }),
  steps_limit: z.coerce
    .number()
    .int()
    .min(1)
    .max(MAX_STEPS_PAGE)
    .default(MAX_STEPS_PAGE)
    .openapi({ description: `At most this many steps (1 to ${MAX_STEPS_PAGE})` }),
});

export const TraceWithSteps = z
  .object({
    trace: TraceSchema,
    steps: z.array(StepSchema).openapi({ description: 'In step order' }),
    step_count: z.number().int(),
    has_more_steps: z.boolean().openapi({ description: 'More steps after this page (steps_offset, steps_limit)' }),
  })
  .openapi('TraceWithSteps');

export const Discrepancy = z
  .object({
    step_index: z.number().int().nullable().openapi({ description: 'The step at fault; null for the trace as a whole', example: 2 }),
    step_id: z.string().nullable().openapi({ example: step.example }),
    problem: z.enum([
      'integrity_hash_mismatch',
      'previous_chain_hash_mismatch',
      'chain_hash_mismatch',
      'missing_step',
      'unexpected_step',
      'step_count_mismatch',
      'root_hash_mismatch',
      'signature_invalid',
      'signing_key_unknown',
      'certificate_signature_invalid',
    ]),
    detail: z.string().openapi({ example: 'type, content or metadata do not hash to the stored integrity hash: the step was changed after it was recorded' }),
  })
  .openapi('TraceDiscrepancy');

export const VerifyResult = z
  .object({
    trace_id: Id,
    valid: z.boolean().openapi({ description: 'chain_valid and signature_valid' }),
    chain_valid: z
      .boolean()
      .openapi({ description: 'Every stored step hashes to its integrity hash, the chain links, indexes run 0..n-1 and end at the signed root' }),
    signature_valid: z.boolean().openapi({
      description: 'The signature verifies over the stored root hash, and certificate_signature over the certificate as stored, with the key of key_id',
    }),
    discrepancies: z.array(Discrepancy).nullable().openapi({ description: 'What broke, step by step; null when nothing did' }),
    step_count: z.number().int(),
    key_id: z.string().nullable().openapi({ example: HASH }),
  })
  .openapi('TraceVerification');

const PublicKeyPem = z.string().openapi({
  description: 'SPKI PEM',
  example: '-----BEGIN PUBLIC KEY-----\nMIICIjANBgkqhkiG9w0BAQEFAAOCAg8AMIICCgKCAgEAu1SU1LfVLPHCozMxH2Mo\n-----END PUBLIC KEY-----\n',
});

export const CertificateQuery = z.object({
  include_content: z
    .enum(['true', 'false'])
    .default('false')
    .transform((v) => v === 'true')
    .openapi({ description: "`true` adds each step's content, metadata and created_at, from which a verifier recomputes its integrity_hash" }),
});

export const Certificate = z
  .object({
    certificate_version: z.number().int().openapi({
      description:
        "2: `certificate_signature` covers the whole certificate and a step's hash covers all its fields. 1: a trace started before that; only the root hash is signed",
      example: 2,
    }),
    trace_id: Id,
    agent_id: z.string().openapi({ example: 'refund-agent' }),
    description: z.string().nullable().openapi({ example: 'Refund order 42' }),
    tags: z.array(z.string()).openapi({ example: ['refunds'] }),
    status: z.enum(TRACE_STATUSES),
    step_count: z.number().int(),
    integrity_root_hash: z.string().openapi({ example: CHAIN }),
    signature: z.string().openapi({ description: 'Base64 RSA-PSS over the UTF-8 bytes of integrity_root_hash', example: SIGNATURE }),
    signature_algorithm: z.literal(SIGNATURE_ALGORITHM),
    signed_at: z.string().openapi({ example: TIME }),
    key_id: Hash("Hex SHA-256 of the signing key's SPKI DER"),
    public_key: PublicKeyPem.openapi({ description: 'SPKI PEM of the key that signed this trace (kept after the key is rotated)' }),
    steps: z
      .array(
        z.object({
          step_index: z.number().int(),
          type: z.enum(STEP_TYPES),
          integrity_hash: Hash("The step's integrity hash"),
          chain_hash: z.string().openapi({ example: CHAIN }),
          content: z.string().optional().openapi({ description: 'With include_content=true', example: 'POST /v1/refunds {"order": 42}' }),
          metadata: z
            .record(z.string(), z.unknown())
            .optional()
            .openapi({ description: 'With include_content=true', example: { tool: 'stripe' } }),
          created_at: z.string().optional().openapi({ description: 'With include_content=true', example: TIME }),
        }),
      )
      .openapi({ description: "Each step's hashes, in order: enough to recompute the chain to the root without the contents" }),
    certificate_signature: z.string().nullable().openapi({
      description:
        "Base64 RSA-PSS (same key and parameters as `signature`) over the RFC 8785 (JCS) bytes of this certificate without `certificate_signature` and without the steps' content, metadata and created_at (their integrity_hash covers them); null for certificate_version 1",
      example: SIGNATURE,
    }),
  })
  .openapi('TraceCertificate');

export const PublicKey = z
  .object({
    public_key: PublicKeyPem,
    algorithm: z.literal(SIGNATURE_ALGORITHM),
    key_id: Hash('Hex SHA-256 of the SPKI DER'),
  })
  .openapi('TracePublicKey');

export function toTraceDto(t: TraceRow): z.infer<typeof TraceSchema> {
  return {
    trace_id: t.id,
    agent_id: t.agentId,
    status: t.status,
    description: t.description,
    tags: t.tags,
    created_at: t.createdAt.toISOString(),
    completed_at: isoOrNull(t.completedAt),
    step_count: t.stepCount,
    integrity_root_hash: t.integrityRootHash,
    signature: t.signature,
    signature_algorithm: t.signatureAlgorithm as typeof SIGNATURE_ALGORITHM | null,
    key_id: t.keyId,
    signed_at: isoOrNull(t.signedAt),
  };
}

export function toStepDto(s: StepRow): z.infer<typeof StepSchema> {
  return {
    step_id: s.id,
    step_index: s.stepIndex,
    type: s.type,
    content: s.content,
    metadata: s.metadata,
    integrity_hash: s.integrityHash,
    chain_hash: s.chainHash,
    previous_chain_hash: s.previousChainHash,
    was_interrupted: s.wasInterrupted,
    created_at: s.createdAt.toISOString(),
  };
}
