import { z } from '@hono/zod-openapi';
import { errors, json, keyRoute } from '../../shared/platform/http/openapi';
import { BundleLine } from './format';
import * as s from './schemas';

const tags = ['Portability'];

export const exportBundleRoute = keyRoute({
  operationId: 'portability.exportBundle',
  method: 'get',
  path: '/v1/export/bundle',
  tags,
  summary: 'Back up the whole account as one JSONL file (streamed)',
  description:
    'One JSON object per line: a `header` (`format: "engram-bundle"`, `version`, `exported_at`, `counts` by type when the export started), then every `space`, `agent`, `pack`, `policy`, `memory` (text, tags, importance, context, agent, space, times), `triple` and `webhook` (without its secret), then a `trailer` with `lines` (the lines before it) and `sha256` (hex, of every byte before it, newlines included). Erased and expired memories are not in it. POST /v1/import?format=bundle restores it.',
  responses: {
    // Each line is a BundleLine; the line schemas are the format (format.ts) and so the SDK's types.
    200: { description: 'File download: application/x-ndjson, one `BundleLine` a line', content: { 'application/x-ndjson': { schema: BundleLine } } },
  },
});

export const importRoute = keyRoute({
  operationId: 'portability.import',
  method: 'post',
  path: '/v1/import',
  tags,
  streamedBody: true,
  summary: 'Import a bundle, a JSONL file or a mem0 export',
  description:
    "The body is the file itself (up to 100 MB, else 413 and nothing is written), read as it arrives. Every line is checked first; a bundle whose trailer is missing or does not match its lines or SHA-256 is refused with 422 `BUNDLE_INTEGRITY_FAILED` before anything is written. Then the valid lines are restored: memories through the batch store path (quota, duplicates, events, audit as POST /v1/memories/batch), spaces, packs, agents, policies and triples of a bundle through the create verbs of their families, with the same validation, caps, tier gates and audit entries as those routes; a restricted key needs the write scope of each kind it restores, else that line is refused with FORBIDDEN. Webhooks are not restored (their secret is not exported) and are counted in `skipped`. Each record has a source id (a bundle's original id, a mem0 id, a JSONL `id`/`uuid`, else the SHA-256 of the text): a record an earlier import restored is skipped, so importing the same file twice stores nothing the second time; a memory an erasure removed is counted in `erased` and not stored again. Invalid lines are listed in `errors` with their line number and do not stop the others. A file of at most 10,000 lines is stored before the answer (200); a larger one is checked, accepted with 202 and stored by a background job: follow it with GET /v1/imports/{id}, the `import.progress` events (one a slice) and `import.completed`. With `dry_run=true` nothing is written and the answer counts what would be: the spaces, packs, agents, policies and triples go through their create verbs in a transaction that is rolled back, so the errors list what those verbs would refuse (the first 10,000 such records).",
  request: {
    query: s.ImportQuery,
    body: {
      required: true,
      content: {
        // One declared type only: a declared JSON body would be parsed whole by the validator, past the streamed cap.
        'application/x-ndjson': {
          schema: z.string().openapi({ description: 'The file: a bundle, JSONL, or a mem0 JSON export (any Content-Type is read the same way)' }),
        },
      },
    },
  },
  responses: {
    200: json(s.Import, 'The import, completed: what was (or, in a dry run, would be) restored, and the errors by line'),
    202: json(s.Import, 'A file of more than 10,000 lines: checked and accepted, its records stored by a job; follow GET /v1/imports/{id}'),
    ...errors(413, 422),
  },
});

export const listImportsRoute = keyRoute({
  operationId: 'portability.listImports',
  method: 'get',
  path: '/v1/imports',
  tags,
  summary: 'Your imports, newest first',
  description: 'Every POST /v1/import that wrote (dry runs are not kept), with its counts and first errors.',
  request: { query: s.ImportListQuery },
  responses: { 200: json(s.ImportList, 'A page of imports') },
});

export const getImportRoute = keyRoute({
  operationId: 'portability.getImport',
  method: 'get',
  path: '/v1/imports/{import_id}',
  tags,
  summary: 'One import and its progress',
  description:
    'What POST /v1/import answered, as it is now: `processed` of `staged` records done, the counts, the first 1,000 errors by line, and `completed_at` once done.',
  request: { params: s.ImportParams },
  responses: { 200: json(s.Import, 'The import'), ...errors(404) },
});
