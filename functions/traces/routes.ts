import { errors as errorsOf, json, jsonBody, keyRoute } from '../../shared/platform/http/openapi';
import { routeOf } from '../../shared/platform/http/verb';
import * as s from './schemas';
import { certificateVerb, getTraceVerb, listTracesVerb } from './verbs';

const tags = ['Traces'];
const feature = 'traces' as const;
const hashing =
  "Each step's `integrity_hash` is the SHA-256 hex of the RFC 8785 (JCS) bytes of `{trace_id, step_index, type, content, metadata, created_at}` (`created_at` as returned, an ISO 8601 time in UTC; traces of certificate_version 1 hash without it); its `chain_hash` is the SHA-256 hex of the previous chain hash (empty for the first step) followed by its integrity hash.";
const sealing =
  'The root hash is the last chain hash (SHA-256 of the empty string without steps); the signature is RSA-PSS (SHA-256, MGF1-SHA-256, salt 32) with a 4096-bit key over the UTF-8 bytes of the root hash hex, in base64. docs/change-control.md in the repository verifies one with openssl.';

export const startRoute = keyRoute({
  operationId: 'traces.start',
  confinable: true,
  feature,
  method: 'post',
  path: '/v1/traces',
  tags,
  summary: 'Start a reasoning trace',
  description: 'A trace records what an agent thought and did, step by step, as a hash chain that is signed when it ends.',
  request: { body: jsonBody(s.StartBody) },
  responses: { 201: json(s.StartedTrace, 'The new, active trace') },
});

export const addStepRoute = keyRoute({
  operationId: 'traces.addStep',
  confinable: true,
  feature,
  method: 'post',
  path: '/v1/traces/{trace_id}/steps',
  tags,
  summary: 'Append a step',
  description: `Steps get consecutive zero-based indexes, also under concurrent appends. ${hashing} An \`ERROR\` step with \`metadata.fatal: true\` ends the trace: it is sealed and signed as \`failed\`. 409 once the trace is no longer active or holds ${s.MAX_STEPS} steps.`,
  request: { params: s.TraceParams, body: jsonBody(s.StepBody) },
  responses: { 201: json(s.AddedStep, 'The step and the chain hash it extended'), ...errorsOf(404, 409) },
});

export const completeRoute = keyRoute({
  operationId: 'traces.complete',
  confinable: true,
  feature,
  method: 'post',
  path: '/v1/traces/{trace_id}/complete',
  tags,
  summary: 'Complete and sign a trace',
  description: `${sealing} After this no step may be added (409). An active trace without a new step for TRACE_IDLE_TIMEOUT_HOURS (default 24) is sealed the same way as \`interrupted\` by maintenance, its last step flagged \`was_interrupted\`.`,
  request: { params: s.TraceParams },
  responses: { 200: json(s.CompletedTrace, 'The seal: root hash, signature, key'), ...errorsOf(404, 409) },
});

export const listRoute = keyRoute({
  ...routeOf(listTracesVerb),
  path: '/v1/traces',
  tags,
  summary: 'Your traces, newest first',
  responses: { 200: json(s.TraceList, 'A page of traces') },
});

export const publicKeyRoute = keyRoute({
  operationId: 'traces.publicKey',
  confinable: true,
  method: 'get',
  path: '/v1/traces/public-key',
  tags,
  summary: 'The key that signs traces now',
  description: 'Any key may read it. Traces signed by an earlier key name it in `key_id`, and their certificate carries it.',
  responses: { 200: json(s.PublicKey, 'SPKI PEM public key and its id') },
});

export const getRoute = keyRoute({
  ...routeOf(getTraceVerb),
  path: '/v1/traces/{trace_id}',
  tags,
  summary: 'A trace with its steps in order',
  responses: { 200: json(s.TraceWithSteps, 'The trace and a page of its steps'), ...errorsOf(404) },
});

export const verifyRoute = keyRoute({
  operationId: 'traces.verify',
  confinable: true,
  feature,
  method: 'post',
  path: '/v1/traces/{trace_id}/verify',
  tags,
  summary: 'Recompute a sealed trace and check its signature',
  description:
    'Rehashes every stored step, checks the links, the indexes, the count and the root, and verifies both signatures (the root hash and the certificate) with the key that made them. `discrepancies` names each step that fails and what failed. 400 TRACE_NOT_COMPLETED while the trace is active.',
  request: { params: s.TraceParams },
  responses: { 200: json(s.VerifyResult, 'Validity and what broke'), ...errorsOf(404) },
});

export const certificateRoute = keyRoute({
  ...routeOf(certificateVerb),
  path: '/v1/traces/{trace_id}/certificate',
  tags,
  summary: 'Everything needed to verify a sealed trace without engram',
  description: `The seal, the public key of \`key_id\` and each step's hashes (with \`include_content=true\` its content too). ${sealing} \`certificate_signature\`, with the same key, covers the RFC 8785 (JCS) bytes of the certificate without itself and without the steps' content, metadata and created_at, so no field shown can change unnoticed. 400 TRACE_NOT_COMPLETED while the trace is active.`,
  responses: { 200: json(s.Certificate, 'The certificate'), ...errorsOf(404) },
});
