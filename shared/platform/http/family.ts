import type { OpenAPIHono } from '@hono/zod-openapi';
import type { MaintenanceTask } from '../../jobs/maintenance';
import type { JobHandler } from '../../jobs/outbox';
import type { AppEnv, TenantCtx } from '../contract/context';
import type { Feature } from '../contract/tiers';

/**
 * How a family restores one record of a bundle line kind (`policy`, `space`, ...): through its own
 * create verb, so the import gets every rule the family's route applies (the same schema, caps,
 * locks, tier gates, audit entry, id). `restore` runs inside the import's unit of work (`ctx.work`
 * is set) and answers the new record's id, or null when the tenant already has one of that name
 * (nothing written). A refusal is thrown as an AppError: the importer lists it for that line.
 */
export interface Restorer {
  /** The feature the family's create route asks of the tier, if any. */
  feature?: Feature;
  /** `body` is what the family's create route takes as its body; the verb validates it as the route does. */
  restore(ctx: TenantCtx, body: Record<string, unknown>): Promise<string | null>;
}

/**
 * What an endpoint family gives the app: its router and OpenAPI tag, the background job topics it
 * handles, the maintenance tasks it runs on the schedule and the bundle line kinds it restores.
 * The app, the job registry and the cron schedule loop over one list of these
 * (functions/families.ts); nothing else of a family is imported by the root.
 */
export interface Family {
  /** The folder name, also the operationId prefix of its routes (`memories.search`). */
  name: string;
  /** Its OpenAPI tag; every route of the family carries it. None for families outside the document. */
  tag?: { name: string; description: string };
  router: OpenAPIHono<AppEnv>;
  jobs?: Record<string, JobHandler>;
  maintenance?: Record<string, MaintenanceTask>;
  /** Bundle line kinds this family restores (docs/portability.md), by kind. */
  restore?: Record<string, Restorer>;
}

/** A registered restorer and the family that owns it (its scope is `<family>:write`). */
export interface RegisteredRestorer extends Restorer {
  family: string;
}

const restorers = new Map<string, RegisteredRestorer>();

/**
 * Families never import each other (docs/architecture.md#layers): the portability family finds
 * the verb that restores a kind here, registered when the family is defined.
 */
export const restorerOf = (kind: string): RegisteredRestorer | undefined => restorers.get(kind);

export const defineFamily = (family: Family): Family => {
  for (const [kind, restorer] of Object.entries(family.restore ?? {})) {
    if (restorers.has(kind) && restorers.get(kind)!.family !== family.name) throw new Error(`two families restore ${kind}`);
    restorers.set(kind, { ...restorer, family: family.name });
  }
  return family;
};
