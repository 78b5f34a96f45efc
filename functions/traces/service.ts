import type { z } from '@hono/zod-openapi';
import type { TenantCtx, Ctx } from '../../shared/platform/contract/context';
import { AppError, conflict, notFound } from '../../shared/platform/contract/errors';
import { newId } from '../../shared/platform/contract/ids';
import { actingAgent, outsideAgent } from '../../shared/platform/contract/scopes';
import type { PageInput } from '../../shared/platform/data/pagination';
import { registerKey } from '../../shared/platform/data/signing-keys';
import { SIGNATURE_ALGORITHM, type SigningKey } from '../../shared/platform/contract/trace-signing';
import { type Work, write } from '../../shared/platform/data/unit-of-work';
import { certificateBody, certificateBytes } from './certificate';
import { CERTIFICATE_VERSION, chainHash, digestOf, EMPTY_ROOT, integrityHash } from './hashing';
import * as q from './queries';
import { ListPaging, MAX_STEPS, type StartBody, type StepBody, toStepDto, toTraceDto } from './schemas';

type SealStatus = 'completed' | 'failed' | 'interrupted';

export async function traceFor(ctx: TenantCtx, traceId: string, lock = false) {
  const found = await q.traceOf(ctx.db, ctx.tenantId, traceId, lock);
  // Another agent's trace answers a key confined to an agent as an unknown id.
  if (!found || outsideAgent(ctx.auth, found.agentId)) throw notFound('Trace');
  return found;
}

const notActive = (trace: q.TraceRow) => conflict(`Trace is ${trace.status}; steps are added only while it is active`, { trace_status: trace.status });

/**
 * Starting and sealing a trace go into the tenant's audit chain; single steps do not: a trace is
 * its own hash chain, signed at the end, and auditing each step would queue every agent's steps
 * behind the tenant's one audit head.
 */
export async function startTrace(ctx: TenantCtx, input: z.infer<typeof StartBody>) {
  const agentId = actingAgent(ctx.auth, input.agent_id, 'starts traces')!;
  return write(ctx, async (work) => {
    const trace = await q.insertTrace(work.tx, {
      id: newId('trace'),
      tenantId: ctx.tenantId,
      agentId,
      status: 'active',
      description: input.description ?? null,
      tags: [...new Set(input.tags)],
      createdAt: ctx.now,
      lastActivityAt: ctx.now,
      stepCount: 0,
      certificateVersion: CERTIFICATE_VERSION,
    });
    await work.audit({ operation: 'trace.started', resourceType: 'trace', resourceId: trace.id, metadata: { agent_id: trace.agentId, tags: trace.tags } });
    return { trace_id: trace.id, status: 'active' as const, created_at: trace.createdAt.toISOString() };
  });
}

/**
 * Appends a step under the trace row's lock, so concurrent appends get consecutive indexes and
 * each extends the chain head the previous one left. An ERROR step with `metadata.fatal: true`
 * ends the trace: it is sealed and signed as `failed` in the same transaction.
 */
export async function addStep(ctx: TenantCtx, input: { traceId: string } & z.infer<typeof StepBody>) {
  const fatal = input.type === 'ERROR' && input.metadata.fatal === true;
  const key = fatal ? await ctx.services.signingKey() : null;
  return write(ctx, async (work) => {
    const trace = await traceFor(work.ctx, input.traceId, true);
    if (trace.status !== 'active') throw notActive(trace);
    if (trace.stepCount >= MAX_STEPS)
      throw conflict(`A trace holds at most ${MAX_STEPS} steps; complete this one and start another`, { trace_status: trace.status });
    const stepIndex = trace.stepCount;
    const digest = digestOf(ctx.services);
    const integrity = await integrityHash(
      digest,
      { trace_id: trace.id, step_index: stepIndex, type: input.type, content: input.content, metadata: input.metadata, created_at: ctx.now },
      trace.certificateVersion,
    );
    const chain = await chainHash(digest, trace.lastChainHash, integrity);
    const step = await q.insertStep(work.tx, {
      id: newId('step'),
      tenantId: ctx.tenantId,
      traceId: trace.id,
      stepIndex,
      type: input.type,
      content: input.content,
      metadata: input.metadata,
      integrityHash: integrity,
      previousChainHash: trace.lastChainHash,
      chainHash: chain,
      wasInterrupted: false,
      createdAt: ctx.now,
    });
    const head = { stepCount: stepIndex + 1, lastChainHash: chain, at: ctx.now };
    if (key) await seal(work, { ...trace, stepCount: head.stepCount, lastChainHash: chain }, 'failed', key);
    else await q.advanceTrace(work.tx, ctx.tenantId, trace.id, head);
    return {
      step_id: step.id,
      step_index: step.stepIndex,
      type: step.type,
      integrity_hash: integrity,
      integrity_chain_hash: chain,
      previous_chain_hash: step.previousChainHash,
      was_interrupted: false,
      trace_status: key ? ('failed' as const) : ('active' as const),
      created_at: step.createdAt.toISOString(),
    };
  });
}

/**
 * Seals a trace: its root hash is signed, and (from certificate version 2) the certificate as a
 * whole, its status set, the seal audited and announced.
 */
