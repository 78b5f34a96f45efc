import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { gzipSync } from 'node:zlib';

interface Script {
  plain: Uint8Array<ArrayBuffer>;
  gzip: Uint8Array<ArrayBuffer>;
  etag: string;
}

let loading: Promise<Script> | null = null;

/** Scalar's standalone bundle from the installed `@scalar/api-reference` (about 3.5 MB, 1 MB gzipped). */
async function load(): Promise<Script> {
  const entry = createRequire(import.meta.url).resolve('@scalar/api-reference'); // .../dist/index.js
  const plain = new Uint8Array(await readFile(join(dirname(entry), 'browser', 'standalone.js')));
  return { plain, gzip: new Uint8Array(gzipSync(plain)), etag: `"${createHash('sha256').update(plain).digest('base64url').slice(0, 27)}"` };
}

/** Read and gzipped once per process, on the first request for it; conditional requests get 304. */
export async function nodeDocsScript(request: Request): Promise<Response> {
  let script: Script;
  try {
    script = await (loading ??= load());
  } catch (err) {
    loading = null;
    throw err;
  }
  const headers = new Headers({
    'content-type': 'text/javascript; charset=utf-8',
    'cache-control': 'public, max-age=86400',
    etag: script.etag,
    vary: 'accept-encoding',
  });
  if (request.headers.get('if-none-match') === script.etag) return new Response(null, { status: 304, headers });
  if (/\bgzip\b/.test(request.headers.get('accept-encoding') ?? '')) {
    headers.set('content-encoding', 'gzip');
    return new Response(script.gzip, { status: 200, headers });
  }
  return new Response(script.plain, { status: 200, headers });
}
