import { sql } from 'drizzle-orm';
import type { z } from '@hono/zod-openapi';
import type { AuthContext } from '../../shared/context';
import { csvField } from '../../shared/csv';
import { rows } from '../../shared/db';
import { live } from '../../shared/memory-access';
import type { Services } from '../../shared/services';
import { COLUMNS, type MemoryDto, type MemoryRow, toMemoryDto, whereReadable } from './queries';
import type { ExportQuery } from './schemas';

const PAGE = 500;

export const contentTypes = { md: 'text/markdown; charset=utf-8', json: 'application/json; charset=utf-8', csv: 'text/csv; charset=utf-8' } as const;

const CSV_COLUMNS = ['uuid', 'observation', 'tags', 'importance', 'confidence', 'recall_count', 'agent_id', 'space_id', 'context', 'hash', 'created_at', 'updated_at'] as const;


function formatter(format: keyof typeof contentTypes) {
  switch (format) {
    case 'json':
      return { head: '[\n', row: (m: MemoryDto, first: boolean) => `${first ? '' : ',\n'}${JSON.stringify(m)}`, tail: '\n]\n' };
    case 'csv':
      return { head: `${CSV_COLUMNS.join(',')}\r\n`, row: (m: MemoryDto) => `${CSV_COLUMNS.map((c) => csvField(m[c])).join(',')}\r\n`, tail: '' };
    default:
      return {
        head: '# Memories\n\n',
        row: (m: MemoryDto) =>
          `## ${m.created_at} · ${m.uuid}\n\n${m.observation}\n\n` +
          `- importance: ${m.importance}\n- tags: ${m.tags.join(', ') || '(none)'}\n` +
          (m.agent_id ? `- agent: ${m.agent_id}\n` : '') +
          (m.context ? `- context: ${m.context}\n` : '') +
          '\n',
        tail: '',
      };
  }
}

/**
 * Streams the caller's own memories, newest first, a page at a time with keyset pagination, so an
 * export of any size holds only one page in memory.
 */
export function exportStream(services: Services, auth: AuthContext, query: z.infer<typeof ExportQuery>): ReadableStream<Uint8Array> {
  const now = services.clock.now();
  const where = whereReadable(auth.tenantId, [], 'own', now, { tags: query.tags, agentId: query.agent_id });
  const fmt = formatter(query.format);
  const encoder = new TextEncoder();
  let cursor: { createdAt: string; id: string } | null = null;
  let first = true;
  let started = false;
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      try {
        if (!started) {
          started = true;
          controller.enqueue(encoder.encode(fmt.head));
        }
        const after = cursor ? sql`AND (m.created_at, m.id) < (${cursor.createdAt}::timestamptz, ${cursor.id}::uuid)` : sql``;
        const page = await rows<MemoryRow>(
          services.db,
          sql`SELECT ${COLUMNS} FROM memories m WHERE ${where} AND ${live(now)} ${after}
              ORDER BY m.created_at DESC, m.id DESC LIMIT ${PAGE}`,
        );
        let chunk = '';
        for (const row of page) {
          chunk += fmt.row(toMemoryDto(row), first);
          first = false;
        }
        if (chunk) controller.enqueue(encoder.encode(chunk));
        if (page.length < PAGE) {
          controller.enqueue(encoder.encode(fmt.tail));
          controller.close();
          return;
        }
        const last = page[page.length - 1];
        cursor = { createdAt: new Date(last.created_at).toISOString(), id: last.id };
      } catch (err) {
        services.log.error('export failed', { error: err instanceof Error ? err.message : String(err) });
        controller.error(err);
      }
    },
  });
}
