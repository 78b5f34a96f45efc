import { eq } from 'drizzle-orm';
import { controlSettings } from '../../schema';
import type { DbOrTx } from '../platform/data/db';
import type { ApprovalMode, EvaluationMode } from './types';

/** A tenant's approval and evaluation settings (`GET/PUT /v1/control/settings`, docs/architecture.md#approvals). */
export interface ControlSettings {
  approval_mode: ApprovalMode;
  evaluation_mode: EvaluationMode;
  min_approvals: number;
  require_manager: boolean;
  allowed_roles: string[];
  /** The built-in MemoryInjection policy holds memory writes (off by default). */
  memory_guard: boolean;
}

export const DEFAULT_CONTROL_SETTINGS: ControlSettings = {
  approval_mode: 'solo',
  evaluation_mode: 'enforcement',
  min_approvals: 2,
  require_manager: false,
  allowed_roles: [],
  memory_guard: false,
};

/** The tenant's stored settings (the actions family writes them), or the defaults when it never set any. */
export async function readControlSettings(db: DbOrTx, tenantId: string): Promise<ControlSettings> {
  const [row] = await db.select().from(controlSettings).where(eq(controlSettings.tenantId, tenantId));
  if (!row) return DEFAULT_CONTROL_SETTINGS;
  return {
    approval_mode: row.approvalMode,
    evaluation_mode: row.evaluationMode,
    min_approvals: row.minApprovals,
    require_manager: row.requireManager,
    allowed_roles: row.allowedRoles,
    memory_guard: row.memoryGuard,
  };
}
