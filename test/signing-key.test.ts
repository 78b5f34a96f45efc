import { chmodSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { KEY_FILE, nodeSigningKey } from '../shared/node/signing-key';
import { parseConfig } from '../shared/platform/contract/config';
import { createLogger, type Logger } from '../shared/platform/data/log';
import { generateSigningKeyPem, verifySignature } from '../shared/platform/contract/trace-signing';

/** Key custody on Node (docs/architecture.md#trace-signing): where the key that signs traces lives. */
const dirs: string[] = [];
const tempDir = () => {
  const dir = mkdtempSync(join(tmpdir(), 'engram-key-'));
  dirs.push(dir);
  return dir;
};
afterAll(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));

function recordingLog(): Logger & { lines: string[] } {
  const lines: string[] = [];
  const base = createLogger('silent');
  const record = (level: string) => (message: string) => void lines.push(`${level}: ${message}`);
  return Object.assign(Object.create(base), { lines, info: record('info'), warn: record('warn'), error: record('error') });
}

const config = (env: Record<string, string>) => parseConfig({ EMBEDDING_PROVIDER: 'hash', ...env });

describe('the Node signing key', () => {
  it('is generated on first start into DATA_DIR, owner-only, and the same key is read on the next start', async () => {
    const dir = tempDir();
    const first = await nodeSigningKey(config({ DATA_DIR: dir }), recordingLog(), { sharedDatabase: false })();
    const file = join(dir, KEY_FILE);
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(readFileSync(file, 'utf8')).toMatch(/^-----BEGIN PRIVATE KEY-----/);
    const again = await nodeSigningKey(config({ DATA_DIR: dir }), recordingLog(), { sharedDatabase: false })();
    expect(again.keyId).toBe(first.keyId);
    const signature = await again.sign('root');
    expect(await verifySignature(first.publicKeyPem, 'root', signature)).toBe(true);
  });

  it('a key file readable by others is tightened, with a warning', async () => {
    const dir = tempDir();
    await nodeSigningKey(config({ DATA_DIR: dir }), recordingLog(), { sharedDatabase: false })();
    chmodSync(join(dir, KEY_FILE), 0o644);
    const log = recordingLog();
    await nodeSigningKey(config({ DATA_DIR: dir }), log, { sharedDatabase: false })();
    expect(statSync(join(dir, KEY_FILE)).mode & 0o777).toBe(0o600);
    expect(log.lines.join('\n')).toMatch(/warn: trace signing key file was readable by others/);
  });

  it('TRACE_SIGNING_KEY wins over the file, also as one line with literal \\n', async () => {
    const dir = tempDir();
    const pem = await generateSigningKeyPem();
    const fromFile = await nodeSigningKey(config({ DATA_DIR: dir }), recordingLog(), { sharedDatabase: false })();
    const oneLine = pem.trim().replace(/\n/g, '\\n');
    const fromSecret = await nodeSigningKey(config({ DATA_DIR: dir, TRACE_SIGNING_KEY: oneLine }), recordingLog(), { sharedDatabase: true })();
    expect(fromSecret.keyId).not.toBe(fromFile.keyId);
    expect(await nodeSigningKey(config({ DATA_DIR: dir, TRACE_SIGNING_KEY: pem }), recordingLog(), { sharedDatabase: true })()).toMatchObject({
      keyId: fromSecret.keyId,
    });
  });

  it('warns on a shared database without TRACE_SIGNING_KEY', async () => {
    const log = recordingLog();
    await nodeSigningKey(config({ DATA_DIR: tempDir() }), log, { sharedDatabase: true })();
    expect(log.lines.join('\n')).toMatch(/warn: TRACE_SIGNING_KEY is not set/);
  });

  it('refuses a key that is not RSA-4096 with a 503 naming the setting', async () => {
    const dir = tempDir();
    const { generateKeyPairSync } = await import('node:crypto');
    const small = generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey.export({ type: 'pkcs8', format: 'pem' }) as string;
    for (const bad of [small, 'not a key']) {
      const source = nodeSigningKey(config({ DATA_DIR: dir, TRACE_SIGNING_KEY: bad }), recordingLog(), { sharedDatabase: false });
      await expect(source()).rejects.toMatchObject({ status: 503, message: expect.stringMatching(/TRACE_SIGNING_KEY/) });
    }
  });
});
