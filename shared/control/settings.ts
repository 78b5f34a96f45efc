import type { DbOrTx } from '../platform/db';
import type { ApprovalMode, EvaluationMode } from './types';

/** A tenant's approval and evaluation settings (`GET/PUT /v1/control/settings`, DESIGN §5). */
export interface ControlSettings {
  approval_mode: ApprovalMode;
  evaluation_mode: EvaluationMode;
  min_approvals: number;
  require_manager: boolean;
  allowed_roles: string[];
}

export const DEFAULT_CONTROL_SETTINGS: ControlSettings = {
  approval_mode: 'solo',
  evaluation_mode: 'enforcement',
  min_approvals: 2,
  require_manager: false,
  allowed_roles: [],
};

/** PLACEHOLDER until the actions family stores settings: every tenant has the defaults. */
export async function readControlSettings(_db: DbOrTx, _tenantId: string): Promise<ControlSettings> {
  return DEFAULT_CONTROL_SETTINGS;
}
