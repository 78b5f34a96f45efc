/**
 * Offline checks that need only WebCrypto: a trace certificate (docs/change-control.md#the-hashes),
 * an erasure receipt (docs/security.md#erasure) and a webhook delivery (Standard Webhooks, docs/teams-and-webhooks.md#verifying-a-delivery).
 * The console's "Verify in this browser" is this file, bundled (functions/console/assets).
 */
import canonicalize from 'canonicalize';
import type { components } from './generated/openapi.js';

export type TraceCertificate = components['schemas']['TraceCertificate'];

export interface CertificateCheck {
  /** Every check passed. */
  valid: boolean;
  /** `certificate_version`, as given (null when missing). Version 2 is checked whole; version 1 never verifies whole. */
  version: number | null;
  /** The key hashes to `key_id` (and is the expected key when one was given). */
  keyValid: boolean;
  /** The steps' chain hashes link from the empty root to `integrity_root_hash`, indexes 0..n-1. */
  chainValid: boolean;
  /** The signature verifies over `integrity_root_hash` with the key. */
  signatureValid: boolean;
  /** `certificate_signature` verifies over every other field of the certificate with the key. */
  certificateSignatureValid: boolean;
  /** Each step that carries its content hashes to its `integrity_hash`; null when no step carries it. */
  contentValid: boolean | null;
  /** What failed, in words; empty when valid. */
  problems: string[];
}

/** The version this verifier checks whole; version 1 (traces started before it) signs the root only. */
export const CERTIFICATE_VERSION = 2;
const ALGORITHM = 'RSA-PSS-SHA256';
/** A step's fields that `include_content=true` adds: covered by its integrity hash, not by certificate_signature. */
const CONTENT_FIELDS = ['content', 'metadata', 'created_at'] as const;

const encoder = new TextEncoder();
const RSA_PSS = { name: 'RSA-PSS', hash: 'SHA-256' } as const;
const SALT_LENGTH = 32;

const hex = (bytes: ArrayBuffer) => Array.from(new Uint8Array(bytes), (b) => b.toString(16).padStart(2, '0')).join('');
const sha256Hex = async (data: BufferSource) => hex(await crypto.subtle.digest('SHA-256', data));

function fromBase64(text: string): Uint8Array<ArrayBuffer> {
  const binary = atob(text);
  const bytes = new Uint8Array(binary.length);
  for (let i = 0; i < binary.length; i++) bytes[i] = binary.charCodeAt(i);
  return bytes;
}

function pemDer(pem: string): Uint8Array<ArrayBuffer> {
  const match = /-----BEGIN PUBLIC KEY-----([A-Za-z0-9+/=\s]+)-----END PUBLIC KEY-----/.exec(pem.replace(/\\n/g, '\n'));
  if (!match) throw new Error('expected an SPKI PEM "PUBLIC KEY" block');
  return fromBase64(match[1].replace(/\s+/g, ''));
}

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);

/** Why `value` is not shaped like a certificate, or null when it is. */
function notACertificate(value: unknown): string | null {
  if (!isObject(value)) return 'not a JSON object';
  for (const field of ['trace_id', 'integrity_root_hash', 'signature', 'signature_algorithm', 'key_id', 'public_key'])
    if (typeof value[field] !== 'string') return `${field} is missing or not a string`;
  if (typeof value.step_count !== 'number') return 'step_count is missing or not a number';
  if (!Array.isArray(value.steps)) return 'steps is missing or not an array';
  for (const [i, step] of value.steps.entries()) {
    if (!isObject(step) || typeof step.integrity_hash !== 'string' || typeof step.chain_hash !== 'string')
      return `steps[${i}] has no integrity_hash and chain_hash`;
  }
  return null;
}

/** RFC 8785 bytes, or null for what JCS cannot encode (a lone surrogate, a non-finite number). */
function jcs(value: unknown): string | null {
  try {
    return canonicalize(value) ?? null;
  } catch {
    return null;
  }
}

/** What `certificate_signature` covers: the certificate without it and without the steps' contents. */
function signedBytes(certificate: Record<string, unknown>): string | null {
  const { certificate_signature: _, ...rest } = certificate;
  const steps = (rest.steps as Record<string, unknown>[]).map((step) => {
    const kept = { ...step };
    for (const field of CONTENT_FIELDS) delete kept[field];
    return kept;
  });
  return jcs({ ...rest, steps });
}

/** A step's integrity hash as the server computes it for the certificate's version (docs/change-control.md#the-hashes). */
async function stepHash(traceId: unknown, step: Record<string, unknown>, version: number): Promise<string | null> {
  const fields: Record<string, unknown> = {
    trace_id: traceId,
    step_index: step.step_index,
    type: step.type,
    content: step.content,
    metadata: step.metadata,
  };
  if (version >= 2) fields.created_at = step.created_at;
  const bytes = jcs(fields);
  return bytes === null ? null : sha256Hex(encoder.encode(bytes));
}

