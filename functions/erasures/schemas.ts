import { z } from '@hono/zod-openapi';
import { PageQuery, paging } from '../../shared/platform/data/pagination';
import { PrefixedId, Timestamp, UrnId } from '../../shared/platform/contract/params';
import { PLACES } from './purge';

export const MAX_MEMORY_IDS = 1000;
const MAX_TAGS = 50;

export const EraseBody = z
  .object({
    memory_ids: z
      .array(UrnId('A memory of yours; an id that names none of yours erases nothing and is not reported'))
      .min(1)
      .max(MAX_MEMORY_IDS)
      .optional()
      .openapi({ description: `At most ${MAX_MEMORY_IDS} memories, live, deleted or expired` }),
    agent_id: z.string().trim().min(1).max(128).optional().openapi({ description: 'Memories this agent stored', example: 'support-bot' }),
    tags: z
      .array(z.string().trim().min(1).max(64))
      .min(1)
      .max(MAX_TAGS)
      .optional()
      .openapi({ description: 'Memories with any of these tags', example: ['customer:42'] }),
    space_id: UrnId('Memories of this space').optional(),
    before: Timestamp('Memories created before this time').optional(),
    reason: z.string().trim().min(1).max(500).openapi({ description: 'Why (kept in the receipt)', example: 'GDPR Art. 17 request #8812' }),
    dry_run: z.boolean().default(false).openapi({ description: 'Count what would be erased; write nothing (the receipt is signed but not kept)' }),
  })
  .refine((b) => b.memory_ids || b.agent_id || b.tags || b.space_id || b.before, {
    message: 'name at least one selector: memory_ids, agent_id, tags, space_id or before',
    path: ['memory_ids'],
  })
  .openapi('ErasureRequest', { example: { tags: ['customer:42'], reason: 'GDPR Art. 17 request #8812' } });

export const AccountDeleteBody = z
  .object({ confirm: z.string().trim().min(1).max(320).openapi({ description: "The account's e-mail address", example: 'ada@example.com' }) })
  .openapi('AccountDeleteRequest', { example: { confirm: 'ada@example.com' } });

export const ErasureParams = z.object({ erasure_id: PrefixedId('erasure', 'The erasure') });

const Counts = z
  .object(Object.fromEntries(PLACES.map((p) => [p, z.number().int()])) as Record<(typeof PLACES)[number], z.ZodNumber>)
  .openapi('ErasureCounts', { description: 'What was erased, per place engram keeps memory content (docs/security.md#erasure)' });

export const Receipt = z
  .object({
    erasure_id: z.string().openapi({ example: 'ers_4f9Qw2b8Zr1LmT0aXcVe3K' }),
    erased_at: z.string(),
    reason: z.string(),
    dry_run: z.boolean(),
    selector: z
      .object({
        memory_ids: z.array(z.string()).optional(),
        agent_id: z.string().optional(),
        tags: z.array(z.string()).optional(),
        space_id: z.string().optional(),
        before: z.string().optional(),
        account: z.boolean().optional(),
      })
      .openapi({ description: 'The selector as understood (`account: true` for DELETE /v1/account)' }),
    memory_ids: z.array(z.string()).openapi({ description: 'Every memory erased (urn:uuid), including Cortex insights drawn from them' }),
    counts: Counts,
    audit_seq: z.number().int().nullable().openapi({ description: 'The `erasure.completed` audit entry (null on a dry run)' }),
    chain_head: z.string().nullable().openapi({ description: 'Its entry hash, the audit chain head after the erasure (null on a dry run)' }),
    signature: z.string().openapi({ description: 'Base64 RSA-PSS (SHA-256, MGF1-SHA-256, salt 32) over the JCS bytes of this receipt without `signature`' }),
    signature_algorithm: z.literal('RSA-PSS-SHA256'),
    key_id: z.string().openapi({ description: 'The trace signing key (GET /v1/traces/public-key)' }),
  })
  .openapi('ErasureReceipt', {
    example: {
      erasure_id: 'ers_4f9Qw2b8Zr1LmT0aXcVe3K',
      erased_at: '2026-11-22T10:00:00.000Z',
      reason: 'GDPR Art. 17 request #8812',
      dry_run: false,
      selector: { tags: ['customer:42'] },
      memory_ids: ['urn:uuid:01935f6e-8a2b-7c3d-9e4f-5a6b7c8d9e0f'],
      counts: Object.fromEntries(PLACES.map((p) => [p, p === 'memories' ? 1 : p === 'events' ? 3 : 0])) as Record<(typeof PLACES)[number], number>,
      audit_seq: 42,
      chain_head: '9f2c4b7e1a0d5c3b8e6f4a2d1c0b9e8f7a6d5c4b3a2f1e0d9c8b7a6f5e4d3c2b',
      signature: 'MEUCIQ…base64…',
      signature_algorithm: 'RSA-PSS-SHA256',
      key_id: '97f707696ccc498d959d06ced1373c596a3bbeeef463abd172d6fc76b9d6c3da',
    },
  });

export const ListQuery = PageQuery({ max: 100, default: 20 });
export const ListPaging = paging({ totals: ['total'], hasMore: true });
export const ReceiptList = z.object({ erasures: z.array(Receipt), ...ListPaging.fields }).openapi('ErasureList');
