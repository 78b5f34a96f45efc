import type { OpenAPIHono } from '@hono/zod-openapi';
import type { MaintenanceTask } from '../jobs/maintenance';
import type { JobHandler } from '../jobs/outbox';
import type { AppEnv } from './context';

/**
 * What an endpoint family gives the app: its router and OpenAPI tag, the background job topics it
 * handles and the maintenance tasks it runs on the schedule. The app, the job registry and the
 * cron schedule loop over one list of these (functions/families.ts); nothing else of a family is
 * imported by the root.
 */
export interface Family {
  /** The folder name, also the operationId prefix of its routes (`memories.search`). */
  name: string;
  /** Its OpenAPI tag; every route of the family carries it. None for families outside the document. */
  tag?: { name: string; description: string };
  router: OpenAPIHono<AppEnv>;
  jobs?: Record<string, JobHandler>;
  maintenance?: Record<string, MaintenanceTask>;
}

export const defineFamily = (family: Family): Family => family;
