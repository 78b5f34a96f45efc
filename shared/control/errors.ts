import { AppError, type ErrorDetail } from '../platform/contract/errors';

/** The control plane's errors; their statuses are in the one table (shared/platform/contract/errors.ts). */
export const invalidPolicy = (message: string, details: ErrorDetail[] = []) => new AppError('svc_ram.v1.control.invalid_policy', message, { details });

export const policyNotFound = (name: string, agentId: string | null) =>
  new AppError('svc_ram.v1.control.policy_not_found', agentId ? `No policy ${name} for agent ${agentId}` : `No policy ${name}`, {});

export const cannotDeleteBuiltin = (name: string) => new AppError('svc_ram.v1.control.cannot_delete_builtin', `${name} is built in and cannot be deleted`, {});

export const invalidDecision = (value: unknown) =>
  new AppError('control.invalid_decision', `decision must be approve or deny, not ${JSON.stringify(value)}`, {
    details: [{ path: 'decision', message: 'must be approve or deny' }],
    alias: 'svc_ram.v1.control.invalid_decision',
  });

export const approvalNotFound = (id: string) => new AppError('svc_ram.v1.control.approval_not_found', `No pending approval ${id}`, {});

export const approvalAlreadyDecided = (id: string, status: string) =>
  new AppError('svc_ram.v1.control.approval_already_decided', `Approval ${id} is already ${status}`, { approval_status: status });

export const invalidViolationsParam = (field: 'since' | 'until', message: string) =>
  new AppError('svc_ram.v1.control.invalid_violations_param', `${field}: ${message}`, { field, details: [{ path: field, message }] });

export const actionNotFound = (id: string) => new AppError('actions.not_found', `No audit trail for action ${id}`, {});
