import { z } from '@hono/zod-openapi';
import { PageQuery, paging } from '../../shared/platform/data/pagination';
import { PrefixedId } from '../../shared/platform/contract/params';

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
  held: z.number().int().openapi({ description: 'Memory lines a memory policy held for review (GET /v1/approvals): stored only once approved' }),
});

const LineError = z
  .object({
    line: z.number().int().openapi({ description: 'Line number in the file, from 1 (for mem0, the position of the item in its array)' }),
    code: z.string().openapi({
      description:
        'INVALID_JSON, INVALID_RECORD, UNKNOWN_TYPE, LINE_TOO_LONG, INVALID_TEXT (a NUL or unpaired surrogate anywhere in the line), FORBIDDEN (the key lacks the write scope of the kind), a tier refusal, or the code the create route of the kind answers (svc_ram.v1.control.invalid_policy, svc_ram.v1.tier.limit_exceeded, VALIDATION_ERROR, RATE_LIMITED, ...)',
      example: 'INVALID_RECORD',
    }),
    message: z.string(),
  })
  .openapi('ImportLineError');

const when = (description: string) => z.string().datetime().nullable().openapi({ description });

export const Import = z
  .object({
    id: z
      .string()
      .nullable()
      .openapi({ description: 'The import (`imp_...`), for GET /v1/imports/{id}; null in a dry run', example: 'imp_4f9Qw2b8Zr1LmT0aXcVe3K' }),
    status: z.enum(['queued', 'running', 'completed']).openapi({
      description:
        '`running` while its records are being stored (an answer of 202: a job stores it, a slice at a time), `completed` once every line is done (a dry run answers `completed`)',
    }),
    format: z.enum(['bundle', 'jsonl', 'mem0']),
    dry_run: z.boolean(),
    lines: z.number().int().openapi({ description: 'Lines read (header and trailer included), or items of a mem0 file' }),
    valid: z.number().int(),
    invalid: z.number().int().openapi({ description: 'Lines with an error (each line has at most one)' }),
    staged: z
      .number()
      .int()
      .openapi({ description: 'Valid records to store: the valid lines less webhooks and duplicates (in a dry run, also less those imported before)' }),
    processed: z
      .number()
      .int()
      .openapi({ description: 'Staged records done so far (stored, already imported or failed): `processed / staged` is the progress' }),
    stored: Counts.openapi({ description: 'What this import restored, by record type (none in a dry run)' }),
    already_imported: z.number().int().openapi({ description: 'Valid records an earlier import restored: skipped' }),
    duplicates: z.number().int().openapi({ description: 'Records whose source id an earlier line of the same file had: skipped' }),
    skipped: z.object({
      webhook: z.number().int().openapi({ description: 'Webhooks are exported without their secret and not restored' }),
      deleted: z.number().int().openapi({ description: 'mem0 items marked `deleted_at`: not imported' }),
      expired: z.number().int().openapi({ description: 'mem0 items whose `expiration_date` had passed: not imported' }),
      relation: z.number().int().openapi({ description: 'mem0 graph relations left out because the tier has no knowledge graph' }),
    }),
    failed: z.number().int().openapi({ description: 'Valid records the store refused (a quota, a tier limit); each has an error' }),
    erased: z.number().int().openapi({
      description: 'Memories an erasure removed (POST /v1/erasures): staged lines it dropped, and lines naming a memory it erased before, not stored again',
    }),
    errors: z.array(LineError).openapi({ description: 'Per-line errors in line order, at most 1,000' }),
    errors_total: z.number().int(),
    created_at: when('When the import was received'),
    completed_at: when('When its last line was done; null while it runs'),
  })
  .openapi('Import');

export const ImportParams = z.object({ import_id: PrefixedId('import', 'The import') });
export const ImportListQuery = PageQuery({ max: 100, default: 20 });
export const ImportPaging = paging({ totals: ['total'], hasMore: true });
export const ImportList = z.object({ imports: z.array(Import), ...ImportPaging.fields }).openapi('ImportList');