async function verifyPss(key: CryptoKey, signature: unknown, text: string | null): Promise<boolean> {
  if (typeof signature !== 'string' || text === null) return false;
  try {
    const bytes = fromBase64(signature);
    // A signature is exactly as long as the modulus: one with bytes appended (a changed base64 tail)
    // is refused here, not left to how leniently the platform's RSA code reads it.
    if (bytes.length * 8 !== (key.algorithm as RsaHashedKeyAlgorithm).modulusLength) return false;
    return await crypto.subtle.verify({ name: 'RSA-PSS', saltLength: SALT_LENGTH }, key, bytes, encoder.encode(text));
  } catch {
    return false;
  }
}

/**
 * Verifies a certificate of GET /v1/traces/{trace_id}/certificate without the server, as the
 * server signs (functions/traces): `key_id` the SHA-256 hex of the key's SPKI DER; each chain hash
 * the SHA-256 hex of the previous chain hash (empty before the first) + the step's integrity hash,
 * the last one the root; `signature` RSA-PSS (SHA-256, MGF1-SHA-256, salt 32) over the UTF-8 hex of
 * `integrity_root_hash`, and `certificate_signature` the same over the RFC 8785 (JCS) bytes of the
 * certificate without itself and without the steps' content, metadata and created_at; each step
 * that carries those (`include_content=true`) is rehashed from them. Pass `publicKey` (a PEM from
 * GET /v1/traces/public-key, kept from a source you trust) to refuse a certificate signed by any
 * other key; without it the certificate's own key is used, which proves integrity but not who signed.
 * Never throws: anything that is not a certificate is invalid, with the reason in `problems`.
 */
export async function verifyTraceCertificate(certificate: TraceCertificate | unknown, opts: { publicKey?: string } = {}): Promise<CertificateCheck> {
  const problems: string[] = [];
  const check: CertificateCheck = {
    valid: false,
    version: null,
    keyValid: false,
    chainValid: false,
    signatureValid: false,
    certificateSignatureValid: false,
    contentValid: null,
    problems,
  };
  const shape = notACertificate(certificate);
  if (shape) {
    problems.push(`not a trace certificate: ${shape}`);
    return check;
  }
  const cert = certificate as Record<string, unknown> & { steps: Record<string, unknown>[] };
  const version = typeof cert.certificate_version === 'number' ? cert.certificate_version : null;
  check.version = version;
  if (version === 1)
    problems.push(
      'certificate_version 1: only integrity_root_hash is signed (the trace was started before certificates were signed whole); POST /v1/traces/{trace_id}/verify checks it on the server',
    );
  else if (version !== CERTIFICATE_VERSION) problems.push(`unknown certificate_version ${String(cert.certificate_version)}`);

  check.chainValid = cert.steps.length === cert.step_count;
  if (!check.chainValid) problems.push(`${cert.steps.length} steps listed, ${String(cert.step_count)} sealed`);
  let chain = await sha256Hex(new Uint8Array(0));
  let previous = '';
  for (const [i, step] of cert.steps.entries()) {
    if (step.step_index !== i) {
      check.chainValid = false;
      problems.push(`step ${i} has index ${String(step.step_index)}`);
    }
    chain = await sha256Hex(encoder.encode(previous + String(step.integrity_hash)));
    if (chain !== step.chain_hash) {
      check.chainValid = false;
      problems.push(`step ${i}: chain_hash is not SHA-256(previous chain hash + integrity_hash)`);
    }
    previous = String(step.chain_hash);
    if (CONTENT_FIELDS.some((field) => field in step)) {
      const matches = (await stepHash(cert.trace_id, step, version ?? CERTIFICATE_VERSION)) === step.integrity_hash;
      check.contentValid = (check.contentValid ?? true) && matches;
      if (!matches) problems.push(`step ${i}: its type, content, metadata or created_at do not hash to its integrity_hash`);
    }
  }
  if ((cert.steps.length ? previous : chain) !== cert.integrity_root_hash) {
    check.chainValid = false;
    problems.push('the last chain hash is not integrity_root_hash');
  }

  try {
    const der = pemDer(String(cert.public_key));
    check.keyValid = (await sha256Hex(der)) === cert.key_id;
    if (!check.keyValid) problems.push('public_key does not hash to key_id');
    if (opts.publicKey !== undefined && (await sha256Hex(pemDer(opts.publicKey))) !== cert.key_id) {
      check.keyValid = false;
      problems.push('signed by another key than the one expected');
    }
    if (cert.signature_algorithm !== ALGORITHM) problems.push(`unknown signature_algorithm ${String(cert.signature_algorithm)}`);
    else {
      const key = await crypto.subtle.importKey('spki', der, RSA_PSS, false, ['verify']);
      check.signatureValid = await verifyPss(key, cert.signature, String(cert.integrity_root_hash));
      if (!check.signatureValid) problems.push('the signature does not verify over integrity_root_hash');
      if (version !== 1) {
        check.certificateSignatureValid = await verifyPss(key, cert.certificate_signature, signedBytes(cert));
        if (!check.certificateSignatureValid)
          problems.push('certificate_signature does not verify over the certificate: a field was changed, added or removed');
      }
    }
  } catch (err) {
    problems.push(`unreadable key: ${(err as Error).message}`);
  }
  check.valid =
    problems.length === 0 && check.keyValid && check.chainValid && check.signatureValid && check.certificateSignatureValid && check.contentValid !== false;
  return check;
}

