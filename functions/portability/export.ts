import { sha256 } from '@noble/hashes/sha2.js';
import { bytesToHex } from '@noble/hashes/utils.js';
import type { z } from '@hono/zod-openapi';
import type { TenantCtx } from '../../shared/platform/contract/context';
import { errorFields } from '../../shared/platform/contract/error-fields';
import { BUNDLE_FORMAT, BUNDLE_VERSION, type HeaderLine, type TrailerLine } from './format';
import { SECTIONS } from './queries';

const PAGE = 500;

/**
 * GET /v1/export/bundle (`portability.exportBundle`): the header with the counts, then every
 * section a keyset page at a time, then the trailer with the line count and the SHA-256 of every
 * byte before it. WebCrypto has no incremental digest, so the hash is @noble/hashes', fed as the
 * lines go out: memory stays one page whatever the size of the tenant. The counts are read before
 * the response starts, so a query that fails is an ordinary JSON error, not a 200 cut short.
 */
export async function exportBundle(ctx: TenantCtx): Promise<ReadableStream<Uint8Array>> {
  const { db, tenantId, now } = ctx;
  const counts: Record<string, number> = {};
  for (const s of SECTIONS) counts[s.type] = await s.count(db, tenantId, now);
  const encoder = new TextEncoder();
  const hash = sha256.create();
  let lines = 0;
  const encode = (records: Record<string, unknown>[]) => {
    let text = '';
    for (const r of records) text += `${JSON.stringify(r)}\n`;
    const bytes = encoder.encode(text);
    hash.update(bytes);
    lines += records.length;
    return bytes;
  };
  let section = -1;
  let after: string | null = null;
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      try {
        if (section < 0) {
          controller.enqueue(
            encode([
              { type: 'header', format: BUNDLE_FORMAT, version: BUNDLE_VERSION, exported_at: now.toISOString(), tenant_id: tenantId, counts } satisfies z.input<
                typeof HeaderLine
              >,
            ]),
          );
          section = 0;
          return;
        }
        // A pull must enqueue something or close: an empty section moves on to the next one here.
        for (;;) {
          if (section >= SECTIONS.length) {
            const trailer: z.input<typeof TrailerLine> = { type: 'trailer', lines, sha256: bytesToHex(hash.digest()) };
            controller.enqueue(encoder.encode(`${JSON.stringify(trailer)}\n`));
            controller.close();
            return;
          }
          const page = await SECTIONS[section].page(db, tenantId, now, after, PAGE);
          if (page.length < PAGE) {
            section += 1;
            after = null;
          } else after = page[page.length - 1].key;
          if (page.length) {
            controller.enqueue(encode(page.map((p) => p.line)));
            return;
          }
        }
      } catch (err) {
        ctx.services.log.error('bundle export failed', errorFields(err));
        controller.error(new Error('Export failed')); // the driver's error would carry the statement's parameters
      }
    },
  });
}
