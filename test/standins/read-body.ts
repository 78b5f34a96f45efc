import type { IncomingMessage } from 'node:http';

// A client that hangs up mid-body makes `for await (… of req)` reject with "aborted"; inside an async
// request handler that is an unhandled rejection, which fails the whole vitest run. A stand-in just
// drops such a request: null means "the client is gone".
export async function readBody(req: IncomingMessage): Promise<Buffer | null> {
  const chunks: Buffer[] = [];
  try {
    for await (const c of req) chunks.push(c as Buffer);
  } catch {
    return null;
  }
  return Buffer.concat(chunks);
}
