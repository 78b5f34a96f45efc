import type { z } from '@hono/zod-openapi';
import type { TenantCtx } from '../../shared/platform/contract/context';
import { csvField } from '../../shared/platform/contract/csv';
import { type FileFormat, streamFile } from '../../shared/platform/http/download';
import * as q from './queries';
import type { ExportQuery } from './schemas';

const PAGE = 500;

const contentTypes = { md: 'text/markdown; charset=utf-8', json: 'application/json; charset=utf-8', csv: 'text/csv; charset=utf-8' } as const;

const CSV_COLUMNS = [
  'uuid',
  'observation',
  'tags',
  'importance',
  'confidence',
  'recall_count',
  'agent_id',
  'space_id',
  'context',
  'hash',
  'created_at',
  'updated_at',
] as const;

type Exported = q.MemoryDto & { cursor: { createdAt: string; id: string } };

function formatOf(format: keyof typeof contentTypes): FileFormat<Exported> {
  const contentType = contentTypes[format];
  switch (format) {
    case 'json':
      // The documented memory fields only: the keyset cursor is how the stream pages, not data.
      return { contentType, head: '[\n', row: ({ cursor: _cursor, ...m }, first) => `${first ? '' : ',\n'}${JSON.stringify(m)}`, tail: '\n]\n' };
    case 'csv':
      return { contentType, head: `${CSV_COLUMNS.join(',')}\r\n`, row: (m) => `${CSV_COLUMNS.map((c) => csvField(m[c])).join(',')}\r\n`, tail: '' };
    default:
      return {
        contentType,
        head: '# Memories\n\n',
        row: (m) =>
          `## ${m.created_at} · ${m.uuid}\n\n${m.observation}\n\n` +
          `- importance: ${m.importance}\n- tags: ${m.tags.join(', ') || '(none)'}\n` +
          (m.agent_id ? `- agent: ${m.agent_id}\n` : '') +
          (m.context ? `- context: ${m.context}\n` : '') +
          '\n',
        tail: '',
      };
  }
}

/** Streams the caller's own live memories, newest first, a keyset page at a time. */
export async function exportFile(ctx: TenantCtx, query: z.infer<typeof ExportQuery>) {
  const scope = q.whereReadable(ctx.tenantId, [], 'own', ctx.now, { tags: query.tags, agentId: query.agent_id, key: ctx.auth.restriction });
  const format = formatOf(query.format);
  const next = async (after: Exported | null): Promise<Exported[]> =>
    (await q.pageAfter(ctx.db, scope, after?.cursor ?? null, PAGE)).map((row) => ({
      ...q.toMemoryDto(row),
      cursor: { createdAt: new Date(row.created_at).toISOString(), id: row.id },
    }));
  return { stream: await streamFile<Exported>(format, PAGE, next, ctx.services.log), contentType: format.contentType };
}
