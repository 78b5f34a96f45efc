import { z } from '@hono/zod-openapi';
import { VERSION } from '../../shared/platform/contract/services';

export const Healthz = z.object({ status: z.literal('ok') }).openapi('Healthz');
const Check = z.object({ status: z.enum(['ok', 'error', 'disabled']), latency_ms: z.number().optional(), error: z.string().optional() });
export const Health = z
  .object({
    status: z.enum(['healthy', 'degraded', 'unhealthy']),
    version: z.string().openapi({ example: VERSION }),
    timestamp: z.string(),
    enterprise_available: z.boolean(),
    checks: z.record(z.string(), Check).optional().openapi({ description: 'With a key only' }),
    warnings: z.array(z.string()).optional().openapi({ description: 'With a key only' }),
  })
  .openapi('Health');
export const Status = z
  .object({
    version: z.string(),
    status: z.literal('operational'),
    timestamp: z.string(),
    uptime_seconds: z.number().optional(),
    total_memories_stored: z.number().optional(),
    avg_response_time_ms: z.number().optional(),
  })
  .openapi('Status');
