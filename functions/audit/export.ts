import type { z } from '@hono/zod-openapi';
import type { TenantCtx } from '../../shared/platform/contract/context';
import { csvField } from '../../shared/platform/contract/csv';
import { type FileFormat, streamFile } from '../../shared/platform/http/download';
import * as q from './queries';
import { type AuditEntry, type ExportQuery, toEntryDto } from './schemas';
import { readWindow } from './service';

const PAGE = 1_000;

export const contentTypes = {
  csv: 'text/csv; charset=utf-8',
  json: 'application/json; charset=utf-8',
  jsonl: 'application/x-ndjson; charset=utf-8',
} as const;

/** The columns of the CSV export (`audit.export`); `artifact_id` is the memory id, else the audited resource's id. */
export const CSV_COLUMNS = ['timestamp', 'operation', 'agent_id', 'artifact_id', 'content_hash'] as const;

function formatOf(format: keyof typeof contentTypes): FileFormat<AuditEntry> {
  const contentType = contentTypes[format];
  switch (format) {
    case 'json':
      return { contentType, head: '[\n', row: (e, first) => `${first ? '' : ',\n'}${JSON.stringify(e)}`, tail: '\n]\n' };
    case 'jsonl':
      return { contentType, head: '', row: (e) => `${JSON.stringify(e)}\n`, tail: '' };
    default: {
      const cells = (e: AuditEntry) => [e.timestamp, e.operation, e.agent_id, e.memory_id ?? e.resource_id, e.content_hash];
      return { contentType, head: `${CSV_COLUMNS.join(',')}\r\n`, row: (e) => `${cells(e).map(csvField).join(',')}\r\n`, tail: '' };
    }
  }
}

/**
 * Streams the retained entries in chain order (oldest first, so a reader can recompute the hash
 * chain). Entries appended after the export started are left out, so the file is one consistent
 * prefix. The tier gate and the range check ran before (route and schema), so refusals are JSON.
 */
export async function exportFile(ctx: TenantCtx, query: z.infer<typeof ExportQuery>) {
  const where = q.whereInWindow(ctx.tenantId, readWindow(ctx, query));
  const maxSeq = (await q.chainHead(ctx.db, ctx.tenantId))?.seq ?? 0;
  const format = formatOf(query.format);
  const next = async (after: AuditEntry | null) => (await q.chainPage(ctx.db, where, after?.seq ?? 0, PAGE, maxSeq)).map(toEntryDto);
  return { stream: await streamFile(format, PAGE, next, ctx.services.log), contentType: format.contentType };
}
