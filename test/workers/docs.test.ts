import { exports } from 'cloudflare:workers';
import { describe, expect, it } from 'vitest';

/**
 * /docs inside workerd: the page points at /docs/scalar.js, which the worker serves from its static
 * assets (wrangler.toml `[assets]`, the pinned @scalar/api-reference bundle), not from a CDN.
 */
const worker = (exports as unknown as { default: { fetch(req: Request): Promise<Response> } }).default;

describe('worker in workerd: /docs offline', () => {
  it('GET /docs loads the script from /docs/scalar.js', async () => {
    const res = await worker.fetch(new Request('https://engram.test/docs'));
    expect(res.status).toBe(200);
    const html = await res.text();
    expect(html).toContain('<script src="/docs/scalar.js">');
    expect(html).not.toMatch(/https?:\/\//);
  });

  it('GET /docs/scalar.js is the standalone bundle from the ASSETS binding', async () => {
    const res = await worker.fetch(new Request('https://engram.test/docs/scalar.js'));
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/javascript/);
    const js = await res.text();
    expect(js.length).toBeGreaterThan(1_000_000);
    expect(js).toContain('createApiReference');
    const etag = res.headers.get('etag');
    expect(etag).toBeTruthy();
    const again = await worker.fetch(new Request('https://engram.test/docs/scalar.js', { headers: { 'if-none-match': etag! } }));
    await again.arrayBuffer();
    expect(again.status).toBe(304);
  });
});
