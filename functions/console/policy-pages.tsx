/** @jsxImportSource hono/jsx */
import { AppError } from '../../shared/platform/contract/errors';
import { listPoliciesVerb, testPoliciesVerb } from '../policies/verbs';
import { type ConsoleContext, formOf } from './http';
import { messageOf, tenantOf, viewerOf } from './viewer';
import { type DryRunForm, PoliciesPage } from './views/policies';

async function render(c: ConsoleContext, form: DryRunForm, extra: { tested?: Awaited<ReturnType<typeof testPoliciesVerb>>; problem?: string }, status = 200) {
  const listed = await listPoliciesVerb(tenantOf(c), {});
  return c.html(<PoliciesPage viewer={viewerOf(c)} listed={listed} form={form} {...extra} />, status as 200);
}

export const policiesPage = (c: ConsoleContext) => render(c, { action: '', params: '', agent_id: '' }, {});

/** The params field as the JSON object the dry run takes, or the reason it is not one. */
export function paramsOf(text: string): Record<string, unknown> {
  if (!text.trim()) return {};
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw new AppError('VALIDATION_ERROR', 'params: is not valid JSON');
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) throw new AppError('VALIDATION_ERROR', 'params: must be a JSON object');
  return parsed as Record<string, unknown>;
}

/** `POST /v1/control/policies/test` with the form's action, params and agent: the decision, nothing stored. */
export async function policyDryRun(c: ConsoleContext) {
  const fields = await formOf(c);
  const form = { action: fields.action ?? '', params: fields.params ?? '', agent_id: fields.agent_id ?? '' };
  try {
    const input = { action: form.action, params: paramsOf(form.params), ...(form.agent_id.trim() ? { agent_id: form.agent_id } : {}) };
    return await render(c, form, { tested: await testPoliciesVerb(tenantOf(c), input) });
  } catch (err) {
    return render(c, form, { problem: messageOf(err) }, (err as AppError).status);
  }
}