export interface ReceiptCheck {
  /** The key hashes to `key_id` and the signature verifies over every other field of the receipt. */
  valid: boolean;
  /** What failed, in words; empty when valid. */
  problems: string[];
}

/**
 * Verifies an erasure receipt (POST /v1/erasures, GET /v1/erasures/{erasure_id}, DELETE /v1/account)
 * without the server, as docs/security.md#erasure describes: `signature` is RSA-PSS (SHA-256,
 * MGF1-SHA-256, salt 32) over the RFC 8785 (JCS) bytes of the receipt without `signature`, so
 * every other field it shows is covered; `publicKey` (GET /v1/traces/public-key, kept from a source
 * you trust) must hash to its `key_id`. Never throws.
 */
export async function verifyErasureReceipt(receipt: unknown, opts: { publicKey: string }): Promise<ReceiptCheck> {
  const problems: string[] = [];
  if (!isObject(receipt) || typeof receipt.erasure_id !== 'string' || typeof receipt.signature !== 'string' || typeof receipt.key_id !== 'string')
    return { valid: false, problems: ['not an erasure receipt: erasure_id, signature or key_id is missing'] };
  const { signature, ...signed } = receipt;
  let valid = false;
  try {
    const der = pemDer(opts.publicKey);
    if ((await sha256Hex(der)) !== receipt.key_id) problems.push('signed by another key than the one given: key_id does not match it');
    else if (receipt.signature_algorithm !== ALGORITHM) problems.push(`unknown signature_algorithm ${String(receipt.signature_algorithm)}`);
    else {
      const key = await crypto.subtle.importKey('spki', der, RSA_PSS, false, ['verify']);
      valid = await verifyPss(key, signature, jcs(signed));
      if (!valid) problems.push('the signature does not verify over the receipt: a field was changed, added or removed');
    }
  } catch (err) {
    problems.push(`unreadable key: ${(err as Error).message}`);
  }
  return { valid: valid && problems.length === 0, problems };
}

export type WebhookHeaders = Headers | Record<string, string | string[] | undefined>;

function header(headers: WebhookHeaders, name: string): string | null {
  if (typeof (headers as Headers).get === 'function') return (headers as Headers).get(name);
  const record = headers as Record<string, string | string[] | undefined>;
  const value = record[name] ?? Object.entries(record).find(([k]) => k.toLowerCase() === name)?.[1];
  return Array.isArray(value) ? (value[0] ?? null) : (value ?? null);
}

/** Compares in time that does not depend on where the inputs differ. */
function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  let diff = 0;
  for (let i = 0; i < a.length; i++) diff |= a[i] ^ b[i];
  return diff === 0;
}

/**
 * True when a webhook delivery is genuine (Standard Webhooks): `webhook-signature` holds a
 * `v1,<base64 HMAC-SHA256>` of `<webhook-id>.<webhook-timestamp>.<raw body>` keyed with the
 * base64 part of `secret` after `whsec_` (any of several, space-separated, while a rotated secret
 * is honoured), and `webhook-timestamp` is within `toleranceSeconds` (default 300) of now.
 * Pass the raw body exactly as received, before parsing it.
 */
export async function verifyWebhook(
  secret: string,
  headers: WebhookHeaders,
  rawBody: string | Uint8Array,
  opts: { toleranceSeconds?: number; now?: Date } = {},
): Promise<boolean> {
  const id = header(headers, 'webhook-id');
  const timestamp = header(headers, 'webhook-timestamp');
  const signatures = header(headers, 'webhook-signature');
  if (!id || !timestamp || !signatures || !/^\d+$/.test(timestamp)) return false;
  const now = (opts.now ?? new Date()).getTime() / 1000;
  // Written so that a tolerance that is not a number (NaN from an unset setting) refuses rather than accepts any age.
  if (!(Math.abs(now - Number(timestamp)) <= (opts.toleranceSeconds ?? 300))) return false;
  try {
    const keyBytes = fromBase64(secret.startsWith('whsec_') ? secret.slice('whsec_'.length) : secret);
    const key = await crypto.subtle.importKey('raw', keyBytes, { name: 'HMAC', hash: 'SHA-256' }, false, ['sign']);
    const body = typeof rawBody === 'string' ? rawBody : new TextDecoder().decode(rawBody);
    const expected = new Uint8Array(await crypto.subtle.sign('HMAC', key, encoder.encode(`${id}.${timestamp}.${body}`)));
    return signatures.split(' ').some((entry) => {
      const [version, signature] = entry.split(',');
      if (version !== 'v1' || !signature) return false;
      try {
        return sameBytes(fromBase64(signature), expected);
      } catch {
        return false;
      }
    });
  } catch {
    return false;
  }
}
