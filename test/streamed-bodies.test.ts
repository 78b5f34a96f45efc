import { mkdtemp, rm } from 'node:fs/promises';
import http from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DRAIN_MAX_MS } from '../shared/node/http-server';
import { type ServerProcess, startServer, stopServer } from './server-process';

/**
 * Bodies a route reads as a stream (POST /v1/import), over the real Node server: a body past the
 * route's own cap is refused with 413 and the server goes on serving everyone else.
 */
const ADMIN = 'streamed-admin-token-0123456789';
let server: ServerProcess;
let dataDir: string;
let key: string;

beforeAll(async () => {
  dataDir = await mkdtemp(join(tmpdir(), 'engram-streamed-'));
  server = await startServer({ DATA_DIR: dataDir, ADMIN_TOKEN: ADMIN, EMBEDDING_PROVIDER: 'hash', LOG_LEVEL: 'warn' }, { timeoutMs: 90_000 });
  const res = await fetch(`${server.base}/admin/v1/tenants`, {
    method: 'POST',
    headers: { authorization: `Bearer ${ADMIN}`, 'content-type': 'application/json' },
    body: JSON.stringify({ email: `streamed-${crypto.randomUUID().slice(0, 8)}@example.com`, tier: 'free' }),
  });
  expect(res.status).toBe(201);
  key = ((await res.json()) as { api_key: string }).api_key;
}, 120_000);

afterAll(async () => {
  if (server) await stopServer(server, 'SIGKILL');
  if (dataDir) await rm(dataDir, { recursive: true, force: true });
});

/**
 * Sends `totalBytes` of JSONL to `path`, written as it is generated (never held whole), chunked
 * unless `contentLength`; resolves with the answer's status and once the connection is closed.
 */
function sendGenerated(path: string, totalBytes: number, contentLength: boolean): Promise<{ status?: number; closed: Promise<void> }> {
  const line = Buffer.from(`${JSON.stringify({ observation: 'x'.repeat(1000) })}\n`);
  return new Promise((resolve) => {
    const req = http.request({
      host: '127.0.0.1',
      port: server.port,
      method: 'POST',
      path,
      agent: false,
      headers: {
        authorization: `Bearer ${key}`,
        'content-type': 'application/x-ndjson',
        ...(contentLength ? { 'content-length': String(Math.ceil(totalBytes / line.length) * line.length) } : {}),
      },
    });
    const closed = new Promise<void>((done) => req.once('close', () => done()));
    req.on('response', (res) => {
      res.resume();
      resolve({ status: res.statusCode, closed });
    });
    req.on('error', () => resolve({ closed }));
    let sent = 0;
    const pump = () => {
      while (sent < totalBytes) {
        sent += line.length;
        if (!req.write(line)) return void req.once('drain', pump);
      }
      req.end();
    };
    pump();
  });
}

describe('a streamed body past its cap', () => {
  for (const contentLength of [false, true]) {
    it(`${contentLength ? 'with' : 'without'} Content-Length: 413, and the server keeps serving after the connection is let go`, async () => {
      const answer = await sendGenerated('/v1/import?format=jsonl&dry_run=true', 101 * 1024 * 1024, contentLength);
      expect(answer.status).toBe(413);
      await answer.closed;
      // Past the server's give-up on the rest of that body, which used to take the process down.
      await new Promise((r) => setTimeout(r, DRAIN_MAX_MS + 1_000));
      expect(server.proc.exitCode, server.output().slice(-2000)).toBeNull();
      expect((await fetch(`${server.base}/healthz`)).status).toBe(200);
    }, 120_000);
  }
});
