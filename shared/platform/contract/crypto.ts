const encoder = new TextEncoder();
const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';

export async function sha256Hex(input: string | Uint8Array): Promise<string> {
  const bytes = typeof input === 'string' ? encoder.encode(input) : input;
  const digest = await crypto.subtle.digest('SHA-256', bytes as BufferSource);
  return toHex(new Uint8Array(digest));
}

export type Digest = (text: string) => string | Promise<string>;

/**
 * SHA-256 hex of a UTF-8 string: the runtime's synchronous hash where it has one (Node), else
 * WebCrypto, whose every digest hops through a thread pool and back.
 */
export const digestOf = (services: { hashSecret?: (text: string) => string }): Digest => services.hashSecret ?? sha256Hex;

export function toHex(bytes: Uint8Array): string {
  let out = '';
  for (const b of bytes) out += b.toString(16).padStart(2, '0');
  return out;
}

/**
 * Random bytes from the platform CSPRNG, fetched 4 KiB at a time: one getRandomValues call costs
 * about as much as the rest of a request id (Node's randomUUID keeps a pool the same way). A byte
 * is zeroed as it is handed out, so the pool holds no part of an issued secret.
 */
const pool = new Uint8Array(4096);
let poolAt = pool.length;
function randomByte(): number {
  if (poolAt === pool.length) {
    crypto.getRandomValues(pool);
    poolAt = 0;
  }
  const b = pool[poolAt];
  pool[poolAt++] = 0;
  return b;
}

/**
 * Uniformly random base62 string. Bytes >= 248 are rejected so that `% 62` has no bias
 * (248 = 4 * 62); 32 bytes of entropy need about 43 characters.
 */
export function randomBase62(length: number): string {
  let out = '';
  while (out.length < length) {
    const b = randomByte();
    if (b < 248) out += BASE62[b % 62];
  }
  return out;
}

/** Constant-time comparison for secrets of equal length (admin token, signatures). */
export function timingSafeEqual(a: string, b: string): boolean {
  const x = encoder.encode(a);
  const y = encoder.encode(b);
  let diff = x.length ^ y.length;
  for (let i = 0; i < Math.max(x.length, y.length); i++) diff |= (x[i] ?? 0) ^ (y[i] ?? 0);
  return diff === 0;
}
