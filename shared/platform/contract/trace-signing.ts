import { AppError } from './errors';
import { toHex } from './crypto';

/**
 * Trace signatures (docs/architecture.md#trace-signing): RSA-PSS with SHA-256, MGF1-SHA-256 and a 32-byte salt,
 * over the UTF-8 bytes of the root hash's hex string, with a 4096-bit key. WebCrypto only, so the
 * same code signs on Node and in workerd; where the key comes from is the deployment's business
 * (shared/node/signing-key.ts, functions/worker.ts).
 */
export const SIGNATURE_ALGORITHM = 'RSA-PSS-SHA256' as const;
export const KEY_BITS = 4096;
const PSS = { name: 'RSA-PSS', saltLength: 32 } as const;
const IMPORT = { name: 'RSA-PSS', hash: 'SHA-256' } as const;
const encoder = new TextEncoder();

export interface SigningKey {
  /** Hex SHA-256 of the public key's SPKI DER: `openssl pkey -pubin -outform DER | sha256sum`. */
  keyId: string;
  publicKeyPem: string;
  /** Base64 signature over the UTF-8 bytes of `text`. */
  sign(text: string): Promise<string>;
}

/** Where a deployment keeps its key, or why it has none (answered as 503 by what needs it). */
export type SigningKeySource = () => Promise<SigningKey>;

export function signingKeyMissing(problem: string): AppError {
  return new AppError('SERVICE_UNAVAILABLE', `Trace signing is not configured: ${problem}`);
}

function pemBody(pem: string, label: string): Uint8Array {
  const match = new RegExp(`-----BEGIN ${label}-----([A-Za-z0-9+/=\\s]+)-----END ${label}-----`).exec(pem.replace(/\\n/g, '\n'));
  if (!match) throw new Error(`expected a PEM "${label}" block`);
  return fromBase64(match[1].replace(/\s+/g, ''));
}

function toPem(der: ArrayBuffer, label: string): string {
  const lines = toBase64(new Uint8Array(der)).match(/.{1,64}/g) ?? [];
  return `-----BEGIN ${label}-----\n${lines.join('\n')}\n-----END ${label}-----\n`;
}

export function toBase64(bytes: Uint8Array): string {
  let binary = '';
  for (let i = 0; i < bytes.length; i += 0x8000) binary += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  return btoa(binary);
}

export function fromBase64(text: string): Uint8Array {
  const binary = atob(text);
  const bytes = new Uint8Array(binary.length);
  for (let i = 0; i < binary.length; i++) bytes[i] = binary.charCodeAt(i);
  return bytes;
}

/**
 * A signing key from a PKCS#8 PEM private key (`openssl genpkey -algorithm RSA -pkeyopt
 * rsa_keygen_bits:4096`). Literal `\n` sequences count as line breaks, as secrets stores often
 * keep a PEM on one line. Throws on anything but a 4096-bit RSA key.
 */
export async function importSigningKey(pkcs8Pem: string): Promise<SigningKey> {
  const privateKey = await crypto.subtle.importKey('pkcs8', pemBody(pkcs8Pem, 'PRIVATE KEY') as BufferSource, IMPORT, true, ['sign']);
  const bits = (privateKey.algorithm as RsaHashedKeyAlgorithm).modulusLength;
  if (bits !== KEY_BITS) throw new Error(`the trace signing key must be RSA-${KEY_BITS}, not RSA-${bits}`);
  // WebCrypto has no "public half of this private key": the JWK's modulus and exponent are it.
  const { n, e } = (await crypto.subtle.exportKey('jwk', privateKey)) as JsonWebKey;
  const publicKey = await crypto.subtle.importKey('jwk', { kty: 'RSA', n, e, alg: 'PS256', ext: true }, IMPORT, true, ['verify']);
  const spki = (await crypto.subtle.exportKey('spki', publicKey)) as ArrayBuffer;
  return {
    keyId: toHex(new Uint8Array(await crypto.subtle.digest('SHA-256', spki))),
    publicKeyPem: toPem(spki, 'PUBLIC KEY'),
    sign: async (text) => toBase64(new Uint8Array(await crypto.subtle.sign(PSS, privateKey, encoder.encode(text)))),
  };
}

/** A new 4096-bit key as PKCS#8 PEM (about a second of CPU on a laptop). */
export async function generateSigningKeyPem(): Promise<string> {
  const pair = (await crypto.subtle.generateKey({ ...IMPORT, modulusLength: KEY_BITS, publicExponent: new Uint8Array([1, 0, 1]) }, true, [
    'sign',
    'verify',
  ])) as CryptoKeyPair;
  return toPem((await crypto.subtle.exportKey('pkcs8', pair.privateKey)) as ArrayBuffer, 'PRIVATE KEY');
}

const publicKeys = new Map<string, Promise<CryptoKey>>();

/** Checks a base64 signature over `text` with an SPKI PEM public key; false for any malformed input. */
export async function verifySignature(publicKeyPem: string, text: string, signature: string): Promise<boolean> {
  try {
    let key = publicKeys.get(publicKeyPem);
    if (!key) {
      key = crypto.subtle.importKey('spki', pemBody(publicKeyPem, 'PUBLIC KEY') as BufferSource, IMPORT, false, ['verify']);
      if (publicKeys.size > 64) publicKeys.clear();
      publicKeys.set(publicKeyPem, key);
    }
    return await crypto.subtle.verify(PSS, await key, fromBase64(signature) as BufferSource, encoder.encode(text));
  } catch {
    return false;
  }
}

/** Builds the key once, on first use; a failure is kept so every caller gets the same 503. */
export function lazySigningKey(build: () => Promise<SigningKey>): SigningKeySource {
  let built: Promise<SigningKey> | null = null;
  return () => (built ??= build());
}

/** The key of the `TRACE_SIGNING_KEY` setting; without one, or with a bad one, signing answers 503. */
export function configuredSigningKey(pem: string | undefined): SigningKeySource {
  return lazySigningKey(async () => {
    if (!pem) throw signingKeyMissing('set TRACE_SIGNING_KEY to an RSA-4096 private key (PKCS#8 PEM)');
    return importSigningKey(pem).catch((err: Error) => Promise.reject(signingKeyMissing(`TRACE_SIGNING_KEY: ${err.message}`)));
  });
}