async function seal(work: Work<Ctx>, trace: q.TraceRow, status: SealStatus, key: SigningKey) {
  const { now } = work.ctx;
  const root = trace.lastChainHash ?? EMPTY_ROOT;
  const signature = await key.sign(root);
  let certificateSignature: string | null = null;
  if (trace.certificateVersion >= 2) {
    const steps = await q.stepHashes(work.tx, trace.tenantId, trace.id);
    const sealedTrace = { ...trace, status, integrityRootHash: root, signature, keyId: key.keyId, signedAt: now };
    certificateSignature = await key.sign(certificateBytes(certificateBody(sealedTrace, key.publicKeyPem, steps)));
  }
  await registerKey(work.tx, key, SIGNATURE_ALGORITHM, now);
  const sealed = await q.sealTrace(work.tx, trace.tenantId, trace.id, {
    status,
    stepCount: trace.stepCount,
    lastChainHash: trace.lastChainHash,
    integrityRootHash: root,
    signature,
    signatureAlgorithm: SIGNATURE_ALGORITHM,
    keyId: key.keyId,
    signedAt: now,
    completedAt: now,
    certificateSignature,
  });
  if (status === 'interrupted' && trace.stepCount > 0) await q.flagInterrupted(work.tx, trace.tenantId, trace.id, trace.stepCount - 1);
  const facts = { trace_id: trace.id, agent_id: trace.agentId, step_count: trace.stepCount, integrity_root_hash: root, key_id: key.keyId };
  await work.audit({ tenantId: trace.tenantId, operation: `trace.${status}`, resourceType: 'trace', resourceId: trace.id, metadata: facts });
  await work.event(`trace.${status}`, facts, { tenantId: trace.tenantId });
  return sealed;
}

const sealedDto = (t: q.TraceRow) => ({
  trace_id: t.id,
  status: t.status,
  integrity_root_hash: t.integrityRootHash!,
  signature: t.signature!,
  signature_algorithm: SIGNATURE_ALGORITHM,
  key_id: t.keyId!,
  step_count: t.stepCount,
  signed_at: t.signedAt!.toISOString(),
});

export async function completeTrace(ctx: TenantCtx, input: { traceId: string }) {
  const key = await ctx.services.signingKey();
  return write(ctx, async (work) => {
    const trace = await traceFor(work.ctx, input.traceId, true);
    if (trace.status !== 'active') throw conflict(`Trace is already ${trace.status}`, { trace_status: trace.status });
    return sealedDto(await seal(work, trace, 'completed', key));
  });
}

/**
 * Seals one idle trace as `interrupted` (maintenance). Checked again under the lock: a step that
 * arrived since the scan keeps the trace active.
 */
export async function interruptIdleTrace(ctx: Ctx, trace: { id: string; tenantId: string }, idleBefore: Date, key: SigningKey): Promise<boolean> {
  return write(ctx, async (work) => {
    const current = await q.traceOf(work.tx, trace.tenantId, trace.id, true);
    if (current?.status !== 'active' || current.lastActivityAt >= idleBefore) return false;
    await seal(work, current, 'interrupted', key);
    return true;
  });
}

export async function listTraces(ctx: TenantCtx, input: PageInput & { agent_id?: string; status?: q.TraceRow['status'] }) {
  // A key confined to an agent lists that agent's traces only.
  const filter = { ...input, agent_id: actingAgent(ctx.auth, input.agent_id, 'lists traces') };
  const { page, total } = await q.listTraces(ctx.db, ctx.tenantId, filter, input);
  return { traces: page.map(toTraceDto), ...ListPaging.meta(total, input, page.length) };
}

export async function getTrace(ctx: TenantCtx, input: { traceId: string; steps_offset: number; steps_limit: number }) {
  const trace = await traceFor(ctx, input.traceId);
  const steps = await q.stepsOf(ctx.db, ctx.tenantId, trace.id, { offset: input.steps_offset, limit: input.steps_limit });
  return {
    trace: toTraceDto(trace),
    steps: steps.map(toStepDto),
    step_count: trace.stepCount,
    has_more_steps: input.steps_offset + steps.length < trace.stepCount,
  };
}

export function sealedOnly(trace: q.TraceRow) {
  if (trace.status === 'active' || !trace.signature || !trace.keyId || !trace.integrityRootHash) {
    throw new AppError('TRACE_NOT_COMPLETED', `The trace is still active: complete it first (POST /v1/traces/${trace.id}/complete)`);
  }
  return trace as q.TraceRow & { signature: string; keyId: string; integrityRootHash: string; signedAt: Date };
}

/**
 * The certificate: every field `certificate_signature` covers, and with `include_content` each
 * step's content, metadata and time too, from which a verifier recomputes the step's hash.
 */
export async function certificate(ctx: TenantCtx, input: { traceId: string; include_content?: boolean }) {
  const trace = sealedOnly(await traceFor(ctx, input.traceId));
  const [publicKey, steps] = await Promise.all([
    q.publicKeyOf(ctx.db, trace.keyId),
    input.include_content ? q.stepsOf(ctx.db, ctx.tenantId, trace.id, { offset: 0, limit: MAX_STEPS }) : q.stepHashes(ctx.db, ctx.tenantId, trace.id),
  ]);
  if (!publicKey) throw new AppError('INTERNAL_ERROR', 'The key that signed this trace is not on record');
  const listed = steps.map((s) =>
    'id' in s
      ? {
          step_index: s.stepIndex,
          type: s.type,
          integrity_hash: s.integrityHash,
          chain_hash: s.chainHash,
          content: s.content,
          metadata: s.metadata,
          created_at: s.createdAt.toISOString(),
        }
      : s,
  );
  return { ...certificateBody(trace, publicKey, listed), certificate_signature: trace.certificateSignature };
}

export async function publicKey(ctx: TenantCtx) {
  const key = await ctx.services.signingKey();
  return { public_key: key.publicKeyPem, algorithm: SIGNATURE_ALGORITHM, key_id: key.keyId };
}
