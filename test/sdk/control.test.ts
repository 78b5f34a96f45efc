import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Engram, type TraceCertificate, verifyTraceCertificate } from '../../sdk/src/index';
import { MINUTE } from '../../shared/platform/contract/time';
import { createEngine, type TestEngine } from '../harness';
import { sdkFor } from './helpers';

/** Change control through the SDK: traces and their certificates (checked offline), rollback, audit, replay, compensations. */
let engine: TestEngine;
let engram: Engram;
beforeAll(async () => {
  engine = await createEngine();
  engram = sdkFor(engine, (await engine.newTenant('pro')).key);
});
afterAll(async () => engine?.close());

async function sealedTrace() {
  const { trace_id } = await engram.traces.start({ agent_id: 'sdk-agent', description: 'Refund order 42' });
  await engram.traces.addStep(trace_id, { type: 'THOUGHT', content: 'The order was charged twice' });
  await engram.traces.addStep(trace_id, { type: 'ACTION', content: 'POST /v1/refunds {"order": 42}', metadata: { tool: 'stripe' } });
  await engram.traces.complete(trace_id);
  return trace_id;
}

describe('engram-sdk traces', () => {
  it('records, seals, lists and verifies a trace; its certificate verifies offline', async () => {
    const traceId = await sealedTrace();
    const trace = await engram.traces.get(traceId, { steps_limit: 10 });
    expect(trace).toMatchObject({ trace: { trace_id: traceId, status: 'completed' }, step_count: 2 });
    expect(trace.steps.map((s) => s.type)).toEqual(['THOUGHT', 'ACTION']);
    expect((await engram.traces.list({ agent_id: 'sdk-agent' }).toArray()).map((t) => t.trace_id)).toContain(traceId);
    expect(await engram.traces.verify(traceId)).toMatchObject({ valid: true, signature_valid: true });

    const certificate = await engram.traces.certificate(traceId);
    const { public_key } = await engram.traces.publicKey();
    expect(await verifyTraceCertificate(certificate, { publicKey: public_key })).toEqual({
      valid: true,
      version: 2,
      keyValid: true,
      chainValid: true,
      signatureValid: true,
      certificateSignatureValid: true,
      contentValid: null,
      problems: [],
    });
    const withContent = await engram.traces.certificate(traceId, { include_content: 'true' });
    expect(withContent.steps[1]).toMatchObject({ type: 'ACTION', content: 'POST /v1/refunds {"order": 42}', metadata: { tool: 'stripe' } });
    expect(await verifyTraceCertificate(withContent)).toMatchObject({ valid: true, contentValid: true });
    withContent.steps[1].content = 'POST /v1/refunds {"order": 4200}';
    expect(await verifyTraceCertificate(withContent)).toMatchObject({ valid: false, contentValid: false, certificateSignatureValid: true });
  });

  it('refuses a tampered certificate: a step, the root, the signature, another key', async () => {
    const certificate = await engram.traces.certificate(await sealedTrace());
    const copy = (): TraceCertificate => structuredClone(certificate);

    const step = copy();
    step.steps[0].integrity_hash = step.steps[0].integrity_hash.replace(/^./, (c) => (c === '0' ? '1' : '0'));
    expect(await verifyTraceCertificate(step)).toMatchObject({ valid: false, chainValid: false, signatureValid: true, certificateSignatureValid: false });

    const dropped = copy();
    dropped.steps.pop();
    expect((await verifyTraceCertificate(dropped)).valid).toBe(false);

    const root = copy();
    root.integrity_root_hash = 'f'.repeat(64);
    expect(await verifyTraceCertificate(root)).toMatchObject({ valid: false, chainValid: false, signatureValid: false });

    const signature = copy();
    signature.signature = `${signature.signature.slice(0, 10)}${signature.signature[10] === 'A' ? 'B' : 'A'}${signature.signature.slice(11)}`;
    expect(await verifyTraceCertificate(signature)).toMatchObject({ valid: false, chainValid: true, signatureValid: false, certificateSignatureValid: false });

    // A key of our own, not the server's: the certificate's key does not match it.
    const pair = (await crypto.subtle.generateKey({ name: 'RSA-PSS', hash: 'SHA-256', modulusLength: 2048, publicExponent: new Uint8Array([1, 0, 1]) }, true, [
      'sign',
      'verify',
    ])) as CryptoKeyPair;
    const spki = Buffer.from(await crypto.subtle.exportKey('spki', pair.publicKey)).toString('base64');
    const otherPem = `-----BEGIN PUBLIC KEY-----\n${spki.match(/.{1,64}/g)!.join('\n')}\n-----END PUBLIC KEY-----\n`;
    expect(await verifyTraceCertificate(copy(), { publicKey: otherPem })).toMatchObject({ valid: false, keyValid: false });
    const swapped = copy();
    swapped.public_key = otherPem;
    expect(await verifyTraceCertificate(swapped)).toMatchObject({ valid: false, keyValid: false });
  });
});

describe('engram-sdk rollback, audit, replay, compensations', () => {
  it('previews and runs a rollback, pages its history; audits, replays and lists compensations', async () => {
    const before = engine.clock.now().toISOString();
    engine.clock.advance(MINUTE);
    const kept = await engram.memories.store({ observation: 'Replayed memory about green tea' });
    engine.clock.advance(MINUTE);
    const middle = engine.clock.now().toISOString();
    engine.clock.advance(MINUTE);
    await engram.memories.store({ observation: 'A memory the rollback removes about oolong' });
    engine.clock.advance(MINUTE);

    const preview = await engram.rollback.preview({ target: middle });
    expect(preview).toBeTruthy();
    const run = await engram.rollback.run({ target: middle });
    expect(run).toBeTruthy();
    expect((await engram.rollback.history().toArray()).length).toBe(1);

    const audit = await engram.audit.list({ limit: 2 }).toArray();
    expect(audit.length).toBeGreaterThanOrEqual(3);
    expect((await engram.audit.verify()).valid).toBe(true);
    expect(await engram.audit.summary()).toBeTruthy();
    expect(await engram.audit.export({ format: 'csv' })).toMatch(/^[^,]+,create,/m);

    const timeline = await engram.replay.timeline({ since: before, limit: 1 }).toArray();
    expect(timeline.length).toBeGreaterThanOrEqual(2);
    const snapshot = await engram.replay.snapshot({ at: middle }).toArray();
    expect(snapshot.map((m) => m.uuid)).toContain(kept.uuid);
    expect(await engram.replay.diff({ from: before, to: middle })).toBeTruthy();
    expect(await engram.replay.memory(kept.uuid)).toBeTruthy();
    expect((await engram.replay.recall({ q: 'green tea', at: middle })).memories.map((m) => m.uuid)).toContain(kept.uuid);
    expect(await engram.compensations.list().toArray()).toBeInstanceOf(Array);
  });
});
