import { z } from '@hono/zod-openapi';
import { PageQuery, paging } from '../../shared/platform/data/pagination';

const target = z.string().min(1).max(64).openapi({ description: 'ISO 8601 time, or `N minutes|hours|days ago`', example: '2026-11-01T10:00:00Z' });

export const RollbackBody = z.object({ target }).openapi('RollbackRequest', { example: { target: '2 hours ago' } });
export const PreviewQuery = z.object({ target });

export const RollbackResponse = z
  .object({
    success: z.boolean(),
    rollback_id: z.string(),
    rolled_back_to: z.string(),
    artifacts_restored: z.number().int().openapi({ description: 'Memories deleted after the target, restored' }),
    operations_undone: z.number().int().openapi({ description: 'Memories created after the target, removed' }),
    memories_reverted: z.number().int().openapi({ description: 'Memories changed after the target, restored to their state at it' }),
    erased: z.number().int().openapi({ description: 'Memories that lived at the target but were erased since (POST /v1/erasures): not restored' }),
    compensation_plan_id: z.string().nullable().openapi({
      description: 'When ACTION trace steps lie after the target (Pro+): the compensation plan listing them (GET /v1/compensations/{id}); else null',
      example: null,
    }),
    message: z.string(),
  })
  .openapi('RollbackResponse');

export const PreviewResponse = z
  .object({
    target_timestamp: z.string(),
    artifacts_modified: z.number().int().openapi({ description: 'Memories that would be restored or reverted' }),
    artifacts_deleted: z.number().int().openapi({ description: 'Memories created after the target that would be removed' }),
    artifacts_restored: z.number().int(),
    memories_reverted: z.number().int(),
    erased: z.number().int().openapi({ description: 'Memories that lived at the target but were erased since: a rollback cannot restore them' }),
    size_bytes: z.number().int().openapi({ description: 'UTF-8 bytes of the observations that would change' }),
    safe_rollback: z
      .boolean()
      .openapi({ description: 'False when memories would be removed or lost, or ACTION trace steps after the target may have had side effects' }),
    warnings: z.array(z.string()),
  })
  .openapi('RollbackPreview');

export const HistoryQuery = PageQuery({ max: 100, default: 20 });

export const HistoryPaging = paging({ totals: ['total'], hasMore: true });

export const HistoryResponse = z
  .object({
    rollbacks: z.array(
      z.object({
        rollback_id: z.string(),
        target: z.string(),
        performed_at: z.string(),
        actor: z.string().nullable(),
        operations_undone: z.number().int(),
        artifacts_restored: z.number().int(),
        memories_reverted: z.number().int(),
      }),
    ),
    ...HistoryPaging.fields,
  })
  .openapi('RollbackHistory');
