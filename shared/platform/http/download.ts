import type { Context } from 'hono';
import type { AppEnv } from '../contract/context';
import { errorFields } from '../contract/error-fields';
import type { Logger } from '../data/log';

/** How a file format writes its rows: a head, each row (knowing whether it is the first), a tail. */
export interface FileFormat<Row> {
  contentType: string;
  head: string;
  row(item: Row, first: boolean): string;
  tail: string;
}

/**
 * Streams a file a keyset page at a time, so an export of any size holds one page in memory.
 * `next(after)` returns the page after the last row of the previous one (`null` first); a page
 * shorter than `pageSize` ends the file. The first page is read before the response starts, so a
 * query that fails is an ordinary JSON error, not a 200 cut short; checks that can refuse belong
 * before this is called for the same reason.
 */
export async function streamFile<Row>(
  format: FileFormat<Row>,
  pageSize: number,
  next: (after: Row | null) => Promise<Row[]>,
  log: Logger,
): Promise<ReadableStream<Uint8Array>> {
  const encoder = new TextEncoder();
  let last: Row | null = null;
  let first = true;
  let started = false;
  let firstPage: Row[] | null = await next(null);
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      try {
        if (!started) {
          started = true;
          if (format.head) controller.enqueue(encoder.encode(format.head));
        }
        const page = firstPage ?? (await next(last));
        firstPage = null;
        let chunk = '';
        for (const item of page) {
          chunk += format.row(item, first);
          first = false;
        }
        if (chunk) controller.enqueue(encoder.encode(chunk));
        if (page.length < pageSize) {
          if (format.tail) controller.enqueue(encoder.encode(format.tail));
          controller.close();
          return;
        }
        last = page[page.length - 1];
      } catch (err) {
        log.error('export failed', errorFields(err));
        controller.error(new Error('Export failed')); // the driver's error would carry the statement's parameters
      }
    },
  });
}

/** A streamed file response: `name-YYYY-MM-DD.ext` as an attachment, with the request id. */
export function download(c: Context<AppEnv>, file: { stream: ReadableStream<Uint8Array>; contentType: string; name: string; extension: string; now: Date }) {
  const stamp = file.now.toISOString().slice(0, 10);
  // A streamed body has no JSON schema to satisfy; the route documents its content types. Through
  // the context, so the headers set before it (the rate-limit fields) go with it.
  return c.body(file.stream, 200, {
    'content-type': file.contentType,
    'content-disposition': `attachment; filename="${file.name}-${stamp}.${file.extension}"`,
    'x-request-id': c.get('requestId'),
  }) as never;
}
