import type { z } from '@hono/zod-openapi';
import type { AuthContext } from '../../shared/context';
import { csvField } from '../../shared/csv';
import type { Services } from '../../shared/services';
import { requireFeature } from '../../shared/tiers';
import * as q from './queries';
import { type AuditEntry, type ExportQuery, toEntryDto } from './schemas';
import { readWindow } from './service';

const PAGE = 1_000;

export const contentTypes = {
  csv: 'text/csv; charset=utf-8',
  json: 'application/json; charset=utf-8',
  jsonl: 'application/x-ndjson; charset=utf-8',
} as const;

/** The columns of spec §2.11; `artifact_id` is the memory id, else the audited resource's id. */
export const CSV_COLUMNS = ['timestamp', 'operation', 'agent_id', 'artifact_id', 'content_hash'] as const;


function formatter(format: keyof typeof contentTypes) {
  switch (format) {
    case 'json':
      return { head: '[\n', row: (e: AuditEntry, first: boolean) => `${first ? '' : ',\n'}${JSON.stringify(e)}`, tail: '\n]\n' };
    case 'jsonl':
      return { head: '', row: (e: AuditEntry) => `${JSON.stringify(e)}\n`, tail: '' };
    default: {
      const cells = (e: AuditEntry) => [e.timestamp, e.operation, e.agent_id, e.memory_id ?? e.resource_id, e.content_hash];
      return { head: `${CSV_COLUMNS.join(',')}\r\n`, row: (e: AuditEntry) => `${cells(e).map(csvField).join(',')}\r\n`, tail: '' };
    }
  }
}

/**
 * Checks the tier and the range before anything is sent (so refusals are ordinary JSON errors),
 * then streams the retained entries in chain order (oldest first, so a reader can recompute the
 * hash chain), a keyset page at a time: an export of any size holds one page in memory. Entries
 * appended after the export started are left out, so the file is one consistent prefix.
 */
export async function exportStream(services: Services, auth: AuthContext, query: z.infer<typeof ExportQuery>): Promise<ReadableStream<Uint8Array>> {
  requireFeature(auth.tier, 'audit_export', 'TIER_REQUIRED');
  const now = services.clock.now();
  const where = q.whereInWindow(auth.tenantId, readWindow(auth, now, query));
  const head = await q.chainHead(services.db, auth.tenantId);
  const maxSeq = head?.seq ?? 0;
  const fmt = formatter(query.format);
  const encoder = new TextEncoder();
  let cursor = 0;
  let first = true;
  let started = false;
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      try {
        if (!started) {
          started = true;
          if (fmt.head) controller.enqueue(encoder.encode(fmt.head));
        }
        const page = await q.chainPage(services.db, where, cursor, PAGE, maxSeq);
        let chunk = '';
        for (const row of page) {
          chunk += fmt.row(toEntryDto(row), first);
          first = false;
        }
        if (chunk) controller.enqueue(encoder.encode(chunk));
        if (page.length < PAGE) {
          if (fmt.tail) controller.enqueue(encoder.encode(fmt.tail));
          controller.close();
          return;
        }
        cursor = Number(page[page.length - 1].seq);
      } catch (err) {
        services.log.error('audit export failed', { error: err instanceof Error ? err.message : String(err) });
        controller.error(err);
      }
    },
  });
}
