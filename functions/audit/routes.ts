import { z } from '@hono/zod-openapi';
import { errors, json, keyRoute } from '../../shared/platform/http/openapi';
import { routeOf } from '../../shared/platform/http/verb';
import { CSV_COLUMNS } from './export';
import * as s from './schemas';
import { exportAuditVerb, listAuditVerb, verifyAuditVerb } from './verbs';

const tags = ['Audit'];

const retention =
  'Only entries inside your retention window are returned (Free 7 days, Starter 14, Pro 30, Enterprise 90); older ones are pruned by scheduled maintenance.';

export const listRoute = keyRoute({
  ...routeOf(listAuditVerb),
  path: '/v1/audit',
  tags,
  summary: 'List audit entries, newest first',
  description: `Your tamper-evident trail: every memory operation and every other audited event (keys, spaces, shares, tenant changes), each a link in your hash chain. Memory operations appear as \`create\`, \`update\`, \`delete\` (a TTL purge is a \`delete\` with \`metadata.reason: "expired"\`) and \`rollback\`; \`event_type\` keeps only those. \`since\`/\`until\` are inclusive; \`since\` after \`until\` is 422 INVALID_RANGE. ${retention}`,
  responses: { 200: json(s.ListResponse, 'A page of entries'), ...errors(422) },
});

export const exportRoute = keyRoute({
  ...routeOf(exportAuditVerb),
  path: '/v1/audit/export',
  tags,
  summary: 'Export the audit trail (streamed file, Starter+)',
  description: `Oldest first (chain order), streamed. \`csv\` has the columns ${CSV_COLUMNS.join(', ')} (\`artifact_id\`: the memory id, else the audited resource id); \`json\` is an array and \`jsonl\` one object per line, both of full entries with \`prev_hash\` and \`entry_hash\`, so the chain can be recomputed from the file. 422 INVALID_RANGE when \`since\` is after \`until\`. ${retention}`,
  responses: {
    200: {
      description: 'File download (Content-Disposition: attachment): text/csv, application/json or application/x-ndjson',
      content: {
        'text/csv': { schema: z.string() },
        'application/json': { schema: z.array(s.AuditEntrySchema) },
        'application/x-ndjson': { schema: z.string() },
      },
    },
    ...errors(422),
  },
});

export const summaryRoute = keyRoute({
  operationId: 'audit.summary',
  method: 'get',
  path: '/v1/audit/summary',
  tags,
  summary: 'Operation and error counts for a period',
  description:
    '`total_operations` and `by_operation` count audit entries from `since` (clamped to your retention window; default its start) until now. `error_count` counts your authenticated requests answered 4xx or 5xx and `anomaly_count` the 5xx server errors among them; both are kept per UTC day, so they cover whole days from the day of `period_start`. `since` in the future is 422 INVALID_RANGE.',
  request: { query: s.SummaryQuery },
  responses: { 200: json(s.SummaryResponse, 'Counts for the period'), ...errors(422) },
});

export const verifyRoute = keyRoute({
  ...routeOf(verifyAuditVerb),
  path: '/v1/audit/verify',
  tags,
  summary: 'Verify memory content and the audit hash chain (Pro+)',
  description:
    'Recomputes SHA-256 of every memory observation against its stored hash (`memory_hash`), and walks your whole retained audit chain: seq without gaps from the retained start (`audit_gap`), each `prev_hash` equal to the previous `entry_hash` (`audit_link`), each `entry_hash` recomputed (`audit_hash`), and the chain head matching the last entry (`audit_head`, which catches entries removed at the end). Each failure names the memory urn or audit entry id with `expected` (computed) and `actual` (stored). Pages through both in constant memory.',
  responses: { 200: json(s.VerifyResponse, 'The verification result') },
});
