import { z } from '@hono/zod-openapi';

export const ImportQuery = z.object({
  format: z.enum(['bundle', 'jsonl', 'mem0']).openapi({
    description:
      '`bundle`: a file of GET /v1/export/bundle; `jsonl`: one memory per line (an item of GET /v1/memories/export?format=json, or `{observation|text, tags?, importance?, context?, agent_id?, id?}`); `mem0`: mem0\'s export, `{"results": [...]}` or an array of `{id, memory, metadata, user_id, agent_id, ...}`',
    example: 'bundle',
  }),
  dry_run: z
    .enum(['true', 'false', '1', '0'])
    .default('false')
    .transform((v) => v === 'true' || v === '1')
    .openapi({ description: 'Check every line and count what would be restored; write nothing', example: 'true' }),
});

const Counts = z.object({
  memory: z.number().int(),
  space: z.number().int(),
  triple: z.number().int(),
  policy: z.number().int(),
  agent: z.number().int(),
  pack: z.number().int(),
  webhook: z.number().int(),
});

const LineError = z
  .object({
    line: z.number().int().openapi({ description: 'Line number in the file, from 1 (for mem0, the position of the item in its array)' }),
    code: z.string().openapi({
      description:
        'INVALID_JSON, INVALID_RECORD, UNKNOWN_TYPE, LINE_TOO_LONG, INVALID_TEXT, FEATURE_NOT_AVAILABLE, or the error code the store answered (RATE_LIMITED, ...)',
      example: 'INVALID_RECORD',
    }),
    message: z.string(),
  })
  .openapi('ImportLineError');

export const ImportSummary = z
  .object({
    format: z.enum(['bundle', 'jsonl', 'mem0']),
    dry_run: z.boolean(),
    lines: z.number().int().openapi({ description: 'Lines read (header and trailer included), or items of a mem0 file' }),
    valid: z.number().int(),
    invalid: z.number().int().openapi({ description: 'Lines with at least one error' }),
    stored: Counts.openapi({ description: 'What this import restored, by record type (none in a dry run)' }),
    already_imported: z.number().int().openapi({ description: 'Valid records an earlier import restored: skipped' }),
    duplicates: z.number().int().openapi({ description: 'Records whose source id an earlier line of the same file had: skipped' }),
    skipped: z.object({ webhook: z.number().int().openapi({ description: 'Webhooks are exported without their secret and not restored' }) }),
    failed: z.number().int().openapi({ description: 'Valid records the store refused (a quota, a tier limit); each has an error' }),
    errors: z.array(LineError).openapi({ description: 'Per-line errors in line order, at most 1,000' }),
    errors_total: z.number().int(),
  })
  .openapi('ImportSummary');
