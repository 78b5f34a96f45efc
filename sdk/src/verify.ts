/**
 * Offline checks that need only WebCrypto: a trace certificate (docs/change-control.md#the-hashes)
 * and a webhook delivery (Standard Webhooks, docs/teams-and-webhooks.md#verifying-a-delivery).
 */
import type { components } from './generated/openapi.js';

export type TraceCertificate = components['schemas']['TraceCertificate'];

export interface CertificateCheck {
  /** Every check passed. */
  valid: boolean;
  /** The key hashes to `key_id` (and is the expected key when one was given). */
  keyValid: boolean;
  /** The steps' chain hashes link from the empty root to `integrity_root_hash`, indexes 0..n-1. */
  chainValid: boolean;
  /** The signature verifies over `integrity_root_hash` with the key. */
  signatureValid: boolean;
  /** What failed, in words; empty when valid. */
  problems: string[];
}

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

/**
 * Verifies a certificate of GET /v1/traces/{trace_id}/certificate without the server, as the
 * server signs (functions/traces): RSA-PSS with SHA-256, MGF1-SHA-256 and a 32-byte salt over the
 * UTF-8 hex of `integrity_root_hash`; `key_id` the SHA-256 hex of the key's SPKI DER; each chain
 * hash the SHA-256 hex of the previous chain hash (empty before the first) + the step's integrity
 * hash, the last one the root. Pass `publicKey` (a PEM from GET /v1/traces/public-key, kept from
 * a source you trust) to refuse a certificate signed by any other key; without it the
 * certificate's own key is used, which proves integrity but not who signed.
 */
export async function verifyTraceCertificate(certificate: TraceCertificate, opts: { publicKey?: string } = {}): Promise<CertificateCheck> {
  const problems: string[] = [];
  let keyValid = false;
  let signatureValid = false;

  let chainValid = certificate.steps.length === certificate.step_count;
  if (!chainValid) problems.push(`${certificate.steps.length} steps listed, ${certificate.step_count} sealed`);
  let chain = await sha256Hex(new Uint8Array(0));
  let previous = '';
  for (const [i, step] of certificate.steps.entries()) {
    if (step.step_index !== i) {
      chainValid = false;
      problems.push(`step ${i} has index ${step.step_index}`);
    }
    chain = await sha256Hex(encoder.encode(previous + step.integrity_hash));
    if (chain !== step.chain_hash) {
      chainValid = false;
      problems.push(`step ${i}: chain_hash is not SHA-256(previous chain hash + integrity_hash)`);
    }
    previous = step.chain_hash;
  }
  if ((certificate.steps.length ? previous : chain) !== certificate.integrity_root_hash) {
    chainValid = false;
    problems.push('the last chain hash is not integrity_root_hash');
  }

  try {
    const der = pemDer(certificate.public_key);
    keyValid = (await sha256Hex(der)) === certificate.key_id;
    if (!keyValid) problems.push('public_key does not hash to key_id');
    if (opts.publicKey !== undefined) {
      const expected = await sha256Hex(pemDer(opts.publicKey));
      if (expected !== certificate.key_id) {
        keyValid = false;
        problems.push('signed by another key than the one expected');
      }
    }
    if (certificate.signature_algorithm !== 'RSA-PSS-SHA256') problems.push(`unknown signature_algorithm ${certificate.signature_algorithm}`);
    else {
      const key = await crypto.subtle.importKey('spki', der, RSA_PSS, false, ['verify']);
      signatureValid = await crypto.subtle.verify(
        { name: 'RSA-PSS', saltLength: SALT_LENGTH },
        key,
        fromBase64(certificate.signature),
        encoder.encode(certificate.integrity_root_hash),
      );
      if (!signatureValid) problems.push('the signature does not verify over integrity_root_hash');
    }
  } catch (err) {
    problems.push(`unreadable key or signature: ${(err as Error).message}`);
  }
  return { valid: keyValid && chainValid && signatureValid && problems.length === 0, keyValid, chainValid, signatureValid, problems };
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
  if (Math.abs(now - Number(timestamp)) > (opts.toleranceSeconds ?? 300)) return false;
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
